package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/tidwall/gjson"
)

// chunk is one streamed chat-completions chunk, holding only what Polly
// reads. openai-go's ChatCompletionChunk decodes through reflection with
// per-field metadata; this plain struct costs a fraction per chunk, and a
// chunk arrives every few tokens.
type chunk struct {
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chunkUsage   `json:"usage"`
}

type chunkChoice struct {
	Index        int64      `json:"index"`
	FinishReason string     `json:"finish_reason"`
	Delta        chunkDelta `json:"delta"`
}

// chunkDelta carries the reasoning extras of DeepSeek, vLLM and llama.cpp
// (reasoning_content) and OpenRouter (reasoning, reasoning_details) next
// to the standard fields.
type chunkDelta struct {
	Content          string            `json:"content"`
	ReasoningContent string            `json:"reasoning_content"`
	Reasoning        string            `json:"reasoning"`
	ReasoningDetails []reasoningDetail `json:"reasoning_details"`
	ToolCalls        []chunkToolCall   `json:"tool_calls"`
}

type reasoningDetail struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Summary string `json:"summary"`
}

type chunkToolCall struct {
	Index    *int64 `json:"index"` // nil: absent (some local servers)
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// maxSSELine bounds one line of the stream, as openai-go does (32 MiB): a
// whole tool call's arguments may come in a single chunk.
const maxSSELine = bufio.MaxScanTokenSize << 9

// sseReader reads chat-completions chunks from a text/event-stream body
// the way openai-go's decoder does: "data:" lines (with or without the
// space, CRLF or LF) joined until a blank line, comments and other fields
// ignored, [DONE] ends the stream, an event with an "error" member is a
// *streamEventError.
type sseReader struct {
	scn  *bufio.Scanner
	data []byte // the event being assembled, reused
	err  error
	done bool
}

func newSSEReader(body io.Reader) *sseReader {
	scn := bufio.NewScanner(body)
	scn.Buffer(make([]byte, 0, 4096), maxSSELine)
	return &sseReader{scn: scn}
}

// next decodes the next chunk into c (which it zeroes first). It returns
// false at the end of the stream or on an error (see err).
func (r *sseReader) next(c *chunk) bool {
	if r.done || r.err != nil {
		return false
	}
	data, ok := r.event()
	if !ok {
		return false
	}
	if bytes.HasPrefix(data, []byte("[DONE]")) {
		r.done = true
		return false
	}
	if errData, ok := errorMember(data); ok {
		r.err = &streamEventError{text: errData, data: bytes.Clone(data)}
		return false
	}
	*c = chunk{}
	if err := json.Unmarshal(data, c); err != nil {
		// A field of an unexpected type is skipped, as openai-go did: the
		// rest of the chunk is still good. Broken JSON is not.
		var typ *json.UnmarshalTypeError
		if !errors.As(err, &typ) {
			r.err = err
			return false
		}
	}
	return true
}

// event returns the data of the next event with at least one data line.
// A trailing event without its blank line is dropped, as openai-go does.
func (r *sseReader) event() ([]byte, bool) {
	r.data = r.data[:0]
	for r.scn.Scan() {
		line := r.scn.Bytes()
		if len(line) == 0 {
			if len(r.data) == 0 {
				continue
			}
			return r.data, true
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue // comments (": keep-alive"), event:, id:, retry:
		}
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
	}
	r.err = r.scn.Err()
	return nil, false
}

// errorMember reports whether the event has a top-level "error" member
// and returns its text. It asks gjson, as openai-go does, so that the
// same events count as errors (gjson also finds it in broken JSON).
func errorMember(data []byte) (string, bool) {
	ep := gjson.GetBytes(data, "error")
	return ep.String(), ep.Exists()
}

func (r *sseReader) Err() error { return r.err }

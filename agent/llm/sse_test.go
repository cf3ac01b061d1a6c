package llm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// cannedStream is a 200-chunk reply as OpenAI sends it: every metadata
// field on every chunk, text first, then a tool call in fragments, then a
// usage-only chunk and [DONE].
func cannedStream() []byte {
	var b bytes.Buffer
	head := `"id":"chatcmpl-Ab12Cd34","object":"chat.completion.chunk","created":1732600000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5f20662549"`
	for i := range 150 {
		fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", head, i)
	}
	fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n", head)
	for range 47 {
		fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"abc\\\"def\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n", head)
	}
	fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]}\n\n", head)
	fmt.Fprintf(&b, "data: {%s,\"choices\":[],\"usage\":{\"prompt_tokens\":39000,\"completion_tokens\":240,\"total_tokens\":39240,\"prompt_tokens_details\":{\"cached_tokens\":38912,\"audio_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n", head)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// readAll decodes a whole stream into an accumulator.
func readAll(body []byte) (*accumulator, int, error) {
	acc := newAccumulator()
	sse := newSSEReader(bytes.NewReader(body))
	n := 0
	var c chunk
	for sse.next(&c) {
		n++
		acc.add(&c)
	}
	return acc, n, sse.Err()
}

func TestSSEReaderCannedStream(t *testing.T) {
	acc, n, err := readAll(cannedStream())
	if err != nil || n != 200 {
		t.Fatalf("chunks = %d, err = %v", n, err)
	}
	msg := acc.message()
	if !strings.HasPrefix(msg.Content, "word0 word1 ") || !strings.HasSuffix(msg.Content, "word149 ") ||
		len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ID != "call_1" || msg.ToolCalls[0].Name != "write_file" ||
		msg.ToolCalls[0].Arguments != strings.Repeat(`abc"def`, 47) {
		t.Fatalf("message = %.80q…, calls %+v", msg.Content, msg.ToolCalls)
	}
	if acc.finish != "tool_calls" || acc.model != "gpt-4o-2024-08-06" ||
		acc.usage.PromptTokens != 39000 || acc.usage.CompletionTokens != 240 || acc.usage.CachedTokens != 38912 {
		t.Fatalf("finish %q model %q usage %+v", acc.finish, acc.model, acc.usage)
	}
}

// The wire tolerances openai-go's decoder had, which the client relies on.
func TestSSEReaderFraming(t *testing.T) {
	chunkHi := `{"choices":[{"index":0,"delta":{"content":"hi"}}]}`
	for _, tc := range []struct {
		name, body string
		want       string // accumulated text
		chunks     int
		err        string // substring of the error; "" none
	}{
		{"crlf", "data: " + chunkHi + "\r\n\r\ndata: [DONE]\r\n\r\n", "hi", 1, ""},
		{"no space after colon", "data:" + chunkHi + "\n\n", "hi", 1, ""},
		{"comments and other fields", ": keep-alive\n\nevent: ping\nid: 3\nretry: 10\ndata: " + chunkHi + "\n\n: PROCESSING\n\n", "hi", 1, ""},
		{"data split over lines", "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"hi\"}}]}\n\n", "hi", 1, ""},
		{"last event without blank line is dropped", "data: " + chunkHi + "\n\ndata: " + chunkHi, "hi", 1, ""},
		{"done ends the stream", "data: " + chunkHi + "\n\ndata: [DONE]\n\ndata: " + chunkHi + "\n\n", "hi", 1, ""},
		{"field of the wrong type is skipped", `data: {"model":7,"choices":[{"index":0,"delta":{"content":"hi","reasoning":{"x":1}}}]}` + "\n\n", "hi", 1, ""},
		{"broken json", "data: {not json\n\n", "", 0, "invalid character"},
		{"error object", "data: " + chunkHi + "\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\n", "hi", 1, `received error while streaming: {"message":"boom"}`},
		{"error string", "data: {\"error\":\"overloaded\"}\n\n", "", 0, "received error while streaming: overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc, n, err := readAll([]byte(tc.body))
			if got := acc.text.String(); got != tc.want || n != tc.chunks {
				t.Errorf("text %q in %d chunks, want %q in %d", got, n, tc.want, tc.chunks)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("err = %v, want %q", err, tc.err)
			}
			var se *streamEventError
			if strings.Contains(tc.err, "streaming") && !errors.As(err, &se) {
				t.Errorf("err %T is not a streamEventError", err)
			}
		})
	}
}

// A whole tool call's arguments may come in one line far beyond bufio's
// default 64 KiB.
func TestSSEReaderLongLine(t *testing.T) {
	args := strings.Repeat("x", 3<<20)
	body := `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"` + args + `"}}]},"finish_reason":"tool_calls"}]}` + "\n\n"
	acc, n, err := readAll([]byte(body))
	if err != nil || n != 1 || acc.message().ToolCalls[0].Arguments != args {
		t.Fatalf("chunks %d, err %v", n, err)
	}
}

// maxAllocsPerChunk guards the per-chunk garbage: the strings Polly keeps
// and the decoder's own (12 a chunk when measured); openai-go's chunk cost
// 60 (BenchmarkDecodeStream).
const maxAllocsPerChunk = 16

func TestSSEReaderAllocsPerChunk(t *testing.T) {
	body := cannedStream()
	allocs := testing.AllocsPerRun(20, func() {
		if _, n, err := readAll(body); err != nil || n != 200 {
			t.Fatalf("chunks %d, err %v", n, err)
		}
	})
	if per := allocs / 200; per > maxAllocsPerChunk {
		t.Fatalf("%.1f allocations per chunk, want ≤ %d", per, maxAllocsPerChunk)
	} else {
		t.Logf("%.1f allocations per chunk", per)
	}
}

// BenchmarkDecodeStream decodes the canned 200-chunk stream: lean is
// Polly's reader, sdk is openai-go's stream of ChatCompletionChunk it
// replaced (both feed the same accumulator work, sdk minus the adapter).
func BenchmarkDecodeStream(b *testing.B) {
	body := cannedStream()
	b.Run("lean", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, _, err := readAll(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body: io.NopCloser(bytes.NewReader(body))}
			s := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
			n := 0
			for s.Next() {
				_ = s.Current()
				n++
			}
			if s.Err() != nil || n != 200 {
				b.Fatal(n, s.Err())
			}
		}
	})
}

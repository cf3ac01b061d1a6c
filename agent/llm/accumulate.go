package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/openai/openai-go/v3"

	"polly/memory/chat"
)

// accumulator builds one reply from the SDK's streamed chunks
// (openai.ChatCompletionChunk). It is Polly's own, not openai-go's
// ChatCompletionAccumulator, because OpenAI-compatible servers differ from
// OpenAI in ways that accumulator rejects: the chunk id changes mid-stream (some routers),
// tool-call ids and indexes come only in a call's first chunk or not at
// all, several calls interleave, usage rides on a chunk with choices. What
// it never guesses at is a reply that did not finish: that stays an error
// (see Client.attempt).
type accumulator struct {
	model    string
	text     strings.Builder
	finish   string
	usage    chat.Usage
	choices  int // chunks that carried choice 0
	calls    []*callParts
	byIndex  map[int64]int // wire index → position in calls
	lastCall int           // position of the call the last fragment went to; -1 before any
}

type callParts struct {
	id   string
	name string
	args strings.Builder
}

func newAccumulator() *accumulator {
	return &accumulator{byIndex: map[int64]int{}, lastCall: -1}
}

// add takes one chunk and returns the text and reasoning it carried, for
// the observer.
func (a *accumulator) add(c *openai.ChatCompletionChunk) (text, reasoning string, toolCalls bool) {
	if a.model == "" {
		a.model = c.Model
	}
	if u := &c.Usage; u.PromptTokens != 0 || u.CompletionTokens != 0 {
		// Usage may come on the last chunk with choices or on a chunk of its
		// own; servers that repeat it send running totals, so the last wins.
		a.usage = chat.Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens),
			CachedTokens: int(u.PromptTokensDetails.CachedTokens)}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		a.choices++
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
		reasoning += reasoningOf(&ch.Delta)
		if ch.Delta.Content != "" {
			a.text.WriteString(ch.Delta.Content)
			text += ch.Delta.Content
		}
		for j := range ch.Delta.ToolCalls {
			a.addCall(&ch.Delta.ToolCalls[j])
			toolCalls = true
		}
	}
	return text, reasoning, toolCalls
}

// addCall files one tool-call fragment. A fragment belongs to the call
// with its index; without an index (some local servers), to the last call
// unless it brings a new id. A known index with a different id is a new
// call too: servers that number every call 0 exist.
func (a *accumulator) addCall(tc *openai.ChatCompletionChunkChoiceDeltaToolCall) {
	pos, ok := -1, false
	hasIndex := tc.JSON.Index.Valid()
	if hasIndex {
		pos, ok = a.byIndex[tc.Index]
	} else if a.lastCall >= 0 {
		pos, ok = a.lastCall, true
	}
	if ok && tc.ID != "" && a.calls[pos].id != "" && a.calls[pos].id != tc.ID {
		ok = false
	}
	if !ok {
		a.calls = append(a.calls, &callParts{})
		pos = len(a.calls) - 1
		if hasIndex {
			a.byIndex[tc.Index] = pos
		}
	}
	a.lastCall = pos
	call := a.calls[pos]
	if call.id == "" {
		call.id = tc.ID
	}
	// Names come whole in the first fragment; some servers repeat them.
	if n := tc.Function.Name; n != "" && n != call.name {
		call.name += n
	}
	call.args.WriteString(tc.Function.Arguments)
}

// message is the accumulated assistant message. Calls with neither name
// nor arguments are dropped; calls without an id get one, since the next
// request needs ids to pair results with calls.
func (a *accumulator) message() chat.Message {
	out := chat.Message{Role: chat.Assistant, Content: a.text.String()}
	for i, c := range a.calls {
		if c.name == "" && c.args.Len() == 0 {
			continue
		}
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d_%x", i, rand.Uint32())
		}
		out.ToolCalls = append(out.ToolCalls, chat.ToolCall{ID: id, Name: c.name, Arguments: c.args.String()})
	}
	return out
}

// reasoningOf returns the reasoning text of a delta, which the SDK's
// type keeps among its extra fields: DeepSeek, vLLM and llama.cpp send
// reasoning_content, OpenRouter sends reasoning and reasoning_details.
// Some providers send several with the same text: take one. A field of
// another shape is no reasoning.
func reasoningOf(d *openai.ChatCompletionChunkChoiceDelta) string {
	extra := d.JSON.ExtraFields
	if len(extra) == 0 {
		return ""
	}
	for _, k := range []string{"reasoning_content", "reasoning"} {
		var s string
		if f, ok := extra[k]; ok && lenient(json.Unmarshal([]byte(f.Raw()), &s)) && s != "" {
			return s
		}
	}
	f, ok := extra["reasoning_details"]
	if !ok {
		return ""
	}
	var details []struct {
		Text    string `json:"text"`
		Summary string `json:"summary"`
	}
	if !lenient(json.Unmarshal([]byte(f.Raw()), &details)) {
		return ""
	}
	var b strings.Builder
	for _, d := range details {
		switch {
		case d.Text != "":
			b.WriteString(d.Text)
		case d.Summary != "":
			b.WriteString(d.Summary)
		}
	}
	return b.String()
}

// lenient reports whether a decode succeeded, counting a value of the wrong
// type as success: the rest was decoded, as the SDK treats its own fields.
func lenient(err error) bool {
	var typ *json.UnmarshalTypeError
	return err == nil || errors.As(err, &typ)
}

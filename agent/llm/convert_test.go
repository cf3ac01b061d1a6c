package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"polly/agent/llmtest"
	"polly/memory/chat"
)

// params is the whole request as one openai.ChatCompletionNewParams, which
// the SDK encodes in one go: the reference the WireCache's joined body
// (encode.go) is checked against.
func (c *Client) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		Messages:      make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	for i, m := range req.Messages {
		u, err := messageParam(m)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, u)
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, toolParam(t))
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if c.maxCompletionTokens {
			p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			p.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	return p, nil
}

// messageParam is m as openai-go's request type: the reference
// encodeMessage is checked against.
func messageParam(m chat.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case chat.System:
		return openai.SystemMessage(m.Content), nil
	case chat.User:
		return openai.UserMessage(m.Content), nil
	case chat.Tool:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool message without tool_call_id")
		}
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case chat.Assistant:
		var a openai.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
}

// sdkBody is the body openai-go would send for req: its encoding of the
// params plus the "stream" key NewStreaming adds.
func sdkBody(t *testing.T, c *Client, req Request) map[string]any {
	t.Helper()
	p, err := c.params(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["stream"] = true
	return m
}

func decodeBody(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("encoded body is not JSON: %v\n%s", err, b)
	}
	return m
}

// wireSamples covers every kind of message and the awkward strings:
// escapes, control characters, HTML, invalid UTF-8, U+2028, empty content.
func wireSamples() []chat.Message {
	odd := "quote \" backslash \\ tab \t nl \n cr \r nul \x00 bell \x07 html <a href='x'>&amp;</a> bad utf8 \xff\xfe ls \u2028 ps \u2029 emoji 🦜 é"
	return []chat.Message{
		chat.SystemText("You are terse. " + odd),
		chat.UserText(odd),
		chat.UserText(""),
		chat.AssistantText(""),
		chat.AssistantText("plain reply " + odd),
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.go"}`}}},
		{Role: chat.Tool, ToolCallID: "call_1", ToolName: "read_file", Content: "1\tpackage a\n" + odd},
		{Role: chat.Assistant, Content: "two calls", ToolCalls: []chat.ToolCall{
			{ID: "call_2", Name: "grep", Arguments: `{"pattern":"x\"y"}`},
			{ID: "", Name: "bash", Arguments: ""},
		}},
		{Role: chat.Tool, ToolCallID: "call_2", Content: ""},
		{Role: chat.Tool, ToolCallID: "call_x", Content: "malformed args went out as they were", Output: &chat.Output{ExecID: 7, Stub: "stub"}, Tokens: 99, ID: 3, Kind: chat.KindNote},
		{Role: chat.User, Kind: chat.KindTaskBlock, Content: "[TASK — anchor #1 …]"},
	}
}

// TestEncodeMatchesSDK: the body Polly encodes itself means exactly what
// openai-go's encoding of the same request means, for every kind of
// message, tools with and without a schema, temperature and both spellings
// of max tokens.
func TestEncodeMatchesSDK(t *testing.T) {
	temp := 0.3
	tools := []ToolSpec{
		{Name: "read_file", Description: "Read a file <html> & more", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer", "minimum": 0.0}},
			"required": []any{"path"}, "additionalProperties": false}},
		{Name: "noargs"},
	}
	reqs := []Request{
		{Model: "m", Messages: wireSamples()},
		{Model: "gpt-4.1 \"odd\"", Messages: wireSamples()[:2], Tools: tools, Temperature: &temp, MaxTokens: 4096},
		{Model: "m", Messages: wireSamples()[4:7], Tools: tools[1:], MaxTokens: 1},
	}
	for _, maxCompletion := range []bool{false, true} {
		c := &Client{maxCompletionTokens: maxCompletion}
		for i, req := range reqs {
			got, enc, err := c.encode(req, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := chat.WireSum(req.Messages); enc.Sum != want {
				t.Errorf("request %d: wire sum %s, want %s", i, enc.Sum, want)
			}
			if want, have := sdkBody(t, c, req), decodeBody(t, got); !reflect.DeepEqual(want, have) {
				t.Errorf("request %d (max_completion_tokens %v): bodies differ\nSDK:  %v\nours: %v", i, maxCompletion, want, have)
			}
		}
	}
	// Bad messages are refused as the SDK path refused them.
	c := &Client{}
	for _, m := range []chat.Message{{Role: chat.Tool, Content: "x"}, {Role: "robot", Content: "x"}} {
		if _, _, err := c.encode(Request{Model: "m", Messages: []chat.Message{m}}, nil, nil); err == nil {
			t.Errorf("%+v: encoded, want an error", m)
		}
	}
}

// TestWireCacheReencodesChanges: with a cache, every body still means what
// the SDK would send for the request as it is now — after a message is
// edited in place, shrunk, dropped from the front (a summary), the history
// cleared, the tools replaced — while unchanged messages keep their
// encoded bytes.
func TestWireCacheReencodesChanges(t *testing.T) {
	c := &Client{}
	cache := NewWireCache()
	tools := []ToolSpec{{Name: "read_file", Parameters: map[string]any{"type": "object"}}}
	h := wireSamples()
	lastKept, lastSeq := -1, uint64(0)
	check := func(label string, req Request) []byte {
		t.Helper()
		got, enc, err := c.encode(req, cache, cache.takeBuffer())
		if err != nil {
			t.Fatal(err)
		}
		if want, have := sdkBody(t, c, req), decodeBody(t, got); !reflect.DeepEqual(want, have) {
			t.Fatalf("%s: body differs from the SDK's\nSDK:  %v\nours: %v", label, want, have)
		}
		// The sum resumed from the last request's is the sum of the
		// messages as they are now.
		if want := chat.WireSum(req.Messages); enc.Sum != want {
			t.Fatalf("%s: wire sum %s, want %s", label, enc.Sum, want)
		}
		if enc.Seq != lastSeq+1 {
			t.Fatalf("%s: request number %d on the cache after %d", label, enc.Seq, lastSeq)
		}
		lastKept, lastSeq = enc.Kept, enc.Seq
		// Byte for byte what an encoding without the cache gives: the
		// messages kept in place in the buffer must be exactly where a
		// new body would put them.
		if fresh, _, err := c.encode(req, nil, nil); err != nil || !bytes.Equal(fresh, got) {
			t.Fatalf("%s: cached body differs from a fresh encoding (%v)\nfresh:  %s\ncached: %s", label, err, fresh, got)
		}
		out := append([]byte(nil), got...)
		cache.giveBuffer(got)
		return out
	}
	kept := func(label string, want int) {
		t.Helper()
		if lastKept != want {
			t.Fatalf("%s: %d messages kept from the last request, want %d", label, lastKept, want)
		}
	}
	check("first", Request{Model: "m", Messages: h, Tools: tools})
	kept("first", 0)
	reused := cache.msgs[1].json

	// A new message at the end: the old ones keep their bytes.
	n := len(h)
	h = append(h, chat.UserText("next"))
	check("appended", Request{Model: "m", Messages: h, Tools: tools})
	kept("appended", n)
	if &cache.msgs[1].json[0] != &reused[0] {
		t.Error("an unchanged message was encoded again")
	}

	// Edited in place (same slice, same position), as a stale output
	// shrinks to its stub or a failure fades.
	h[6].Content = "[read_file a.go: 120 lines — stale, read_tool_output(id=7)]"
	if body := check("shrunk", Request{Model: "m", Messages: h, Tools: tools}); bytes.Contains(body, []byte("package a")) {
		t.Error("the shrunk output still went out whole")
	}
	kept("shrunk", 6)
	// A tool call's arguments changed in place.
	h[5].ToolCalls[0].Arguments = `{"path":"b.go"}`
	if body := check("args", Request{Model: "m", Messages: h, Tools: tools}); !bytes.Contains(body, []byte(`b.go`)) {
		t.Error("changed arguments did not go out")
	}
	kept("args", 5)
	// A summary replaces the front: everything shifts.
	summarised := append([]chat.Message{h[0], {Role: chat.User, Kind: chat.KindSummary, Content: "## Summary of the work"}}, h[7:]...)
	check("summarised", Request{Model: "m", Messages: summarised, Tools: tools})
	kept("summarised", 1)
	// /clear: only the system prompt and a new prompt.
	if body := check("cleared", Request{Model: "m", Messages: []chat.Message{h[0], chat.UserText("fresh start")}, Tools: tools}); bytes.Contains(body, []byte("Summary of the work")) {
		t.Error("the cleared history still went out")
	}
	// New tools (an MCP server came up): a new slice is encoded again.
	check("tools", Request{Model: "m", Messages: []chat.Message{h[0]}, Tools: append(slices.Clone(tools), ToolSpec{Name: "mcp__x"})})
	check("no tools", Request{Model: "m", Messages: []chat.Message{h[0]}})
}

// TestWireCacheKeepsThePrefixInPlace: a step's body is the last one with
// the new messages after the ones both share; those are not copied again.
// The proof is a byte changed in the returned buffer, inside the kept
// prefix, that survives the next encoding — which a buffer that is not
// the last body (a new one, or another's) never gets.
func TestWireCacheKeepsThePrefixInPlace(t *testing.T) {
	c := &Client{}
	cache := NewWireCache()
	h := wireSamples()
	body, _, err := c.encode(Request{Model: "m", Messages: h}, cache, cache.takeBuffer())
	if err != nil {
		t.Fatal(err)
	}
	mark := bytes.Index(body, []byte(`"role":"user"`)) + 2 // inside message 1, which the next request shares
	orig := body[mark]
	body[mark] = 'R'
	cache.giveBuffer(body)
	h = append(h, chat.UserText("next"))
	next, _, err := c.encode(Request{Model: "m", Messages: h}, cache, cache.takeBuffer())
	if err != nil {
		t.Fatal(err)
	}
	if next[mark] != 'R' {
		t.Fatal("the shared messages were copied into the buffer again")
	}
	next[mark] = orig
	if fresh, _, _ := c.encode(Request{Model: "m", Messages: h}, nil, nil); !bytes.Equal(fresh, next) {
		t.Fatalf("body with its prefix kept differs from a fresh one:\n%s\n%s", fresh, next)
	}
	// A buffer that is not the last body is written from the start.
	foreign := bytes.Repeat([]byte("x"), len(next))
	h = append(h, chat.UserText("and again"))
	got, _, err := c.encode(Request{Model: "m", Messages: h}, cache, foreign)
	if fresh, _, _ := c.encode(Request{Model: "m", Messages: h}, nil, nil); err != nil || !bytes.Equal(fresh, got) {
		t.Fatalf("a foreign buffer gave %s (%v)", got, err)
	}
}

// TestWireBodyOnTheWire: what the fake server receives is, field for
// field, what openai-go would have sent — first request, and again after
// a message changed with the cache in use.
func TestWireBodyOnTheWire(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("one"), llmtest.Text("two"))
	srv.Strict(false) // the samples pair calls and results loosely on purpose
	c := New(Config{BaseURL: srv.URL(), APIKey: "k", MaxRetries: -1})
	temp := 0.5
	req := Request{Model: "m", Messages: wireSamples(), Temperature: &temp, MaxTokens: 100, Cache: NewWireCache(),
		Tools: []ToolSpec{{Name: "read_file", Description: "Read", Parameters: map[string]any{"type": "object"}}}}
	for i := range 2 {
		if _, err := c.Stream(context.Background(), req, Observer{}); err != nil {
			t.Fatal(err)
		}
		if want, got := sdkBody(t, c, req), decodeBody(t, srv.Last().Raw); !reflect.DeepEqual(want, got) {
			t.Fatalf("request %d: the server received\n%v\nthe SDK would send\n%v", i, got, want)
		}
		req.Messages[1].Content = "changed before the second request"
	}
	if got := srv.Last().Messages[1].Content; got != "changed before the second request" {
		t.Errorf("second request carried %q", got)
	}
}

// encodes compares a tool call field by field: a field added to
// chat.ToolCall must be compared there too, or a change to it alone would
// go out as the old message.
func TestEncodesComparesEveryToolCallField(t *testing.T) {
	if n := reflect.TypeOf(chat.ToolCall{}).NumField(); n != 3 {
		t.Fatalf("chat.ToolCall has %d fields; encodedMessage.encodes compares ID, Name and Arguments", n)
	}
}

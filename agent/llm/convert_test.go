package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"polly/agent/llmtest"
	"polly/memory/chat"
)

// openai-go is a test-only dependency: the official SDK's types and client
// are the reference Polly's own encoder, stream reader, error parsing and
// the fake server are checked against. TestProductionBinaryHasNoSDK keeps
// it out of the binary.

// params is the request as openai-go's own types build it: the reference
// the wire encoder (encode.go) is checked against.
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
		// With tool calls and no text the content is omitted, as OpenAI
		// itself returns it; a bare empty reply still needs a content field.
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: tc.Arguments,
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
}

func toolParam(t ToolSpec) openai.ChatCompletionToolUnionParam {
	fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(t.Parameters)}
	if t.Parameters == nil {
		// Several servers reject a function without a parameters schema.
		fn.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	}
	if t.Description != "" {
		fn.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(fn)
}

// sdkBody is the body openai-go would send for req: its encoding of the
// params plus the "stream" key NewStreaming sets.
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
			got, err := c.encode(req, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want, have := sdkBody(t, c, req), decodeBody(t, got); !reflect.DeepEqual(want, have) {
				t.Errorf("request %d (max_completion_tokens %v): bodies differ\nSDK:  %v\nours: %v", i, maxCompletion, want, have)
			}
		}
	}
	// Bad messages are refused as the SDK path refused them.
	c := &Client{}
	for _, m := range []chat.Message{{Role: chat.Tool, Content: "x"}, {Role: "robot", Content: "x"}} {
		if _, err := c.encode(Request{Model: "m", Messages: []chat.Message{m}}, nil, nil); err == nil {
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
	check := func(label string, req Request) []byte {
		t.Helper()
		got, err := c.encode(req, cache, cache.takeBuffer())
		if err != nil {
			t.Fatal(err)
		}
		if want, have := sdkBody(t, c, req), decodeBody(t, got); !reflect.DeepEqual(want, have) {
			t.Fatalf("%s: body differs from the SDK's\nSDK:  %v\nours: %v", label, want, have)
		}
		out := append([]byte(nil), got...)
		cache.giveBuffer(got)
		return out
	}
	check("first", Request{Model: "m", Messages: h, Tools: tools})
	reused := cache.msgs[1].json

	// A new message at the end: the old ones keep their bytes.
	h = append(h, chat.UserText("next"))
	check("appended", Request{Model: "m", Messages: h, Tools: tools})
	if &cache.msgs[1].json[0] != &reused[0] {
		t.Error("an unchanged message was encoded again")
	}

	// Edited in place (same slice, same position), as a stale output
	// shrinks to its stub or a failure fades.
	h[6].Content = "[read_file a.go: 120 lines — stale, read_tool_output(id=7)]"
	if body := check("shrunk", Request{Model: "m", Messages: h, Tools: tools}); bytes.Contains(body, []byte("package a")) {
		t.Error("the shrunk output still went out whole")
	}
	// A tool call's arguments changed in place.
	h[5].ToolCalls[0].Arguments = `{"path":"b.go"}`
	if body := check("args", Request{Model: "m", Messages: h, Tools: tools}); !bytes.Contains(body, []byte(`b.go`)) {
		t.Error("changed arguments did not go out")
	}
	// A summary replaces the front: everything shifts.
	summarised := append([]chat.Message{h[0], {Role: chat.User, Kind: chat.KindSummary, Content: "## Summary of the work"}}, h[7:]...)
	check("summarised", Request{Model: "m", Messages: summarised, Tools: tools})
	// /clear: only the system prompt and a new prompt.
	if body := check("cleared", Request{Model: "m", Messages: []chat.Message{h[0], chat.UserText("fresh start")}, Tools: tools}); bytes.Contains(body, []byte("Summary of the work")) {
		t.Error("the cleared history still went out")
	}
	// New tools (an MCP server came up): a new slice is encoded again.
	check("tools", Request{Model: "m", Messages: []chat.Message{h[0]}, Tools: append(slices.Clone(tools), ToolSpec{Name: "mcp__x"})})
	check("no tools", Request{Model: "m", Messages: []chat.Message{h[0]}})
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

// TestSDKReadsWhatPollySends: the body the fake server received from
// Polly decodes into the SDK's ChatCompletionNewParams and encodes back to
// the same JSON, so every field Polly sends is one the SDK's request type
// knows, with the meaning Polly intended.
func TestSDKReadsWhatPollySends(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("ok"))
	srv.Strict(false)
	c := New(Config{BaseURL: srv.URL(), APIKey: "k", MaxRetries: -1})
	temp := 0.7
	req := Request{Model: "m", Messages: wireSamples(), Temperature: &temp, MaxTokens: 64,
		Tools: []ToolSpec{{Name: "read_file", Description: "Read", Parameters: map[string]any{"type": "object"}}, {Name: "noargs"}}}
	if _, err := c.Stream(context.Background(), req, Observer{}); err != nil {
		t.Fatal(err)
	}
	raw := srv.Last().Raw
	var p openai.ChatCompletionNewParams
	if err := p.UnmarshalJSON(raw); err != nil {
		t.Fatalf("the SDK cannot read Polly's body: %v\n%s", err, raw)
	}
	if p.Model != "m" || len(p.Messages) != len(req.Messages) || len(p.Tools) != 2 ||
		!p.StreamOptions.IncludeUsage.Value || p.Temperature.Value != 0.7 || p.MaxTokens.Value != 64 {
		t.Fatalf("decoded params: model %q, %d messages, %d tools, include_usage %v, temperature %v, max_tokens %v",
			p.Model, len(p.Messages), len(p.Tools), p.StreamOptions.IncludeUsage.Value, p.Temperature.Value, p.MaxTokens.Value)
	}
	for i, m := range p.Messages {
		if role := m.GetRole(); role == nil || *role != string(req.Messages[i].Role) {
			t.Errorf("message %d: SDK role %v, want %q", i, role, req.Messages[i].Role)
		}
	}
	if fn := p.Tools[0].GetFunction(); fn == nil || fn.Name != "read_file" || fn.Description.Value != "Read" {
		t.Errorf("tool 0 as the SDK reads it: %+v", fn)
	}
	again, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := decodeBody(t, raw)
	delete(want, "stream") // set per call by NewStreaming, not a params field
	if got := decodeBody(t, again); !reflect.DeepEqual(want, got) {
		t.Errorf("the SDK's re-encoding differs from what Polly sent:\nsent: %v\nSDK:  %v", want, got)
	}
}

// TestSDKClientAgainstFakeServer runs the official openai-go client and
// Polly's client against the same scripted replies: every SSE chunk the
// fake server sends decodes into openai.ChatCompletionChunk and feeds the
// SDK's accumulator, and both clients end with the same message, tool
// calls, finish reason and usage. The same holds for an error body: the
// SDK's *openai.Error and Polly's *Error agree on status, code, type and
// message.
func TestSDKClientAgainstFakeServer(t *testing.T) {
	reply := llmtest.Reply{
		Text:      "Reading both.",
		ChunkSize: 4,
		ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: `{"path":"go.mod"}`}, {Name: "bash", Args: `{"cmd":"ls \"a b\""}`}},
		Usage:     &llmtest.Usage{Prompt: 900, Completion: 12, Cached: 512},
	}
	req := Request{Model: "m", Messages: []chat.Message{chat.SystemText("sys"), chat.UserText("look")},
		Tools: []ToolSpec{{Name: "read_file"}, {Name: "bash"}}}

	sdkSrv := llmtest.NewServer(t, reply)
	sdk := openai.NewChatCompletionService(option.WithBaseURL(sdkSrv.URL()), option.WithAPIKey("k"), option.WithMaxRetries(0))
	params, err := (&Client{}).params(req)
	if err != nil {
		t.Fatal(err)
	}
	stream := sdk.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		ck := stream.Current()
		if ck.Object != "chat.completion.chunk" || !acc.AddChunk(ck) {
			t.Fatalf("chunk %d: object %q, or the SDK accumulator refused it: %s", chunks, ck.Object, ck.RawJSON())
		}
		chunks++
	}
	if err := stream.Err(); err != nil || chunks < 5 {
		t.Fatalf("SDK stream: %v after %d chunks", err, chunks)
	}
	stream.Close()

	ourSrv := llmtest.NewServer(t, reply)
	resp, err := New(Config{BaseURL: ourSrv.URL(), APIKey: "k", MaxRetries: -1}).Stream(context.Background(), req, Observer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("SDK accumulated %d choices", len(acc.Choices))
	}
	sdkMsg := acc.Choices[0].Message
	var sdkCalls []chat.ToolCall
	for _, tc := range sdkMsg.ToolCalls {
		sdkCalls = append(sdkCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	sdkUsage := chat.Usage{PromptTokens: int(acc.Usage.PromptTokens), CompletionTokens: int(acc.Usage.CompletionTokens),
		CachedTokens: int(acc.Usage.PromptTokensDetails.CachedTokens)}
	if sdkMsg.Content != resp.Message.Content || !reflect.DeepEqual(sdkCalls, resp.Message.ToolCalls) ||
		acc.Choices[0].FinishReason != resp.FinishReason || sdkUsage != resp.Usage || acc.Model != resp.Model {
		t.Errorf("SDK and Polly read the same stream differently:\nSDK:   %q %+v %q %+v %q\nPolly: %q %+v %q %+v %q",
			sdkMsg.Content, sdkCalls, acc.Choices[0].FinishReason, sdkUsage, acc.Model,
			resp.Message.Content, resp.Message.ToolCalls, resp.FinishReason, resp.Usage, resp.Model)
	}

	for _, fail := range []llmtest.Fail{
		{Status: 400, Code: "context_length_exceeded", Message: "This model's maximum context length is 128000 tokens."},
		{Status: 429, Message: "Rate limit reached for gpt-4o"},
		{Status: 401, Message: "Incorrect API key provided: sk-bad."},
		{Status: 404, Code: "model_not_found", Type: "invalid_request_error", Message: "The model `nope` does not exist"},
	} {
		sdkSrv.Push(fail)
		ourSrv.Push(fail)
		_, sdkErr := sdk.New(context.Background(), params)
		var want *openai.Error
		if !errors.As(sdkErr, &want) {
			t.Fatalf("SDK error %T %v", sdkErr, sdkErr)
		}
		_, err := New(Config{BaseURL: ourSrv.URL(), APIKey: "k", MaxRetries: -1}).Stream(context.Background(), req, Observer{})
		var got *Error
		if !errors.As(err, &got) || got.Status != want.StatusCode || got.Code != want.Code || got.Type != want.Type || got.Message != want.Message {
			t.Errorf("HTTP %d: Polly's error %+v, SDK's status %d code %q type %q message %q",
				fail.Status, got, want.StatusCode, want.Code, want.Type, want.Message)
		}
	}
}

// TestProductionBinaryHasNoSDK: openai-go is for the tests only; the
// binary speaks HTTP itself (transport.go). Linking the SDK again would
// add about 6 MB of code and milliseconds of init to every start.
func TestProductionBinaryHasNoSDK(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the binary's packages: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "polly").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps polly: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "polly/agent/llm") {
		t.Fatalf("go list -deps polly does not list polly/agent/llm: %s", out)
	}
	for _, d := range deps {
		if strings.Contains(d, "openai-go") {
			t.Errorf("the production binary links %s", d)
		}
	}
}

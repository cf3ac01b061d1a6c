package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Step is one scripted answer to one chat request: Reply (and its shorthands
// Text and Call), Fail, StreamError, Drop, Stall, MalformedSSE, Raw or Func.
type Step interface {
	serve(x *exchange)
}

// ToolCall is a function call, in a scripted reply or a decoded request.
type ToolCall struct {
	ID   string // "" in a Reply: the server assigns call_1, call_2, …
	Name string
	Args string // raw JSON text, sent as is (it may be malformed on purpose)
}

// Usage is the token accounting a reply reports.
type Usage struct {
	Prompt, Completion, Cached int
}

// DefaultChunkSize is how many characters of text (or tool arguments) each
// streamed chunk carries when Reply.ChunkSize is 0.
const DefaultChunkSize = 8

// Reply is a successful completion: text, tool calls or both. Streamed, the
// text arrives in ChunkSize pieces and each tool call as a first chunk with
// id and name followed by argument fragments, as OpenAI sends them.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	Reasoning string // streamed before the text under ReasoningField
	// ReasoningField is the delta key for Reasoning: "reasoning_content"
	// (default, DeepSeek/vLLM style) or "reasoning" (OpenRouter style).
	ReasoningField string
	// Usage is reported in a final chunk with no choices when the request
	// asked for include_usage (always in non-streamed replies). Nil: about
	// one token per four characters of the request and the reply.
	Usage        *Usage
	FinishReason string        // default "tool_calls" when there are tool calls, else "stop"
	ChunkSize    int           // characters per chunk; 0 means DefaultChunkSize
	Delay        time.Duration // pause after each content chunk
	// Gate, when set, holds the stream after its first content chunk until
	// the channel is closed, so a test can see deltas before the reply ends.
	Gate <-chan struct{}
}

// Text is a plain text reply.
func Text(s string) Reply { return Reply{Text: s} }

// Call is a reply holding one tool call with a server-assigned id.
func Call(name, args string) Reply {
	return Reply{ToolCalls: []ToolCall{{Name: name, Args: args}}}
}

// Fail answers with an HTTP error. Without Body the body is OpenAI's error
// JSON; Code defaults to rate_limit_exceeded for 429 and invalid_api_key for
// 401, Message to the status text.
type Fail struct {
	Status      int // default 500
	Code        string
	Message     string
	Type        string // default from the status, e.g. invalid_request_error
	RetryAfter  string // Retry-After header value, e.g. "1"
	Header      http.Header
	Body        string // raw body instead of JSON, e.g. a proxy's HTML page
	ContentType string // for Body; default sniffed
}

// StreamError streams AfterText, then an SSE error event, then ends the
// response without [DONE].
type StreamError struct {
	AfterText string
	Code      string
	Message   string
}

// Drop streams AfterText, then closes the TCP connection without finishing
// the response. With no AfterText it closes before sending any response.
type Drop struct {
	AfterText string
}

// Stall streams AfterText, then sends nothing for For (0: until the client
// goes away); if the client is still there it then finishes normally.
type Stall struct {
	AfterText string
	For       time.Duration
}

// MalformedSSE streams AfterText, then a data line that is not valid JSON.
type MalformedSSE struct {
	AfterText string
}

// Func computes the step from the request when it arrives.
type Func func(req Request) Step

// serve is never reached: Server.next resolves Func steps before serving.
func (f Func) serve(x *exchange) { f(x.req).serve(x) }

// Repeat returns n copies of f, to script n requests with one function.
func Repeat(n int, f Func) []Step {
	steps := make([]Step, n)
	for i := range steps {
		steps[i] = f
	}
	return steps
}

// exchange is one request being answered.
type exchange struct {
	srv *Server
	w   http.ResponseWriter
	r   *http.Request
	req Request
}

// wait pauses for d; false if the client left or the server is closing.
func (x *exchange) wait(d time.Duration) bool {
	if d <= 0 {
		return x.alive()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-x.r.Context().Done():
		return false
	case <-x.srv.done:
		return false
	}
}

// block waits until ch is closed; false if the client left first.
func (x *exchange) block(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-x.r.Context().Done():
		return false
	case <-x.srv.done:
		return false
	}
}

func (x *exchange) alive() bool {
	select {
	case <-x.r.Context().Done():
		return false
	case <-x.srv.done:
		return false
	default:
		return true
	}
}

func (x *exchange) model() string {
	if x.req.Model != "" {
		return x.req.Model
	}
	return "llmtest-model"
}

// sse writes one streamed completion.
type sse struct {
	x      *exchange
	rc     *http.ResponseController
	id     string
	model  string
	broken bool
}

func (x *exchange) startSSE() *sse {
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	s := &sse{x: x, rc: http.NewResponseController(x.w), id: x.srv.newReplyID(), model: x.model()}
	s.flush()
	return s
}

func (s *sse) flush() {
	if err := s.rc.Flush(); err != nil {
		s.broken = true
	}
}

// data writes one SSE event; false once the client is gone.
func (s *sse) data(payload []byte) bool {
	if s.broken {
		return false
	}
	buf := make([]byte, 0, len(payload)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, payload...)
	buf = append(buf, "\n\n"...)
	if _, err := s.x.w.Write(buf); err != nil {
		s.broken = true
		return false
	}
	s.flush()
	return !s.broken
}

type wireChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *wireUsage    `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	FinishReason *string        `json:"finish_reason"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func toWireUsage(u Usage) *wireUsage {
	w := &wireUsage{PromptTokens: u.Prompt, CompletionTokens: u.Completion, TotalTokens: u.Prompt + u.Completion}
	w.PromptTokensDetails.CachedTokens = u.Cached
	return w
}

const created = 1700000000

// delta sends a chunk with one choice.
func (s *sse) delta(d map[string]any, finish string) bool {
	c := chunkChoice{Delta: d}
	if finish != "" {
		c.FinishReason = &finish
	}
	return s.chunk(wireChunk{Choices: []chunkChoice{c}})
}

func (s *sse) chunk(c wireChunk) bool {
	c.ID, c.Object, c.Created, c.Model = s.id, "chat.completion.chunk", created, s.model
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("llmtest: encode chunk: %v", err)) // our own types: cannot happen
	}
	return s.data(b)
}

// prefix starts a stream and sends text in chunks; nil if the client left.
func (x *exchange) prefix(text string, size int) *sse {
	s := x.startSSE()
	if !s.delta(map[string]any{"role": "assistant", "content": ""}, "") {
		return nil
	}
	for _, part := range split(text, size) {
		if !s.delta(map[string]any{"content": part}, "") {
			return nil
		}
	}
	return s
}

// split cuts s into pieces of n runes (never splitting a character).
func split(s string, n int) []string {
	if n <= 0 {
		n = DefaultChunkSize
	}
	var out []string
	for len(s) > 0 {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func (rep Reply) serve(x *exchange) {
	calls := make([]ToolCall, len(rep.ToolCalls))
	for i, c := range rep.ToolCalls {
		if c.ID == "" {
			c.ID = x.srv.newCallID()
		}
		calls[i] = c
	}
	finish := rep.FinishReason
	if finish == "" {
		finish = "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := rep.usage(x.req, calls)
	field := rep.ReasoningField
	if field == "" {
		field = "reasoning_content"
	}
	if !x.req.Stream {
		rep.complete(x, calls, finish, field, usage)
		return
	}

	s := x.startSSE()
	gated := rep.Gate == nil
	// sent paces content chunks: the gate after the first, Delay after each.
	sent := func(ok bool) bool {
		if !ok {
			return false
		}
		if !gated {
			gated = true
			if !x.block(rep.Gate) {
				return false
			}
		}
		return x.wait(rep.Delay)
	}
	if !s.delta(map[string]any{"role": "assistant", "content": ""}, "") {
		return
	}
	for _, part := range split(rep.Reasoning, rep.ChunkSize) {
		if !sent(s.delta(map[string]any{field: part}, "")) {
			return
		}
	}
	for _, part := range split(rep.Text, rep.ChunkSize) {
		if !sent(s.delta(map[string]any{"content": part}, "")) {
			return
		}
	}
	for i, c := range calls {
		head := map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}
		if !sent(s.delta(map[string]any{"tool_calls": []any{head}}, "")) {
			return
		}
		for _, frag := range split(c.Args, rep.ChunkSize) {
			part := map[string]any{"index": i, "function": map[string]any{"arguments": frag}}
			if !sent(s.delta(map[string]any{"tool_calls": []any{part}}, "")) {
				return
			}
		}
	}
	s.finish(finish, usage)
}

// finish sends the finish chunk, the usage chunk if asked for, and [DONE].
func (s *sse) finish(reason string, u Usage) {
	if !s.delta(map[string]any{}, reason) {
		return
	}
	if s.x.req.IncludeUsage {
		if !s.chunk(wireChunk{Choices: []chunkChoice{}, Usage: toWireUsage(u)}) {
			return
		}
	}
	s.data([]byte("[DONE]"))
}

// complete writes a non-streamed chat.completion object.
func (rep Reply) complete(x *exchange, calls []ToolCall, finish, field string, u Usage) {
	msg := map[string]any{"role": "assistant", "content": nil}
	if rep.Text != "" || len(calls) == 0 {
		msg["content"] = rep.Text
	}
	if rep.Reasoning != "" {
		msg[field] = rep.Reasoning
	}
	if len(calls) > 0 {
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = tcs
	}
	writeJSON(x.w, http.StatusOK, map[string]any{
		"id": x.srv.newReplyID(), "object": "chat.completion", "created": created, "model": x.model(),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   toWireUsage(u),
	})
}

// usage is the scripted usage or an estimate of ~4 characters per token.
func (rep Reply) usage(req Request, calls []ToolCall) Usage {
	if rep.Usage != nil {
		return *rep.Usage
	}
	out := len(rep.Text) + len(rep.Reasoning)
	for _, c := range calls {
		out += len(c.Name) + len(c.Args)
	}
	return Usage{Prompt: req.PromptTokens(), Completion: max(1, out/4)}
}

func (f Fail) serve(x *exchange) {
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	h := x.w.Header()
	for k, vs := range f.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if f.RetryAfter != "" {
		h.Set("Retry-After", f.RetryAfter)
	}
	if h.Get("Content-Length") == "0" {
		// An empty error body, as declared. Writing the JSON error after
		// it would break the declared length, and net/http would close the
		// connection the client's retry may already be reusing (an EOF).
		x.w.WriteHeader(status)
		return
	}
	if f.Body != "" {
		ct := f.ContentType
		if ct == "" {
			ct = http.DetectContentType([]byte(f.Body))
		}
		h.Set("Content-Type", ct)
		x.w.WriteHeader(status)
		_, _ = x.w.Write([]byte(f.Body))
		return
	}
	typ, code, msg := f.Type, f.Code, f.Message
	if typ == "" {
		typ = defaultType(status)
	}
	if code == "" {
		switch status {
		case http.StatusTooManyRequests:
			code = "rate_limit_exceeded"
		case http.StatusUnauthorized:
			code = "invalid_api_key"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeError(x.w, status, typ, code, msg, nil)
}

func defaultType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusUnauthorized:
		return "invalid_request_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

func (e StreamError) serve(x *exchange) {
	s := x.prefix(e.AfterText, 0)
	if s == nil {
		return
	}
	msg := e.Message
	if msg == "" {
		msg = "llmtest: scripted stream error"
	}
	var code any
	if e.Code != "" {
		code = e.Code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "server_error", "code": code, "param": nil,
	}})
	s.data(b)
}

func (d Drop) serve(x *exchange) {
	if d.AfterText != "" && x.prefix(d.AfterText, 0) == nil {
		return
	}
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		panic(fmt.Sprintf("llmtest: Drop: hijack: %v", err)) // httptest serves HTTP/1.1, which can always hijack
	}
	_ = conn.Close()
}

func (st Stall) serve(x *exchange) {
	s := x.prefix(st.AfterText, 0)
	if s == nil {
		return
	}
	if st.For <= 0 {
		x.block(nil) // a nil channel never fires: wait for the client or the server to go
		return
	}
	if !x.wait(st.For) {
		return
	}
	s.finish("stop", Reply{Text: st.AfterText}.usage(x.req, nil))
}

func (m MalformedSSE) serve(x *exchange) {
	s := x.prefix(m.AfterText, 0)
	if s == nil {
		return
	}
	s.data([]byte(`{"id":"` + s.id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tru`))
}

// Raw answers with Body exactly as written, as a 200 text/event-stream
// response flushed one SSE event (blank-line separated) at a time. It is
// how a test replays a recorded stream from a real server, quirks and all.
// The scripted tool-call ids and usage of Reply do not apply: what the
// body says is what the client gets.
type Raw struct {
	Body        string
	ContentType string // default "text/event-stream"
}

func (raw Raw) serve(x *exchange) {
	ct := raw.ContentType
	if ct == "" {
		ct = "text/event-stream"
	}
	x.w.Header().Set("Content-Type", ct)
	x.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(x.w)
	rest := raw.Body
	for rest != "" {
		end := strings.Index(rest, "\n\n")
		if end < 0 {
			end = len(rest)
		} else {
			end += 2
		}
		if _, err := x.w.Write([]byte(rest[:end])); err != nil || rc.Flush() != nil || !x.alive() {
			return
		}
		rest = rest[end:]
	}
}

package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"polly/memory/window"
)

// Server is a scripted OpenAI-compatible endpoint. It is safe for concurrent
// use; requests are answered in arrival order.
type Server struct {
	t    testing.TB
	hs   *httptest.Server
	done chan struct{} // closed at cleanup so blocked steps return

	mu        sync.Mutex
	steps     []Step
	reqs      []Request
	calls     int  // chat requests received (reqs holds them all unless lastOnly)
	lastOnly  bool // keep only the last request (KeepLastOnly)
	strict    bool
	models    []string
	modelsRaw *Fail // a raw answer to GET /v1/models instead of the list
	modelsGot int   // GET /v1/models requests received
	nextCall  int   // tool-call ids handed out so far
	nextReply int   // completion ids handed out so far
	exhausted bool
	fallback  Func // answers every request once the script is used up (Serve)
	ctxLimit  int  // prompt tokens a request may hold; 0: no limit (SetContextLimit)
}

// NewServer starts a server that answers with steps, in order. It is closed
// when the test ends.
func NewServer(t testing.TB, steps ...Step) *Server {
	t.Helper()
	s := newServer(t, steps)
	s.hs = httptest.NewServer(s.routes())
	t.Cleanup(s.shutdown)
	t.Cleanup(s.checkUnused)
	return s
}

// checkUnused fails the test that scripted steps the code never asked for:
// a leftover step means fewer requests were made than the test claims.
func (s *Server) checkUnused() {
	s.t.Helper()
	if n := s.Pending(); n > 0 {
		s.t.Errorf("llmtest: %d scripted step(s) left unused: the code under test made %d request(s), fewer than the test scripted", n, s.Calls())
	}
}

// Serve answers every request that arrives once the scripted steps are
// used up with f, for runs whose length the code decides (a long task, a
// loop until a condition). The test then asserts on what was received;
// scripted steps still come first and must all be used.
func (s *Server) Serve(f Func) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = f
}

// newServer is the state shared by NewServer and Start.
func newServer(t testing.TB, steps []Step) *Server {
	return &Server{
		t:      t,
		done:   make(chan struct{}),
		steps:  append([]Step(nil), steps...),
		strict: true,
		models: []string{"llmtest-model"},
	}
}

// routes are the endpoints the server answers.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("llmtest: no route for %s %s", r.Method, r.URL.Path), nil)
	})
	return mux
}

func (s *Server) shutdown() {
	close(s.done)
	s.hs.CloseClientConnections()
	s.hs.Close()
}

// URL is the base URL to give a client, ending in /v1.
func (s *Server) URL() string { return s.hs.URL + "/v1" }

// Push appends steps to the script.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

// Pending is the number of scripted steps not consumed yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps)
}

// Strict turns conversation validation on (the default) or off.
func (s *Server) Strict(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strict = on
}

// SetModels sets the ids /v1/models lists (default: "llmtest-model").
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string(nil), ids...)
}

// SetContextLimit makes the server refuse, as OpenAI does, a request whose
// prompt holds more than tokens tokens (Request.PromptTokens): HTTP 400
// context_length_exceeded, "This model's maximum context length is N
// tokens…". A refused request consumes no step. 0 lifts the limit.
func (s *Server) SetContextLimit(tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctxLimit = tokens
}

// KeepLastOnly makes the server keep only the last request it received
// (Requests and Last give it; Calls still counts them all): a benchmark's
// server that answers thousands of 160 KB requests would otherwise hold
// them all, and its garbage collector would compete with the process
// measured.
func (s *Server) KeepLastOnly() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastOnly = true
}

// Requests returns every chat request received so far, oldest first,
// including ones the server rejected (only the last after KeepLastOnly).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Calls is the number of chat requests received so far.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Last returns the most recent chat request; the test fails if there is none.
func (s *Server) Last() Request {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		s.t.Fatalf("llmtest: no chat request received")
	}
	return s.reqs[len(s.reqs)-1]
}

// SetModelsResponse makes GET /v1/models answer with status and body as
// given (contentType "" sniffs it): a vLLM list with max_model_len, an
// OpenRouter one with context_length, or an HTML error page.
func (s *Server) SetModelsResponse(status int, contentType, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsRaw = &Fail{Status: status, Body: body, ContentType: contentType}
}

// ModelListRequests is the number of GET /v1/models requests received.
func (s *Server) ModelListRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modelsGot
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ids := append([]string(nil), s.models...)
	raw := s.modelsRaw
	s.modelsGot++
	s.mu.Unlock()
	if raw != nil {
		raw.serve(&exchange{srv: s, w: w, r: r})
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range ids {
		list.Data = append(list.Data, model{ID: id, Object: "model", Created: 1700000000, OwnedBy: "llmtest"})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "llmtest: read body: "+err.Error(), nil)
		return
	}
	req, decodeErr := decodeRequest(raw)
	req.Header = r.Header.Clone()
	req.Conn = r.RemoteAddr

	s.mu.Lock()
	if s.lastOnly {
		clear(s.reqs)
		s.reqs = s.reqs[:0]
	}
	s.reqs = append(s.reqs, req)
	s.calls++
	n := s.calls
	strict := s.strict
	limit := s.ctxLimit
	s.mu.Unlock()

	if decodeErr != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "llmtest: "+decodeErr.Error(), nil)
		return
	}
	if strict {
		if msg := validate(raw, req); msg != "" {
			// A rejected request consumes no step, as with a real provider.
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", msg, "messages")
			return
		}
	}

	if got := req.PromptTokens(); limit > 0 && got > limit {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
			fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, got), "messages")
		return
	}
	step, ok := s.next(req)
	if !ok {
		s.mu.Lock()
		first := !s.exhausted
		s.exhausted = true
		s.mu.Unlock()
		msg := fmt.Sprintf("llmtest: script exhausted: request #%d arrived but the test scripted no more steps", n)
		if first {
			s.t.Errorf("%s (last message: %q)", msg, truncate(req.LastMessage().Content, 80))
		}
		writeError(w, http.StatusInternalServerError, "server_error", "llmtest_script_exhausted", msg, nil)
		return
	}
	step.serve(&exchange{srv: s, w: w, r: r, req: req})
}

// next pops the next step, resolving Func steps against req.
func (s *Server) next(req Request) (Step, bool) {
	s.mu.Lock()
	var step Step
	switch {
	case len(s.steps) > 0:
		step = s.steps[0]
		s.steps = s.steps[1:]
	case s.fallback != nil:
		step = s.fallback
	default:
		s.mu.Unlock()
		return nil, false
	}
	s.mu.Unlock()
	// Func runs unlocked so it may call Push or Requests.
	for {
		f, ok := step.(Func)
		if !ok {
			return step, true
		}
		step = f(req)
		if step == nil {
			step = Fail{Status: http.StatusInternalServerError, Message: "llmtest: Func returned a nil Step"}
		}
	}
}

func (s *Server) newCallID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextCall++
	return fmt.Sprintf("call_%d", s.nextCall)
}

func (s *Server) newReplyID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextReply++
	return fmt.Sprintf("chatcmpl-llmtest-%d", s.nextReply)
}

// Request is one chat-completions request as the server decoded it.
type Request struct {
	Model        string
	Messages     []Message
	Tools        []string // function names, in request order
	Temperature  *float64
	MaxTokens    int // max_tokens or max_completion_tokens, 0 when absent
	Stream       bool
	IncludeUsage bool        // stream_options.include_usage
	Header       http.Header // request headers (Authorization, extra headers)
	Raw          []byte      // the body exactly as received
	Conn         string      // the client's address: one per TCP connection
	toolChars    int         // length of the tools array as sent
}

// PromptTokens is the size of the request's prompt as this server counts
// it (usage and SetContextLimit): about one token per four characters of
// the messages and the tool schemas.
func (r Request) PromptTokens() int {
	in := r.toolChars
	for _, m := range r.Messages {
		in += len(m.Role) + len(m.Content) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			in += len(c.ID) + len(c.Name) + len(c.Args)
		}
	}
	return max(1, in/4)
}

// Message is one decoded conversation entry. Content parts are joined.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// LastTurn returns the final message before Polly's live task block (the
// block the harness appends to every request once a task made a tool
// call): the newest tool result or user message.
func (r Request) LastTurn() Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if !IsTaskBlock(r.Messages[i]) {
			return r.Messages[i]
		}
	}
	return Message{}
}

// TaskBlocks returns the task blocks a request carries.
func (r Request) TaskBlocks() []Message {
	var out []Message
	for _, m := range r.Messages {
		if IsTaskBlock(m) {
			out = append(out, m)
		}
	}
	return out
}

// IsTaskBlock reports whether m is Polly's live task block.
func IsTaskBlock(m Message) bool {
	return m.Role == "user" && strings.HasPrefix(m.Content, window.BlockHeader)
}

// LastMessage returns the final message of the conversation, or a zero
// Message when there is none.
func (r Request) LastMessage() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

type wireRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	Temperature         *float64        `json:"temperature"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

func decodeRequest(raw []byte) (Request, error) {
	req := Request{Raw: raw}
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		return req, fmt.Errorf("request body is not valid JSON: %w", err)
	}
	req.Model = w.Model
	req.Temperature = w.Temperature
	req.MaxTokens = max(w.MaxTokens, w.MaxCompletionTokens)
	req.Stream = w.Stream
	req.IncludeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	if len(w.Tools) > 0 && string(w.Tools) != "null" {
		var tools []wireTool
		if err := json.Unmarshal(w.Tools, &tools); err != nil {
			return req, fmt.Errorf("tools: %w", err)
		}
		for _, t := range tools {
			req.Tools = append(req.Tools, t.Function.Name)
		}
		req.toolChars = len(w.Tools)
	}
	for i, m := range w.Messages {
		content, err := decodeContent(m.Content)
		if err != nil {
			return req, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		msg := Message{Role: m.Role, Content: content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

// decodeContent accepts a string, null, or an array of content parts.
func decodeContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("want a string or an array of parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "llmtest: encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError writes an OpenAI-shaped error body. param is nil or a string.
func writeError(w http.ResponseWriter, status int, typ, code, msg string, param any) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "code": c, "param": param,
	}})
}

// truncate shortens s to about n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/memory/chat"
)

// newClient points a client at srv with test-sized backoffs and timeouts.
func newClient(t testing.TB, baseURL string, tweak ...func(*llm.Config)) *llm.Client {
	t.Helper()
	cfg := llm.Config{
		BaseURL:        baseURL,
		APIKey:         "test-key",
		InitialBackoff: time.Millisecond,
		MaxBackoff:     5 * time.Millisecond,
		IdleTimeout:    5 * time.Second,
		CallTimeout:    10 * time.Second,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	return llm.New(cfg)
}

func ask(s string) llm.Request {
	return llm.Request{Model: "test-model", Messages: []chat.Message{chat.SystemText("You are terse."), chat.UserText(s)}}
}

// recorder collects what an Observer sees.
type recorder struct {
	mu      sync.Mutex
	deltas  []llm.Delta
	retries []llm.Retry
	first   chan struct{} // closed on the first delta
	once    sync.Once
}

func newRecorder() *recorder { return &recorder{first: make(chan struct{})} }

func (r *recorder) obs() llm.Observer {
	return llm.Observer{
		OnDelta: func(d llm.Delta) {
			r.mu.Lock()
			r.deltas = append(r.deltas, d)
			r.mu.Unlock()
			r.once.Do(func() { close(r.first) })
		},
		OnRetry: func(rt llm.Retry) {
			r.mu.Lock()
			r.retries = append(r.retries, rt)
			r.mu.Unlock()
		},
	}
}

func (r *recorder) text() (text, reasoning string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t, rs strings.Builder
	for _, d := range r.deltas {
		t.WriteString(d.Text)
		rs.WriteString(d.Reasoning)
	}
	return t.String(), rs.String(), len(r.deltas)
}

func (r *recorder) retryLog() []llm.Retry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]llm.Retry(nil), r.retries...)
}

// asError fails the test unless err is an *llm.Error of kind want.
func asError(t *testing.T, err error, want llm.Kind) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *llm.Error of kind %v", err, err, want)
	}
	if e.Kind != want {
		t.Fatalf("kind = %v, want %v (error: %v)", e.Kind, want, e)
	}
	return e
}

func TestStreamDeltasArriveBeforeTheEnd(t *testing.T) {
	gate := make(chan struct{})
	const text = "Hello, streaming world! This arrives in pieces."
	srv := llmtest.NewServer(t, llmtest.Reply{Text: text, Gate: gate})
	c := newClient(t, srv.URL())
	rec := newRecorder()

	type result struct {
		resp llm.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Stream(context.Background(), ask("hi"), rec.obs())
		done <- result{resp, err}
	}()

	select {
	case <-rec.first:
	case <-time.After(5 * time.Second):
		t.Fatal("no delta arrived while the server held the stream open")
	}
	select {
	case r := <-done:
		t.Fatalf("Stream returned before the reply finished: %+v", r)
	default:
	}
	if got, _, _ := rec.text(); got == "" || !strings.HasPrefix(text, got) {
		t.Fatalf("first delta text = %q, want a prefix of %q", got, text)
	}
	close(gate)

	r := <-done
	if r.err != nil {
		t.Fatalf("Stream: %v", r.err)
	}
	got, _, n := rec.text()
	if got != text || r.resp.Message.Content != text {
		t.Errorf("deltas %q / content %q, want %q", got, r.resp.Message.Content, text)
	}
	if n < 2 {
		t.Errorf("got %d deltas, want the text in several chunks", n)
	}
	if r.resp.Message.Role != chat.Assistant || r.resp.FinishReason != "stop" || r.resp.Attempts != 1 || r.resp.Model != "test-model" {
		t.Errorf("response = %+v", r.resp)
	}

	req := srv.Last()
	if !req.Stream || !req.IncludeUsage {
		t.Errorf("stream=%v include_usage=%v, want both true", req.Stream, req.IncludeUsage)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestRequestWireFormat(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("ok"))
	c := newClient(t, srv.URL(), func(cfg *llm.Config) {
		cfg.Headers = map[string]string{"HTTP-Referer": "https://polly.example", "X-Title": "Polly"}
	})
	call := chat.ToolCall{ID: "call_a", Name: "read_file", Arguments: `{"path":"go.mod"}`}
	temp := 0.2
	req := llm.Request{
		Model: "m1",
		Messages: []chat.Message{
			{Role: chat.System, Content: "sys", Kind: chat.KindAnchor, ID: 7, Tokens: 3},
			chat.UserText("read go.mod"),
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{call}},
			{Role: chat.Tool, ToolCallID: "call_a", ToolName: "read_file", Content: "module x",
				Output: &chat.Output{ExecID: 1, Chars: 8, Offloaded: true}},
			chat.AssistantText("done"),
			chat.UserText("thanks"),
		},
		Tools: []llm.ToolSpec{
			{Name: "read_file", Description: "Read a file", Parameters: map[string]any{"type": "object"}},
			{Name: "bash"},
		},
		Temperature: &temp,
		MaxTokens:   100,
	}
	if _, err := c.Stream(context.Background(), req, llm.Observer{}); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	got := srv.Last()
	want := []llmtest.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "read go.mod"},
		{Role: "assistant", ToolCalls: []llmtest.ToolCall{{ID: "call_a", Name: "read_file", Args: `{"path":"go.mod"}`}}},
		{Role: "tool", Content: "module x", ToolCallID: "call_a"},
		{Role: "assistant", Content: "done"},
		{Role: "user", Content: "thanks"},
	}
	if g, w := jsonOf(got.Messages), jsonOf(want); g != w {
		t.Errorf("messages on the wire:\n got %s\nwant %s", g, w)
	}
	if strings.Join(got.Tools, ",") != "read_file,bash" {
		t.Errorf("tools = %v", got.Tools)
	}
	if got.Temperature == nil || *got.Temperature != 0.2 || got.MaxTokens != 100 || got.Model != "m1" {
		t.Errorf("temperature=%v max_tokens=%d model=%q", got.Temperature, got.MaxTokens, got.Model)
	}
	if got.Header.Get("X-Title") != "Polly" || got.Header.Get("HTTP-Referer") != "https://polly.example" {
		t.Errorf("extra headers missing: %v", got.Header)
	}
	// The assistant tool-call message carries no content; nothing of the
	// harness (ids, kinds, token counts, tool names) reaches the wire.
	var raw struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(got.Raw, &raw); err != nil {
		t.Fatal(err)
	}
	if c, ok := raw.Messages[2]["content"]; ok && string(c) != "null" {
		t.Errorf("assistant tool-call message content = %s, want omitted or null", c)
	}
	for _, leak := range []string{`"kind"`, `"tokens"`, `"tool_name"`, `"exec_id"`, `"offloaded"`} {
		if strings.Contains(string(got.Raw), leak) {
			t.Errorf("request body carries harness field %s: %s", leak, got.Raw)
		}
	}

	// Unset temperature and max tokens stay off the wire.
	srv.Push(llmtest.Text("ok"))
	if _, err := c.Stream(context.Background(), ask("x"), llm.Observer{}); err != nil {
		t.Fatal(err)
	}
	if body := string(srv.Last().Raw); strings.Contains(body, "temperature") || strings.Contains(body, "max_tokens") {
		t.Errorf("unset options sent: %s", body)
	}

	// A message the wire format cannot express fails before any request.
	bad := llm.Request{Model: "m", Messages: []chat.Message{{Role: "narrator", Content: "x"}}}
	_, err := c.Stream(context.Background(), bad, llm.Observer{})
	if e := asError(t, err, llm.KindBadRequest); !strings.Contains(e.Message, `unknown role "narrator"`) || srv.Calls() != 2 {
		t.Errorf("error = %v, calls = %d", e, srv.Calls())
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestToolCallsArriveWhole(t *testing.T) {
	malformed := `{"path": "a.go", "content": "unterminated`
	srv := llmtest.NewServer(t,
		llmtest.Reply{
			Text:      "Let me look.",
			ChunkSize: 3, // many argument fragments per call
			ToolCalls: []llmtest.ToolCall{
				{Name: "read_file", Args: `{"path":"go.mod"}`},
				{Name: "bash", Args: `{"cmd":"ls -la /tmp && echo \"done\""}`},
			},
		},
		llmtest.Call("write_file", malformed),
	)
	c := newClient(t, srv.URL())

	resp, err := c.Stream(context.Background(), ask("look"), llm.Observer{})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := []chat.ToolCall{
		{ID: "call_1", Name: "read_file", Arguments: `{"path":"go.mod"}`},
		{ID: "call_2", Name: "bash", Arguments: `{"cmd":"ls -la /tmp && echo \"done\""}`},
	}
	if g, w := jsonOf(resp.Message.ToolCalls), jsonOf(want); g != w {
		t.Errorf("tool calls:\n got %s\nwant %s", g, w)
	}
	if resp.Message.Content != "Let me look." || resp.FinishReason != "tool_calls" {
		t.Errorf("content %q finish %q", resp.Message.Content, resp.FinishReason)
	}

	resp, err = c.Stream(context.Background(), ask("write"), llm.Observer{})
	if err != nil {
		t.Fatalf("Stream (malformed args): %v", err)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Arguments != malformed {
		t.Errorf("malformed arguments not passed through: %+v", resp.Message.ToolCalls)
	}
}

func TestRetryRateLimitHonoursRetryAfter(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Fail{Status: 429, RetryAfter: "1", Message: "Rate limit reached for requests"}, llmtest.Text("ok"))
	c := newClient(t, srv.URL())
	rec := newRecorder()

	start := time.Now()
	resp, err := c.Stream(context.Background(), ask("hi"), rec.obs())
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Attempts != 2 || srv.Calls() != 2 || resp.Message.Content != "ok" {
		t.Errorf("attempts=%d calls=%d content=%q", resp.Attempts, srv.Calls(), resp.Message.Content)
	}
	retries := rec.retryLog()
	if len(retries) != 1 {
		t.Fatalf("OnRetry called %d times, want 1", len(retries))
	}
	r := retries[0]
	if r.Attempt != 1 || r.Wait != time.Second || r.Err.Kind != llm.KindRateLimit || r.Err.RetryAfter != time.Second {
		t.Errorf("retry = %+v (err %v)", r, r.Err)
	}
	if elapsed < 900*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("call took %v, want about the 1s Retry-After", elapsed)
	}
}

func TestRetryServerErrors(t *testing.T) {
	t.Run("500 and 408 then success", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Fail{Status: 500}, llmtest.Fail{Status: 408}, llmtest.Text("ok"))
		rec := newRecorder()
		resp, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), rec.obs())
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if resp.Attempts != 3 || srv.Calls() != 3 {
			t.Errorf("attempts=%d calls=%d, want 3", resp.Attempts, srv.Calls())
		}
		for i, r := range rec.retryLog() {
			if r.Attempt != i+1 || r.Err.Kind != llm.KindServer || r.Wait < 0 || r.Wait > 5*time.Millisecond {
				t.Errorf("retry %d = %+v, want a server error and a jittered wait ≤ MaxBackoff", i, r)
			}
		}
	})
	t.Run("Retry-After-Ms", func(t *testing.T) {
		srv := llmtest.NewServer(t,
			llmtest.Fail{Status: 503, Header: map[string][]string{"Retry-After-Ms": {"50"}}},
			llmtest.Text("ok"))
		rec := newRecorder()
		if _, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), rec.obs()); err != nil {
			t.Fatal(err)
		}
		if r := rec.retryLog(); len(r) != 1 || r[0].Wait != 50*time.Millisecond {
			t.Errorf("retries = %+v, want one 50ms wait", r)
		}
	})
	t.Run("gives up after MaxRetries", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Fail{Status: 502}, llmtest.Fail{Status: 502}, llmtest.Fail{Status: 502})
		resp, err := newClient(t, srv.URL(), func(c *llm.Config) { c.MaxRetries = 2 }).
			Stream(context.Background(), ask("hi"), llm.Observer{})
		e := asError(t, err, llm.KindServer)
		if e.Status != 502 || resp.Attempts != 3 || srv.Calls() != 3 {
			t.Errorf("status=%d attempts=%d calls=%d", e.Status, resp.Attempts, srv.Calls())
		}
	})
	t.Run("connection closed before a response", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Drop{}, llmtest.Text("ok"))
		resp, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), llm.Observer{})
		if err != nil || resp.Attempts != 2 {
			t.Fatalf("attempts=%d err=%v, want a retried network error", resp.Attempts, err)
		}
	})
}

func TestContextLengthIsNotRetried(t *testing.T) {
	cases := []struct {
		name string
		fail llmtest.Fail
		want llm.Kind
	}{
		{"openai code", llmtest.Fail{Status: 400, Code: "context_length_exceeded",
			Message: "This model's maximum context length is 128000 tokens."}, llm.KindContextLength},
		{"other provider phrasing", llmtest.Fail{Status: 400,
			Message: "This model's maximum context length is 8192 tokens. However, you requested 9001 tokens."}, llm.KindContextLength},
		{"anthropic style 413", llmtest.Fail{Status: 413, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, llm.KindContextLength},
		{"plain bad request", llmtest.Fail{Status: 400, Message: "Invalid value for 'temperature'"}, llm.KindBadRequest},
		{"not found", llmtest.Fail{Status: 404, Code: "model_not_found", Message: "The model `nope` does not exist"}, llm.KindBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, tc.fail)
			resp, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), llm.Observer{})
			e := asError(t, err, tc.want)
			if srv.Calls() != 1 || resp.Attempts != 1 {
				t.Errorf("calls=%d attempts=%d, want no retry", srv.Calls(), resp.Attempts)
			}
			if e.Status != tc.fail.Status || e.Message != tc.fail.Message || e.Code != tc.fail.Code {
				t.Errorf("error = %+v, want status, code and the provider's message", e)
			}
		})
	}
}

func TestAuthIsNotRetried(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Fail{Status: 401, Message: "Incorrect API key provided: sk-bad."})
	_, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), llm.Observer{})
	e := asError(t, err, llm.KindAuth)
	if srv.Calls() != 1 || e.Code != "invalid_api_key" || !strings.Contains(e.Error(), "Incorrect API key") {
		t.Errorf("calls=%d error=%v", srv.Calls(), e)
	}
}

func TestStreamBreaks(t *testing.T) {
	t.Run("drop mid-stream keeps the partial text", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Drop{AfterText: "The answer is"})
		resp, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), llm.Observer{})
		e := asError(t, err, llm.KindStream)
		if e.Partial != "The answer is" || srv.Calls() != 1 || resp.Message.Content != "" {
			t.Errorf("partial=%q calls=%d content=%q, want the partial only in the error, no retry", e.Partial, srv.Calls(), resp.Message.Content)
		}
	})
	t.Run("error event", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.StreamError{AfterText: "abc", Code: "server_error", Message: "upstream overloaded"})
		_, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), llm.Observer{})
		e := asError(t, err, llm.KindStream)
		if e.Message != "upstream overloaded" || e.Code != "server_error" || e.Partial != "abc" {
			t.Errorf("error = %+v", e)
		}
	})
	t.Run("error event about context length", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.StreamError{Message: "Input exceeds the context window of this model"})
		_, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), llm.Observer{})
		asError(t, err, llm.KindContextLength)
	})
	t.Run("malformed SSE", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.MalformedSSE{AfterText: "ok so"})
		_, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), llm.Observer{})
		e := asError(t, err, llm.KindStream)
		if !strings.Contains(e.Message, "malformed stream data") || e.Partial != "ok so" {
			t.Errorf("error = %+v", e)
		}
	})
	t.Run("HTML error page", func(t *testing.T) {
		page := llmtest.Fail{Status: 502, ContentType: "text/html",
			Body: "<html>\n<head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"}
		srv := llmtest.NewServer(t, page, page, page)
		resp, err := newClient(t, srv.URL(), func(c *llm.Config) { c.MaxRetries = 2 }).
			Stream(context.Background(), ask("hi"), llm.Observer{})
		e := asError(t, err, llm.KindServer)
		msg := e.Error()
		if e.Status != 502 || resp.Attempts != 3 || !strings.Contains(msg, "502") || !strings.Contains(msg, "<title>502 Bad Gateway</title>") {
			t.Errorf("attempts=%d error=%q", resp.Attempts, msg)
		}
	})
	t.Run("HTML page with status 200", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Fail{Status: 200, ContentType: "text/html", Body: "<html><body>Please log in to the hotel wifi</body></html>"})
		_, err := newClient(t, srv.URL()).Stream(context.Background(), ask("hi"), llm.Observer{})
		e := asError(t, err, llm.KindStream)
		if !strings.Contains(e.Message, "hotel wifi") {
			t.Errorf("error = %v", e)
		}
	})
}

func TestStreamEndingWithoutFinishIsAnError(t *testing.T) {
	// A proxy that closes the response cleanly mid-reply: no finish_reason,
	// no [DONE]. The text must not pass for a complete message.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, part := range []string{"Half an ", "answer"} {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", part)
		}
	}))
	defer hs.Close()
	_, err := newClient(t, hs.URL+"/v1").Stream(context.Background(), ask("hi"), llm.Observer{})
	e := asError(t, err, llm.KindStream)
	if e.Partial != "Half an answer" || !strings.Contains(e.Message, "finish_reason") {
		t.Errorf("error = %+v", e)
	}
}

func TestIdleWatchdog(t *testing.T) {
	t.Run("stall fails the call", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Stall{AfterText: "thinking"})
		c := newClient(t, srv.URL(), func(c *llm.Config) { c.IdleTimeout = 300 * time.Millisecond })
		start := time.Now()
		_, err := c.Stream(context.Background(), ask("hi"), llm.Observer{})
		elapsed := time.Since(start)
		e := asError(t, err, llm.KindStream)
		if e.Message != "stream stalled: no data for 300ms" || e.Partial != "thinking" {
			t.Errorf("error = %+v", e)
		}
		if elapsed < 300*time.Millisecond || elapsed > 2*time.Second {
			t.Errorf("stall detected after %v, want about 300ms", elapsed)
		}
	})
	t.Run("steady slow stream is not a stall", func(t *testing.T) {
		// 8 chunks 100ms apart outlast the 300ms idle timeout several times.
		srv := llmtest.NewServer(t, llmtest.Reply{Text: strings.Repeat("x", 64), Delay: 100 * time.Millisecond})
		c := newClient(t, srv.URL(), func(c *llm.Config) { c.IdleTimeout = 300 * time.Millisecond })
		if _, err := c.Stream(context.Background(), ask("hi"), llm.Observer{}); err != nil {
			t.Fatalf("Stream: %v", err)
		}
	})
	t.Run("call timeout bounds the whole call", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Stall{AfterText: "slow"})
		c := newClient(t, srv.URL(), func(c *llm.Config) { c.CallTimeout = 200 * time.Millisecond })
		_, err := c.Stream(context.Background(), ask("hi"), llm.Observer{})
		e := asError(t, err, llm.KindStream)
		if e.Message != "call timed out after 200ms" || e.Partial != "slow" {
			t.Errorf("error = %+v", e)
		}
	})
	t.Run("user cancel", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Stall{AfterText: "partial"})
		c := newClient(t, srv.URL())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec := newRecorder()
		go func() {
			<-rec.first
			cancel()
		}()
		start := time.Now()
		_, err := c.Stream(ctx, ask("hi"), rec.obs())
		e := asError(t, err, llm.KindCanceled)
		if d := time.Since(start); d > time.Second {
			t.Errorf("cancel took %v", d)
		}
		if !errors.Is(err, context.Canceled) || e.Partial == "" {
			t.Errorf("error = %+v, want context.Canceled underneath and the partial text", e)
		}
	})
	t.Run("cancel during a retry wait", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Fail{Status: 429, RetryAfter: "5"})
		ctx, cancel := context.WithCancel(context.Background())
		obs := llm.Observer{OnRetry: func(llm.Retry) { cancel() }}
		start := time.Now()
		_, err := newClient(t, srv.URL()).Stream(ctx, ask("hi"), obs)
		asError(t, err, llm.KindCanceled)
		if d := time.Since(start); d > time.Second {
			t.Errorf("cancel took %v", d)
		}
	})
}

func TestUnreachableEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused

	rec := newRecorder()
	c := newClient(t, "http://"+addr+"/v1", func(c *llm.Config) { c.MaxRetries = 3 })
	resp, err := c.Stream(context.Background(), ask("hi"), rec.obs())
	asError(t, err, llm.KindNetwork)
	if resp.Attempts != 4 || len(rec.retryLog()) != 3 {
		t.Errorf("attempts=%d retries=%d, want 4 and 3", resp.Attempts, len(rec.retryLog()))
	}
}

func TestReasoningIsNotContent(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		t.Run(field, func(t *testing.T) {
			const thought = "The user wants 6*7. That is 42."
			srv := llmtest.NewServer(t, llmtest.Reply{Reasoning: thought, ReasoningField: field, Text: "42"})
			rec := newRecorder()
			resp, err := newClient(t, srv.URL()).Stream(context.Background(), ask("6*7?"), rec.obs())
			if err != nil {
				t.Fatal(err)
			}
			text, reasoning, _ := rec.text()
			if reasoning != thought || text != "42" || resp.Message.Content != "42" {
				t.Errorf("reasoning=%q text=%q content=%q", reasoning, text, resp.Message.Content)
			}
		})
	}
}

func TestUsageAndModels(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Reply{Text: "hi", Usage: &llmtest.Usage{Prompt: 1200, Completion: 7, Cached: 1024}},
		llmtest.Text("estimated"))
	c := newClient(t, srv.URL())
	resp, err := c.Stream(context.Background(), ask("hello"), llm.Observer{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (chat.Usage{PromptTokens: 1200, CompletionTokens: 7, CachedTokens: 1024}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	resp, err = c.Stream(context.Background(), ask("hello"), llm.Observer{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 {
		t.Errorf("estimated usage = %+v, want non-zero", resp.Usage)
	}

	srv.SetModels("qwen3-coder", "gpt-4.1")
	models, err := c.ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(models, ",") != "qwen3-coder,gpt-4.1" {
		t.Errorf("models = %v", models)
	}
}

func TestListModelsError(t *testing.T) {
	srv := llmtest.NewServer(t)
	c := newClient(t, srv.URL()+"/nope") // 404 from the fake for unknown routes
	_, err := c.ListModels(context.Background())
	if llm.KindOf(err) != llm.KindBadRequest || !strings.Contains(err.Error(), "list models") {
		t.Errorf("err = %v", err)
	}
}

func BenchmarkStream(b *testing.B) {
	srv := llmtest.NewServer(b)
	c := newClient(b, srv.URL())
	reply := llmtest.Reply{Text: strings.Repeat("abcdefgh", 256), ChunkSize: 8} // 2 KB, 256 chunks
	req := ask("bench")
	b.ReportAllocs()
	for b.Loop() {
		srv.Push(reply)
		resp, err := c.Stream(context.Background(), req, llm.Observer{OnDelta: func(llm.Delta) {}})
		if err != nil || len(resp.Message.Content) != 2048 {
			b.Fatalf("Stream: %v (%d bytes)", err, len(resp.Message.Content))
		}
	}
}

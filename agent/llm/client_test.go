package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Consecutive calls arrive on one connection: the body is read to its end
// after [DONE], so with a real provider a session pays one TLS handshake,
// not one per step.
func TestCallsReuseTheConnection(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("one"), llmtest.Call("read_file", `{"path":"a.go"}`), llmtest.Text("three"))
	c := newClient(t, srv.URL())
	for i := 0; i < 3; i++ {
		if _, err := c.Stream(context.Background(), ask("hi"), llm.Observer{}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Conn == "" || r.Conn != reqs[0].Conn {
			t.Errorf("request %d came from %q, request 1 from %q: want one reused connection", i+1, r.Conn, reqs[0].Conn)
		}
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

// TestRequestHeadersOnTheWire: what the server receives with a chat
// request and a model listing — the key as a bearer token, the JSON
// content type, Polly's user agent, the configured headers (which win,
// Authorization included) and nothing left over from an SDK.
func TestRequestHeadersOnTheWire(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("ok"))
	c := newClient(t, srv.URL(), func(cfg *llm.Config) {
		cfg.UserAgent = "Polly/1.2.3"
		cfg.Headers = map[string]string{"x-title": "Polly", "OpenAI-Organization": "org-1"}
	})
	if _, err := c.Stream(context.Background(), ask("hi"), llm.Observer{}); err != nil {
		t.Fatal(err)
	}
	h := srv.Last().Header
	for k, want := range map[string]string{
		"Authorization":       "Bearer test-key",
		"Content-Type":        "application/json",
		"Accept":              "application/json",
		"User-Agent":          "Polly/1.2.3",
		"X-Title":             "Polly",
		"Openai-Organization": "org-1",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-stainless") {
			t.Errorf("SDK header %s sent: %v", k, h)
		}
	}

	// Azure-style: the key goes in api-key, no bearer token; the default
	// user agent names Polly.
	srv.Push(llmtest.Text("ok"))
	az := newClient(t, srv.URL(), func(cfg *llm.Config) {
		cfg.APIKey = ""
		cfg.Headers = map[string]string{"api-key": "azure-secret"}
	})
	if _, err := az.Stream(context.Background(), ask("hi"), llm.Observer{}); err != nil {
		t.Fatal(err)
	}
	h = srv.Last().Header
	if h.Get("Api-Key") != "azure-secret" || h.Values("Authorization") != nil || h.Get("User-Agent") != "Polly" {
		t.Errorf("Azure-style headers: %v", h)
	}

	// A configured Authorization replaces the bearer key (a proxy's own auth).
	srv.Push(llmtest.Text("ok"))
	px := newClient(t, srv.URL(), func(cfg *llm.Config) {
		cfg.Headers = map[string]string{"Authorization": "Basic cHJveHk6cHc="}
	})
	if _, err := px.Stream(context.Background(), ask("hi"), llm.Observer{}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Last().Header.Values("Authorization"); len(got) != 1 || got[0] != "Basic cHJveHk6cHc=" {
		t.Errorf("Authorization = %q, want only the configured one", got)
	}
}

// TestEndpointPaths: requests go under the base URL's path, keep its query
// (Azure's api-version) and carry the headers on GET /models too.
func TestEndpointPaths(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[{"id":"gpt-4o","object":"model"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer hs.Close()
	c := newClient(t, hs.URL+"/openai/v1/?api-version=2025-04-01-preview#frag")
	if _, err := c.Stream(context.Background(), ask("hi"), llm.Observer{}); err != nil {
		t.Fatal(err)
	}
	models, err := c.ListModels(context.Background())
	if err != nil || strings.Join(models, ",") != "gpt-4o" {
		t.Fatalf("models = %v, err = %v", models, err)
	}
	want := "POST /openai/v1/chat/completions?api-version=2025-04-01-preview Bearer test-key," +
		"GET /openai/v1/models?api-version=2025-04-01-preview Bearer test-key"
	if got := strings.Join(seen, ","); got != want {
		t.Errorf("requests:\n got %s\nwant %s", got, want)
	}

	// A base URL that is not http(s) fails before any request, unretried.
	for _, bad := range []string{"localhost:11434/v1", "ftp://example.test/v1", "http://%zz"} {
		_, err := newClient(t, bad).Stream(context.Background(), ask("hi"), llm.Observer{})
		if e := asError(t, err, llm.KindBadRequest); !strings.Contains(e.Message, "base URL") {
			t.Errorf("%s: error = %v", bad, e)
		}
	}
}

// TestHTTPErrorShapes: error bodies as providers really send them reach
// the user as the provider's own words, in the right class.
func TestHTTPErrorShapes(t *testing.T) {
	cases := []struct {
		name       string
		fail       llmtest.Fail
		kind       llm.Kind
		code, typ  string
		msg        string // the Message
		userSees   string // in Error()
		retried    bool
		retryAfter time.Duration
	}{
		{"openai object", llmtest.Fail{Status: 400, Code: "invalid_value", Type: "invalid_request_error", Message: "Invalid value for 'temperature'"},
			llm.KindBadRequest, "invalid_value", "invalid_request_error", "Invalid value for 'temperature'",
			"bad_request (HTTP 400) invalid_value: Invalid value for 'temperature'", false, 0},
		{"ollama string", llmtest.Fail{Status: 404, ContentType: "application/json", Body: `{"error":"model \"qwen9\" not found, try pulling it first"}`},
			llm.KindBadRequest, "", "", `model "qwen9" not found, try pulling it first`,
			`bad_request (HTTP 404): model "qwen9" not found, try pulling it first`, false, 0},
		{"vllm object with numeric code", llmtest.Fail{Status: 400, ContentType: "application/json",
			Body: `{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.","type":"BadRequestError","param":null,"code":400}`},
			llm.KindContextLength, "", "", "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
			"context_length (HTTP 400): This model's maximum", false, 0},
		{"numeric code inside error", llmtest.Fail{Status: 400, ContentType: "application/json",
			Body: `{"error":{"message":"prompt is too long","code":400,"type":null}}`},
			llm.KindContextLength, "400", "", "prompt is too long", "context_length (HTTP 400) 400: prompt is too long", false, 0},
		{"fastapi detail", llmtest.Fail{Status: 422, ContentType: "application/json", Body: `{"detail":"Field required: messages"}`},
			llm.KindBadRequest, "", "", "Field required: messages", "bad_request (HTTP 422): Field required: messages", false, 0},
		{"plain text", llmtest.Fail{Status: 503, ContentType: "text/plain", Body: "upstream connect error or disconnect/reset before headers\n"},
			llm.KindServer, "", "", "unexpected response body: upstream connect error or disconnect/reset before headers",
			"server (HTTP 503): unexpected response body: upstream connect error", true, 0},
		{"empty body", llmtest.Fail{Status: 502, ContentType: "text/plain", Header: http.Header{"Content-Length": {"0"}}},
			llm.KindServer, "", "", "Bad Gateway", "server (HTTP 502): Bad Gateway", true, 0},
		{"quota", llmtest.Fail{Status: 429, Code: "insufficient_quota", Type: "insufficient_quota", Message: "You exceeded your current quota"},
			llm.KindAuth, "insufficient_quota", "insufficient_quota", "You exceeded your current quota",
			"auth (HTTP 429) insufficient_quota: You exceeded your current quota", false, 0},
		{"rate limit with Retry-After", llmtest.Fail{Status: 429, RetryAfter: "0.02", Message: "Rate limit reached"},
			llm.KindRateLimit, "rate_limit_exceeded", "rate_limit_error", "Rate limit reached",
			"rate_limit (HTTP 429) rate_limit_exceeded: Rate limit reached", true, 20 * time.Millisecond},
		{"forbidden", llmtest.Fail{Status: 403, Message: "Project does not have access to model gpt-5"},
			llm.KindAuth, "", "permission_error", "Project does not have access to model gpt-5",
			"auth (HTTP 403): Project does not have access", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			steps := []llmtest.Step{tc.fail}
			if tc.retried {
				steps = append(steps, tc.fail)
			}
			srv := llmtest.NewServer(t, steps...)
			resp, err := newClient(t, srv.URL(), func(c *llm.Config) { c.MaxRetries = 1 }).
				Stream(context.Background(), ask("hi"), llm.Observer{})
			e := asError(t, err, tc.kind)
			if e.Status != tc.fail.Status || e.Code != tc.code || e.Type != tc.typ || e.Message != tc.msg || e.RetryAfter != tc.retryAfter {
				t.Errorf("error = %+v\nwant status %d code %q type %q message %q retry-after %v", e, tc.fail.Status, tc.code, tc.typ, tc.msg, tc.retryAfter)
			}
			if !strings.Contains(e.Error(), tc.userSees) {
				t.Errorf("user sees %q, want it to contain %q", e.Error(), tc.userSees)
			}
			if want := map[bool]int{false: 1, true: 2}[tc.retried]; resp.Attempts != want || srv.Calls() != want {
				t.Errorf("attempts=%d calls=%d, want %d", resp.Attempts, srv.Calls(), want)
			}
		})
	}
}

// TestCancelBeforeTheResponse: Esc while the provider has not answered yet
// ends the request on the wire (the server sees the client go) and the
// call at once.
func TestCancelBeforeTheResponse(t *testing.T) {
	arrived, gone := make(chan struct{}), make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a hang-up once the body is read
		close(arrived)
		select {
		case <-r.Context().Done(): // the client hung up
			close(gone)
		case <-time.After(5 * time.Second):
		}
	}))
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	start := time.Now()
	resp, err := newClient(t, hs.URL+"/v1").Stream(ctx, ask("hi"), llm.Observer{})
	e := asError(t, err, llm.KindCanceled)
	if !errors.Is(e, context.Canceled) || resp.Attempts != 1 || time.Since(start) > 2*time.Second {
		t.Errorf("error %v after %v, attempts %d", e, time.Since(start), resp.Attempts)
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Fatal("the server never saw the request end")
	}
}

// TestRedirects: a redirect on the same origin is followed with the body
// and key; one to another origin is refused before that server hears
// anything, and not retried.
func TestRedirects(t *testing.T) {
	var elsewhere sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		elsewhere.Unlock()
	}))
	defer other.Close()
	var hits []string
	var bodies []int
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		hits = append(hits, r.URL.Path)
		bodies = append(bodies, len(body.Messages))
		switch r.URL.Path {
		case "/old/chat/completions":
			http.Redirect(w, r, "/v1/chat/completions", http.StatusTemporaryRedirect)
		case "/away/chat/completions":
			http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"moved\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		}
	}))
	defer hs.Close()

	resp, err := newClient(t, hs.URL+"/old").Stream(context.Background(), ask("hi"), llm.Observer{})
	if err != nil || resp.Message.Content != "moved" {
		t.Fatalf("same-origin redirect: %v, %+v", err, resp)
	}
	if strings.Join(hits, ",") != "/old/chat/completions,/v1/chat/completions" || bodies[1] != 2 {
		t.Errorf("hits %v, messages per request %v: want the body sent again after the 307", hits, bodies)
	}

	resp, err = newClient(t, hs.URL+"/away").Stream(context.Background(), ask("hi"), llm.Observer{})
	e := asError(t, err, llm.KindBadRequest)
	if !strings.Contains(e.Error(), "another origin") || resp.Attempts != 1 {
		t.Errorf("error = %v, attempts %d", e, resp.Attempts)
	}
	elsewhere.Lock()
	defer elsewhere.Unlock()
	if len(leaked) != 0 {
		t.Errorf("the other origin received %d request(s) (Authorization %q)", len(leaked), leaked)
	}
}

// TestListModelsOnTheWire: the listing carries the key, and a listing that
// is not JSON is described, not mistaken for an empty list.
func TestListModelsOnTheWire(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetModels("a", "b")
	c := newClient(t, srv.URL())
	if got, err := c.ListModels(context.Background()); err != nil || strings.Join(got, ",") != "a,b" || srv.ModelListRequests() != 1 {
		t.Fatalf("models %v, err %v, requests %d", got, err, srv.ModelListRequests())
	}
	srv.SetModelsResponse(200, "text/html", "<html><body>Sign in to the portal</body></html>")
	_, err := c.ListModels(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not a model list") || !strings.Contains(err.Error(), "Sign in to the portal") {
		t.Errorf("err = %v", err)
	}
	srv.SetModelsResponse(401, "application/json", `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	_, err = c.ListModels(context.Background())
	if llm.KindOf(err) != llm.KindAuth || !strings.Contains(err.Error(), "Incorrect API key provided") {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ListModels(ctx); llm.KindOf(err) != llm.KindCanceled {
		t.Errorf("cancelled listing: %v", err)
	}
}

// cannedTransport answers every request in-process with the same stream.
type cannedTransport struct{ body []byte }

func (c cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{StatusCode: http.StatusOK, Request: r, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(string(c.body)))}, nil
}

// BenchmarkCallOverhead is the client's own cost of one call — the
// request, its headers, the response and a three-chunk reply — without a
// server or a socket, which BenchmarkStream's numbers are mostly made of.
func BenchmarkCallOverhead(b *testing.B) {
	var body strings.Builder
	for _, part := range []string{"Hello", ", ", "world"} {
		fmt.Fprintf(&body, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", part)
	}
	body.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	c := newClient(b, "http://127.0.0.1:1/v1", func(cfg *llm.Config) {
		cfg.HTTPClient = &http.Client{Transport: cannedTransport{body: []byte(body.String())}}
		cfg.Headers = map[string]string{"X-Title": "Polly"}
	})
	req := ask("bench")
	req.Cache = llm.NewWireCache()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Stream(context.Background(), req, llm.Observer{})
		if err != nil || resp.Message.Content != "Hello, world" {
			b.Fatalf("Stream: %v (%q)", err, resp.Message.Content)
		}
	}
}

// TestOnRequestSeesTheBodySent: the body an observer is shown is, byte for
// byte, what the server received, once per call however many attempts.
func TestOnRequestSeesTheBodySent(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Fail{Status: 503}, llmtest.Text("ok"))
	c := newClient(t, srv.URL())
	var seen [][]byte
	req := ask("hi")
	req.Cache = llm.NewWireCache()
	obs := llm.Observer{OnRequest: func(b []byte) { seen = append(seen, bytes.Clone(b)) }}
	if _, err := c.Stream(context.Background(), req, obs); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || srv.Calls() != 2 {
		t.Fatalf("OnRequest called %d times for %d attempts, want once", len(seen), srv.Calls())
	}
	for i, r := range srv.Requests() {
		if !bytes.Equal(r.Raw, seen[0]) {
			t.Errorf("attempt %d sent\n%s\nOnRequest saw\n%s", i+1, r.Raw, seen[0])
		}
	}
}

// BenchmarkCallAtForty is one step's call at 40k tokens of context: a
// 160 KB body (its messages already encoded in the cache but the last
// two, as in a step), handed to the SDK and written to the transport, and
// a reply of prose in 64-byte chunks and one tool call, as the step
// benchmark's model sends it — without a server or a socket.
func BenchmarkCallAtForty(b *testing.B) {
	head := `"id":"chatcmpl-Ab12Cd34","object":"chat.completion.chunk","created":1732600000,"model":"gpt-4.1-2025-04-14","system_fingerprint":"fp_5f20662549"`
	var body strings.Builder
	prose := strings.Repeat("Looking at how the loop hands results back, the next thing to check is the accumulator. ", 8)
	for i := 0; i < len(prose); i += 64 {
		fmt.Fprintf(&body, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", head, prose[i:min(i+64, len(prose))])
	}
	fmt.Fprintf(&body, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"src/file3.go\\\"}\"}}]},\"finish_reason\":null}]}\n\n", head)
	fmt.Fprintf(&body, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n", head)
	fmt.Fprintf(&body, "data: {%s,\"choices\":[],\"usage\":{\"prompt_tokens\":39000,\"completion_tokens\":240,\"total_tokens\":39240}}\n\n", head)
	body.WriteString("data: [DONE]\n\n")
	c := newClient(b, "http://127.0.0.1:1/v1", func(cfg *llm.Config) {
		cfg.HTTPClient = &http.Client{Transport: cannedTransport{body: []byte(body.String())}}
	})
	req := ask("bench")
	file := strings.Repeat("func step(s *state) bool {\n\tif s.n > 7 {\n\t\treturn false\n\t}\n\ts.n++\n\treturn true\n}\n", 80)
	for i := 0; len(req.Messages) < 60; i++ {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			chat.Message{Role: chat.Assistant, Content: prose, ToolCalls: []chat.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"src/file3.go"}`}}},
			chat.Message{Role: chat.Tool, ToolCallID: id, Content: file})
	}
	req.Cache = llm.NewWireCache()
	sent := 0
	b.ReportAllocs()
	for b.Loop() {
		// The last two messages are new to the cache, as in a step.
		n := len(req.Messages)
		req.Messages[n-1].Content = file[:len(file)-1-sent%2]
		req.Messages[n-2].Content = prose[:len(prose)-1-sent%2]
		sent++
		var reqBytes int
		resp, err := c.Stream(context.Background(), req, llm.Observer{OnRequest: func(b []byte) { reqBytes = len(b) }})
		if err != nil || len(resp.Message.ToolCalls) != 1 || reqBytes < 150_000 {
			b.Fatalf("Stream: %v (%d calls, %d bytes sent)", err, len(resp.Message.ToolCalls), reqBytes)
		}
	}
}

// TestNewTransportSendsOtherBodies: a body that is not Polly's encoded one
// (a reader of unknown length, one of known length) goes through
// NewTransport's connections whole, by the connection's own copy.
func TestNewTransportSendsOtherBodies(t *testing.T) {
	want := strings.Repeat("abcdefghij", 20_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %t", len(b), string(b) == want)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: llm.NewTransport()}
	for name, body := range map[string]io.Reader{
		"known length":   strings.NewReader(want),
		"unknown length": io.MultiReader(strings.NewReader(want[:1000]), strings.NewReader(want[1000:])),
	} {
		res, err := hc.Post(srv.URL, "text/plain", body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(got) != fmt.Sprintf("%d true", len(want)) {
			t.Errorf("%s: the server got %q, want %d bytes intact", name, got, len(want))
		}
	}
}

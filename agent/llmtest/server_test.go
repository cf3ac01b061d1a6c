package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/memory/chat"
)

func stream(t *testing.T, srv *llmtest.Server, msgs ...chat.Message) (llm.Response, error) {
	t.Helper()
	c := llm.New(llm.Config{BaseURL: srv.URL(), MaxRetries: -1})
	return c.Stream(context.Background(), llm.Request{Model: "m", Messages: msgs}, llm.Observer{})
}

func post(t *testing.T, srv *llmtest.Server, body string) (*http.Response, []byte) {
	t.Helper()
	res, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

func TestStrictValidation(t *testing.T) {
	call := chat.ToolCall{ID: "call_x", Name: "bash", Arguments: `{}`}
	asked := chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{call}}
	cases := []struct {
		name string
		msgs []chat.Message
		want string
	}{
		{"orphaned tool message",
			[]chat.Message{chat.UserText("hi"), chat.ToolResult(call, "out")},
			"messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"},
		{"unanswered tool call",
			[]chat.Message{chat.UserText("hi"), asked, chat.UserText("and?")},
			"The following tool_call_ids did not have response messages: call_x"},
		{"unanswered tool call at the end",
			[]chat.Message{chat.UserText("hi"), asked},
			"did not have response messages: call_x"},
		{"tool answering another id",
			[]chat.Message{chat.UserText("hi"), asked, chat.ToolResult(chat.ToolCall{ID: "call_y"}, "out")},
			"'tool_call_id' of 'call_y' not found"},
		{"tool result after a user message",
			[]chat.Message{chat.UserText("hi"), asked, chat.UserText("wait"), chat.ToolResult(call, "out")},
			"did not have response messages: call_x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Text("unused"))
			_, err := stream(t, srv, tc.msgs...)
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindBadRequest || e.Status != 400 || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("err = %v, want a 400 saying %q", err, tc.want)
			}
			if srv.Pending() != 1 || srv.Calls() != 1 {
				t.Errorf("pending=%d calls=%d: a rejected request must be recorded and consume no step", srv.Pending(), srv.Calls())
			}
			srv.Strict(false)
			if _, err := stream(t, srv, tc.msgs...); err != nil {
				t.Errorf("with Strict(false): %v", err)
			}
		})
	}

	t.Run("valid conversation", func(t *testing.T) {
		two := chat.Message{Role: chat.Assistant, Content: "two things", ToolCalls: []chat.ToolCall{call, {ID: "call_z", Name: "ls", Arguments: "{}"}}}
		srv := llmtest.NewServer(t, llmtest.Text("ok"))
		_, err := stream(t, srv, chat.UserText("hi"), two,
			chat.ToolResult(chat.ToolCall{ID: "call_z"}, "b"), chat.ToolResult(call, "a"), chat.UserText("thanks"))
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("harness field on the wire", func(t *testing.T) {
		srv := llmtest.NewServer(t) // a rejected request consumes no step
		res, body := post(t, srv, `{"model":"m","messages":[{"role":"user","content":"x","kind":"anchor"}]}`)
		if res.StatusCode != 400 || !strings.Contains(string(body), `field \"kind\"`) {
			t.Errorf("status %d body %s, want 400 naming the field", res.StatusCode, body)
		}
	})
}

// errorTB records Errorf instead of failing the enclosing test.
type errorTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (e *errorTB) Errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func TestExhaustedScriptFailsLoudly(t *testing.T) {
	tb := &errorTB{TB: t}
	srv := llmtest.NewServer(tb, llmtest.Text("only one"))
	if _, err := stream(t, srv, chat.UserText("1")); err != nil {
		t.Fatal(err)
	}
	_, err := stream(t, srv, chat.UserText("2"))
	if llm.KindOf(err) != llm.KindServer || !strings.Contains(err.Error(), "script exhausted") {
		t.Errorf("err = %v, want a 500 naming the exhausted script", err)
	}
	_, _ = stream(t, srv, chat.UserText("3"))
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], "request #2") {
		t.Errorf("test errors = %q, want exactly one naming request #2", tb.errs)
	}
}

// sseEvents reads a streamed body into its data payloads.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, line)
		}
	}
	return out
}

func TestWireFormat(t *testing.T) {
	t.Run("streamed tool call fragments and usage", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Reply{
			ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: `{"path":"go.mod"}`}},
			Usage:     &llmtest.Usage{Prompt: 10, Completion: 5, Cached: 2},
		})
		res, body := post(t, srv, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
		if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		ev := sseEvents(t, body)
		if ev[len(ev)-1] != "[DONE]" {
			t.Fatalf("last event %q, want [DONE]", ev[len(ev)-1])
		}
		type tc struct {
			Index    int     `json:"index"`
			ID       *string `json:"id"`
			Function struct {
				Name      *string `json:"name"`
				Arguments string  `json:"arguments"`
			} `json:"function"`
		}
		var heads, frags int
		var args strings.Builder
		var usage *struct {
			PromptTokens  int `json:"prompt_tokens"`
			PromptDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		}
		for _, e := range ev[:len(ev)-1] {
			var ch struct {
				ID      string `json:"id"`
				Choices []struct {
					Delta struct {
						ToolCalls []tc `json:"tool_calls"`
					} `json:"delta"`
				} `json:"choices"`
				Usage json.RawMessage `json:"usage"`
			}
			if err := json.Unmarshal([]byte(e), &ch); err != nil {
				t.Fatalf("chunk %s: %v", e, err)
			}
			if len(ch.Choices) == 0 {
				if err := json.Unmarshal(ch.Usage, &usage); err != nil {
					t.Fatal(err)
				}
				continue
			}
			for _, c := range ch.Choices[0].Delta.ToolCalls {
				if c.ID != nil {
					heads++
					if *c.ID != "call_1" || c.Function.Name == nil || *c.Function.Name != "read_file" {
						t.Errorf("first tool chunk %s, want id and name", e)
					}
				} else {
					frags++
				}
				args.WriteString(c.Function.Arguments)
			}
		}
		if heads != 1 || frags < 2 || args.String() != `{"path":"go.mod"}` {
			t.Errorf("heads=%d fragments=%d args=%q", heads, frags, args.String())
		}
		if usage == nil || usage.PromptTokens != 10 || usage.PromptDetails.CachedTokens != 2 {
			t.Errorf("usage chunk = %+v", usage)
		}
	})

	t.Run("non-streamed completion", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Call("bash", `{"cmd":"ls"}`))
		_, body := post(t, srv, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`)
		var got struct {
			Object  string `json:"object"`
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		m := got.Choices[0].Message
		if got.Object != "chat.completion" || m.Content != nil || m.ToolCalls[0].Function.Name != "bash" ||
			got.Choices[0].FinishReason != "tool_calls" || got.Usage.CompletionTokens == 0 {
			t.Errorf("completion = %s", body)
		}
		if r := srv.Last(); r.Stream || r.Messages[0].Content != "ab" {
			t.Errorf("decoded request = %+v, want content parts joined", r)
		}
	})
}

func TestFuncAndConcurrency(t *testing.T) {
	const n = 16
	srv := llmtest.NewServer(t, llmtest.Repeat(n, func(r llmtest.Request) llmtest.Step {
		return llmtest.Text("echo: " + r.LastMessage().Content)
	})...)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			msg := fmt.Sprintf("m%d", i)
			resp, err := stream(t, srv, chat.UserText(msg))
			if err == nil && resp.Message.Content != "echo: "+msg {
				err = fmt.Errorf("reply %q to %q", resp.Message.Content, msg)
			}
			errs <- err
			_ = srv.Requests() // concurrent readers are fine
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if srv.Calls() != n || srv.Pending() != 0 {
		t.Errorf("calls=%d pending=%d", srv.Calls(), srv.Pending())
	}
}

// recordingTB is a testing.TB that records failures and runs its cleanups
// on demand, to test what the server reports at the end of a test.
type recordingTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recordingTB) Helper()                   {}
func (r *recordingTB) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(f string, a ...any) { r.errors = append(r.errors, fmt.Sprintf(f, a...)) }
func (r *recordingTB) Fatalf(f string, a ...any) { r.Errorf(f, a...) }
func (r *recordingTB) Logf(string, ...any)       {}
func (r *recordingTB) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// A scripted step left unused fails the test that scripted it; Serve
// answers past the script without counting as leftover.
func TestUnusedStepFailsTheTest(t *testing.T) {
	rec := &recordingTB{TB: t}
	srv := llmtest.NewServer(rec, llmtest.Text("used"), llmtest.Text("never asked for"))
	if _, err := stream(t, srv, chat.UserText("hi")); err != nil {
		t.Fatal(err)
	}
	rec.end()
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "1 scripted step(s) left unused") {
		t.Fatalf("errors = %q", rec.errors)
	}

	rec = &recordingTB{TB: t}
	srv = llmtest.NewServer(rec, llmtest.Text("first"))
	srv.Serve(func(r llmtest.Request) llmtest.Step { return llmtest.Text("served") })
	for i := 0; i < 3; i++ {
		if _, err := stream(t, srv, chat.UserText("hi")); err != nil {
			t.Fatal(err)
		}
	}
	rec.end()
	if len(rec.errors) != 0 || srv.Calls() != 3 {
		t.Fatalf("errors = %q, calls = %d", rec.errors, srv.Calls())
	}
}

// A context limit refuses an over-long prompt the way OpenAI does (400,
// context_length_exceeded, the limit in the message Polly parses), counts
// the tool schemas, and consumes no step.
func TestContextLimit(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("fits"))
	srv.SetContextLimit(300)
	_, err := stream(t, srv, chat.UserText(strings.Repeat("x", 1300)))
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindContextLength || !strings.Contains(e.Message, "maximum context length is 300 tokens") {
		t.Fatalf("over the limit: %v", err)
	}
	c := llm.New(llm.Config{BaseURL: srv.URL(), MaxRetries: -1})
	tools := []llm.ToolSpec{{Name: "big", Description: strings.Repeat("d", 800)}}
	if _, err := c.Stream(context.Background(), llm.Request{Model: "m", Messages: []chat.Message{chat.UserText(strings.Repeat("x", 600))}, Tools: tools}, llm.Observer{}); llm.KindOf(err) != llm.KindContextLength {
		t.Fatalf("tool schemas not counted: %v", err)
	}
	resp, err := stream(t, srv, chat.UserText(strings.Repeat("x", 1000)))
	if err != nil || resp.Message.Content != "fits" {
		t.Fatalf("under the limit: %v %+v", err, resp)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].PromptTokens() <= 300 || reqs[1].PromptTokens() <= 300 || reqs[2].PromptTokens() > 300 || resp.Usage.PromptTokens != reqs[2].PromptTokens() {
		t.Fatalf("counts: %d requests, usage %d", len(reqs), resp.Usage.PromptTokens)
	}
}

// KeepLastOnly: the server holds the last request only, and still counts
// every one.
func TestKeepLastOnly(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.KeepLastOnly()
	srv.Serve(func(r llmtest.Request) llmtest.Step { return llmtest.Text("ok") })
	for _, p := range []string{"one", "two", "three"} {
		if _, err := stream(t, srv, chat.UserText(p)); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Requests(); srv.Calls() != 3 || len(got) != 1 || got[0].LastMessage().Content != "three" {
		t.Fatalf("calls %d, kept %d requests", srv.Calls(), len(got))
	}
}

package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/memory/chat"
	"polly/memory/store"
	"polly/tools/sandbox/sandboxtest"
)

// Must show 1: the model writes a file, reads it back, runs a command and
// answers; the file exists; SQLite holds every message in order and three
// tool executions with output, status and duration.
func TestEndToEndWriteReadRun(t *testing.T) {
	h := newHarness(t,
		llmtest.Call("write_file", `{"path":"notes/hello.txt","content":"hello polly\n"}`),
		llmtest.Call("read_file", `{"path":"notes/hello.txt"}`),
		llmtest.Call("run_command", `{"command":"wc -c < notes/hello.txt"}`),
		llmtest.Text("The file holds 12 bytes."),
	)
	out, err := h.send(context.Background(), "Create notes/hello.txt, check it, and count its bytes.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Reason != "completed" || out.Final != "The file holds 12 bytes." || out.ToolCalls != 3 || out.Turns != 4 {
		t.Fatalf("outcome = %+v", out)
	}
	if b, err := os.ReadFile(filepath.Join(h.dir, "notes/hello.txt")); err != nil || string(b) != "hello polly\n" {
		t.Fatalf("file = %q, %v", b, err)
	}

	msgs, err := h.store.Messages(context.Background(), h.session.ID(), "default")
	if err != nil {
		t.Fatal(err)
	}
	wantRoles := []chat.Role{chat.User, chat.Assistant, chat.Tool, chat.Assistant, chat.Tool, chat.Assistant, chat.Tool, chat.Assistant}
	if len(msgs) != len(wantRoles) {
		t.Fatalf("stored %d messages, want %d: %+v", len(msgs), len(wantRoles), msgs)
	}
	for i, m := range msgs {
		if m.Role != wantRoles[i] {
			t.Fatalf("message %d role %s, want %s", i, m.Role, wantRoles[i])
		}
	}
	if !strings.Contains(msgs[4].Content, "hello polly") || !strings.Contains(msgs[6].Content, "12") {
		t.Fatalf("tool results not stored: %q / %q", msgs[4].Content, msgs[6].Content)
	}

	execs, err := h.store.ListToolExecutions(context.Background(), h.session.ID(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(execs) != 3 {
		t.Fatalf("%d tool executions, want 3", len(execs))
	}
	for _, e := range execs {
		full, err := h.store.ToolExecution(context.Background(), e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if full.Status != store.ExecOK || full.Output == "" || full.Duration < 0 || (full.Tool == "run_command" && full.Duration <= 0) {
			t.Fatalf("execution %+v lacks status, output or duration", full)
		}
	}
	// The model saw each result on the next request.
	reqs := h.srv.Requests()
	if last := reqs[3].LastTurn(); last.Role != "tool" || !strings.Contains(last.Content, "12") {
		t.Fatalf("last request ended with %+v", last)
	}
}

// Must show 2: text deltas reach the event stream before the response ends.
func TestStreamingDeltasArriveBeforeTheEnd(t *testing.T) {
	gate := make(chan struct{})
	h := newHarness(t, llmtest.Reply{Text: "streaming works fine", ChunkSize: 4, Gate: gate})
	done := make(chan error, 1)
	go func() {
		_, err := h.send(context.Background(), "hi")
		done <- err
	}()
	deadline := time.After(5 * time.Second)
	for len(eventsOf[TextDelta](h)) == 0 {
		select {
		case <-deadline:
			t.Fatal("no text delta before the reply was released")
		case err := <-done:
			t.Fatalf("run ended before the gate opened: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if len(eventsOf[MessageDone](h)) != 0 {
		t.Fatal("the message completed before the gate opened")
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, d := range eventsOf[TextDelta](h) {
		text.WriteString(d.Text)
	}
	if text.String() != "streaming works fine" {
		t.Fatalf("deltas = %q", text.String())
	}
}

// Must show 3: the faults.
func TestRateLimitIsRetriedThroughTheLoop(t *testing.T) {
	h := newHarness(t, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Text("ok"))
	out, err := h.send(context.Background(), "hi")
	if err != nil || out.Final != "ok" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if r := eventsOf[Retrying](h); len(r) != 1 {
		t.Fatalf("retry events = %+v", r)
	}
}

func TestContextLengthErrorComesBackTyped(t *testing.T) {
	cl := llmtest.Fail{Status: 400, Code: "context_length_exceeded", Message: "This model's maximum context length is 8192 tokens."}
	// The loop compacts and retries once, then gives up with the typed error.
	h := newHarness(t, cl, cl)
	_, err := h.send(context.Background(), "hi")
	if llm.KindOf(err) != llm.KindContextLength {
		t.Fatalf("err = %v (kind %v), want context_length", err, llm.KindOf(err))
	}
	if e := eventsOf[ErrorEvent](h); len(e) != 1 || e[0].Kind != "context_length" || e[0].Hint == "" {
		t.Fatalf("error events = %+v", e)
	}
}

func TestDroppedStreamIsNotStoredAsAMessage(t *testing.T) {
	h := newHarness(t, llmtest.Drop{AfterText: "I was about to say something impor"}, llmtest.Drop{AfterText: "I was abou"})
	_, err := h.send(context.Background(), "hi")
	if err == nil || llm.KindOf(err) != llm.KindStream {
		t.Fatalf("err = %v, want a stream error", err)
	}
	msgs, _ := h.store.Messages(context.Background(), h.session.ID(), "default")
	for _, m := range msgs {
		if m.Role == chat.Assistant {
			t.Fatalf("partial text stored as a message: %+v", m)
		}
	}
	if len(msgs) != 1 {
		t.Fatalf("stored %d messages, want only the user prompt", len(msgs))
	}
	// The session survives: the next send works on the same history.
	h.srv.Push(llmtest.Text("second try"))
	out, err := h.send(context.Background(), "again")
	if err != nil || out.Final != "second try" {
		t.Fatalf("resume after drop: %+v %v", out, err)
	}
}

func TestMalformedToolCallJSONGetsAnErrorResult(t *testing.T) {
	h := newHarness(t,
		llmtest.Call("write_file", `{"path": "x.txt", "content": "unterminated`),
		llmtest.Call("nonexistent_tool", `{}`),
		llmtest.Text("recovered"),
	)
	out, err := h.send(context.Background(), "write x")
	if err != nil || out.Final != "recovered" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	reqs := h.srv.Requests()
	first := reqs[1].LastTurn()
	if first.Role != "tool" || !strings.Contains(first.Content, "not valid JSON") {
		t.Fatalf("malformed JSON result = %+v", first)
	}
	second := reqs[2].LastTurn()
	if !strings.Contains(second.Content, `unknown tool "nonexistent_tool"`) || !strings.Contains(second.Content, "read_file") {
		t.Fatalf("unknown tool result = %+v", second)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "x.txt")); !os.IsNotExist(err) {
		t.Fatal("a malformed call wrote a file")
	}
}

// Must show 4: Esc during run_command "sleep 30" returns within 1 s and
// leaves no child process; the history stays valid and resumable.
func TestCancelDuringCommandKillsItFast(t *testing.T) {
	h := newHarness(t, llmtest.Call("run_command", `{"command":"echo $$ > pid; sleep 30"}`))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.send(ctx, "sleep")
		done <- err
	}()
	pidFile := filepath.Join(h.dir, "pid")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Second):
		t.Fatal("run did not return within 1s of cancel")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	t.Logf("cancel returned in %v", time.Since(start))
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if sandboxtest.Alive(pid) {
		t.Fatalf("shell %d still running after cancel", pid)
	}
	msgs, _ := h.store.Messages(context.Background(), h.session.ID(), "default")
	last := msgs[len(msgs)-1]
	if last.Role != chat.Tool || !last.Output.Failed {
		t.Fatalf("last stored message = %+v, want the cancelled tool result", last)
	}
	if d := eventsOf[Done](h); len(d) != 1 || d[0].Reason != "cancelled" {
		t.Fatalf("done events = %+v", d)
	}
}

// The session survives a restart: a new Session on the same store sends
// the earlier messages to the model.
func TestResumeSendsEarlierMessages(t *testing.T) {
	h := newHarness(t, llmtest.Text("first answer"))
	if _, err := h.send(context.Background(), "remember the word zebra"); err != nil {
		t.Fatal(err)
	}
	id := h.session.ID()
	resumed, err := OpenSession(context.Background(), h.deps, h.record, SessionOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := h.session.agents["default"].Usage()
	ra, err := resumed.Agent(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := ra.Usage(); after != before || after.PromptTokens == 0 {
		t.Fatalf("usage after resume = %+v, before %+v", after, before)
	}
	h.srv.Push(llmtest.Text("zebra"))
	if _, err := resumed.Send(context.Background(), "default", "what was the word?"); err != nil {
		t.Fatal(err)
	}
	msgs := h.srv.Last().Messages
	var joined []string
	for _, m := range msgs {
		joined = append(joined, m.Role+":"+m.Content)
	}
	all := strings.Join(joined, "\n")
	if !strings.Contains(all, "user:remember the word zebra") || !strings.Contains(all, "assistant:first answer") {
		t.Fatalf("resumed request lacks the earlier messages:\n%s", all)
	}
}

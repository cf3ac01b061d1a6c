package agent

import (
	"bufio"
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
	"polly/agent/redact"
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
	h := newHarness(t, llmtest.Call("run_command", `{"command":"echo started > pid; sleep 30.191"}`))
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
	if live := sandboxtest.Living(func(p sandboxtest.Proc) bool { return p.Cmdline == "sleep\x0030.191\x00" }); len(live) > 0 {
		t.Fatalf("the command still runs after cancel: %+v", live)
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

// Issue 12 #5: a model repeating one identical call gets a harness note
// with the third identical result, and the run stops with the reason at
// the eighth — no turn cap needed.
func TestRepeatingModelIsStopped(t *testing.T) {
	h := newHarness(t)
	h.deps.MaxTurns = 0
	os.WriteFile(filepath.Join(h.dir, "a.txt"), []byte("same\n"), 0o644)
	for i := 0; i < 8; i++ {
		h.srv.Push(llmtest.Reply{Text: "Let me read it again.", ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: `{"path":"a.txt"}`}}})
	}
	out, err := h.send(context.Background(), "what is in a.txt?")
	if !errors.Is(err, ErrLoop) || out.Reason != "loop" || !strings.Contains(err.Error(), "read_file path=a.txt was called 8 times in a row with the same arguments and got the same result") {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 8 {
		t.Fatalf("%d requests: the run did not stop at the eighth identical call", len(reqs))
	}
	// The wire: results 1–2 plain, 3–7 carry the note.
	for i := 1; i < 8; i++ {
		got := reqs[i].LastTurn().Content
		noted := strings.Contains(got, "[harness: you made this exact call")
		if noted != (i >= 3) {
			t.Fatalf("request %d: noted=%v: %q", i, noted, got)
		}
	}
	stored, _ := h.store.Session(context.Background(), h.session.ID())
	if stored.Status != "failed" {
		t.Fatalf("session status %q", stored.Status)
	}
}

// Issue 27 #8: a model alternating two identical reads (the seeds' run
// went 40 calls) is noted at the third repeat and stopped at the eighth,
// with the cycle named; the wire shows the note.
func TestAlternatingCallsAreStopped(t *testing.T) {
	h := newHarness(t)
	h.deps.MaxTurns = 0
	os.WriteFile(filepath.Join(h.dir, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(h.dir, "b.txt"), []byte("beta\n"), 0o644)
	calls := 0
	h.srv.Serve(func(llmtest.Request) llmtest.Step {
		if calls == 40 {
			return llmtest.Text("gave up")
		}
		calls++
		return llmtest.Call("read_file", `{"path":"`+string(rune('a'+(calls-1)%2))+`.txt"}`)
	})
	out, err := h.send(context.Background(), "compare a.txt and b.txt")
	if !errors.Is(err, ErrLoop) || out.Reason != "loop" ||
		!strings.Contains(err.Error(), "read_file path=a.txt was called 8 times in the last 15 calls in a cycle with read_file path=b.txt") {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 15 {
		t.Fatalf("%d requests: the cycle was not stopped at the 15th call", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		noted := strings.Contains(reqs[i].LastTurn().Content, "times in your last")
		if noted != (i >= 5) {
			t.Fatalf("request %d: noted=%v: %q", i, noted, reqs[i].LastTurn().Content)
		}
	}
}

// A changing result is not a loop: the same command whose output differs
// each time runs on.
func TestChangingResultIsNotALoop(t *testing.T) {
	h := newHarness(t)
	h.deps.MaxTurns = 0
	for i := 0; i < 10; i++ {
		h.srv.Push(llmtest.Call("run_command", `{"command":"date +%N"}`))
	}
	h.srv.Push(llmtest.Text("done polling"))
	if out, err := h.send(context.Background(), "poll the clock ten times"); err != nil || out.Final != "done polling" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
}

// Must show (issue 8 #3): every provider fault through the real loop: a
// clear error or a retry, never a hang or a panic.
func TestProviderFaultsThroughTheLoop(t *testing.T) {
	html := llmtest.Fail{Status: 502, ContentType: "text/html", Body: "<html><body><h1>502 Bad Gateway</h1>nginx</body></html>"}
	cases := []struct {
		name     string
		steps    []llmtest.Step
		wantKind llm.Kind // KindUnknown: the run succeeds
		retries  int      // Retrying events expected (at least)
		inError  string
	}{
		{"429 storm then success", []llmtest.Step{llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429}, llmtest.Text("ok")}, llm.KindUnknown, 3, ""},
		{"429 storm that never ends", []llmtest.Step{llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}}, llm.KindRateLimit, 4, "rate"},
		{"500 then success", []llmtest.Step{llmtest.Fail{Status: 500}, llmtest.Fail{Status: 503}, llmtest.Text("ok")}, llm.KindUnknown, 2, ""},
		{"stream stalls once", []llmtest.Step{llmtest.Stall{AfterText: "thinking about", For: 0}, llmtest.Text("ok")}, llm.KindUnknown, 1, ""},
		{"stream stalls twice", []llmtest.Step{llmtest.Stall{AfterText: "thinking about", For: 0}, llmtest.Stall{AfterText: "again", For: 0}}, llm.KindStream, 1, "stalled"},
		{"connection dropped mid-stream once", []llmtest.Step{llmtest.Drop{AfterText: "half an ans"}, llmtest.Text("ok")}, llm.KindUnknown, 1, ""},
		{"connection dropped mid-stream twice", []llmtest.Step{llmtest.Drop{AfterText: "half an ans"}, llmtest.Drop{AfterText: "half"}}, llm.KindStream, 1, ""},
		{"malformed SSE twice", []llmtest.Step{llmtest.MalformedSSE{AfterText: "hel"}, llmtest.MalformedSSE{AfterText: "hel"}}, llm.KindStream, 1, ""},
		{"HTML error page", []llmtest.Step{html, html, html, html, html}, llm.KindServer, 4, "502"},
		{"error event inside the stream twice", []llmtest.Step{llmtest.StreamError{AfterText: "par", Code: "server_error", Message: "upstream overloaded"}, llmtest.StreamError{Message: "upstream overloaded"}}, llm.KindStream, 1, "upstream overloaded"},
		{"auth", []llmtest.Step{llmtest.Fail{Status: 401}}, llm.KindAuth, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.steps...)
			h.deps.LLM = llm.New(llm.Config{BaseURL: h.srv.URL(), APIKey: "k", InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
			start := time.Now()
			out, err := h.send(context.Background(), "hi")
			took := time.Since(start)
			retries := len(eventsOf[Retrying](h))
			if c.wantKind == llm.KindUnknown {
				if err != nil || out.Final != "ok" {
					t.Fatalf("want success, got %+v %v", out, err)
				}
			} else {
				if llm.KindOf(err) != c.wantKind {
					t.Fatalf("err = %v (kind %v), want %v", err, llm.KindOf(err), c.wantKind)
				}
				ev := eventsOf[ErrorEvent](h)
				if len(ev) != 1 || ev[0].Hint == "" || !strings.Contains(strings.ToLower(ev[0].Message), strings.ToLower(c.inError)) {
					t.Fatalf("error events = %+v", ev)
				}
			}
			if retries < c.retries {
				t.Fatalf("%d retry events, want ≥ %d", retries, c.retries)
			}
			if took > 5*time.Second {
				t.Fatalf("took %v", took)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			t.Logf("outcome: reason=%s retries=%d took=%v err=%q", out.Reason, retries, took.Round(time.Millisecond), msg)
		})
	}
}

// The user sees the wait: a Retry-After is reported with its duration.
func TestRetryAfterIsShown(t *testing.T) {
	h := newHarness(t, llmtest.Fail{Status: 429, RetryAfter: "1"}, llmtest.Text("ok"))
	if _, err := h.send(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	r := eventsOf[Retrying](h)
	if len(r) != 1 || r[0].Wait < 900*time.Millisecond || !strings.Contains(r[0].Reason, "rate_limit") {
		t.Fatalf("retry events = %+v", r)
	}
}

// Must show (issue 8 #4): a command printing 100 MB through the loop: the
// peak memory of the process stays within 100 MB of its baseline; the
// output is capped, stored and offloaded.
func TestHundredMegabyteCommandStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("prints 100 MB")
	}
	h := newHarness(t,
		llmtest.Call("run_command", `{"command":"yes 'all work and no play makes jack a dull boy' | head -c 100000000; echo; echo END-OF-OUTPUT"}`),
		llmtest.Text("done"),
	)
	if err := resetPeakRSS(); err != nil {
		t.Skipf("cannot reset the peak RSS here: %v", err)
	}
	base := rssKB(t, "VmRSS")
	if _, err := h.send(context.Background(), "print a lot"); err != nil {
		t.Fatal(err)
	}
	peak := rssKB(t, "VmHWM")
	grew := (peak - base) / 1024
	t.Logf("baseline RSS %d MB, peak %d MB: +%d MB for a 100 MB command output", base/1024, peak/1024, grew)
	if grew > 100 && !raceEnabled {
		t.Fatalf("peak memory grew %d MB", grew)
	}
	off := eventsOf[OutputOffloaded](h)
	if len(off) != 1 || off[0].Chars > 5<<20 {
		t.Fatalf("offloaded = %+v", off)
	}
	full, _ := h.store.Output(context.Background(), off[0].ExecID)
	if !strings.Contains(full, "bytes omitted") || !strings.HasSuffix(strings.TrimSpace(full), "END-OF-OUTPUT") {
		t.Fatalf("stored output: %d chars, tail %q", len(full), full[max(0, len(full)-80):])
	}
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux ≥ 4.0).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func rssKB(t *testing.T, field string) int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// Secrets: the API key never reaches SQLite, archives, checkpoints, logs or
// the model — even when a command prints the environment or a file holds it.
func TestAPIKeyNeverStoredOrShown(t *testing.T) {
	const key = "sk-SECRET-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	h := newHarness(t,
		llmtest.Call("run_command", `{"command":"env | grep -c OPENAI_API_KEY; cat .env"}`),
		llmtest.Text("done"),
	)
	h.deps.Redactor = redact.New(key)
	h.deps.Tools.Add(shellWithScrub(h.dir))
	os.WriteFile(filepath.Join(h.dir, ".env"), []byte("OPENAI_API_KEY="+key+"\n"), 0o600)
	if _, err := h.send(context.Background(), "show the env"); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.srv.Requests() {
		if strings.Contains(string(r.Raw), key) {
			t.Fatal("the key was sent to the model")
		}
	}
	got := h.srv.Last().LastTurn().Content
	if !strings.Contains(got, "0\n") || !strings.Contains(got, "[REDACTED API KEY]") {
		t.Fatalf("tool result = %q", got)
	}
	h.store.Close()
	err := filepath.Walk(h.dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || filepath.Base(p) == ".env" {
			return err
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), key) {
			return errors.New("the key is in " + p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// polly without a terminal says to use -p and exits 2; with one, the
// TUI starts — and polly "PROMPT" hands it PROMPT to send.
func TestTUIStartNeedsATerminal(t *testing.T) {
	env, _ := cliEnv(t, "", nil)
	var got *TUIStart
	env.RunTUI = func(ctx context.Context, s TUIStart) error { got = &s; return nil }
	run := func(term bool, args ...string) runResult {
		var out, errb strings.Builder
		e := env
		e.Args, e.Stdout, e.Stderr = args, &out, &errb
		e.IsTerminal = func(any) bool { return term }
		return runResult{Main(e), out.String(), errb.String()}
	}
	r := run(false)
	if r.code != ExitUsage || !strings.Contains(r.stderr, `polly -p "PROMPT"`) || got != nil {
		t.Fatalf("no terminal: code=%d stderr=%q started=%v", r.code, r.stderr, got != nil)
	}
	r = run(true, "fix the failing test", "--persona", "coder")
	if r.code != 0 || got == nil || got.Prompt != "fix the failing test" || got.Persona != "coder" {
		t.Fatalf("polly PROMPT: code=%d stderr=%q start=%+v", r.code, r.stderr, got)
	}
	got = nil
	r = run(true, "sesions")
	if r.code != ExitUsage || got != nil || !strings.Contains(r.stderr, `unknown command "sesions"`) {
		t.Fatalf("one word: code=%d stderr=%q", r.code, r.stderr)
	}
	r = run(true, "-p", "hello", "world")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "unexpected argument") {
		t.Fatalf("-p with extra words: code=%d stderr=%q", r.code, r.stderr)
	}
}

// --continue with nothing to continue and an unknown --session are bad
// usage (exit 2); a session id prefix is accepted.
func TestSessionLookup(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("first"), llmtest.Text("second"))
	env, polly := cliEnv(t, srv.URL(), nil)
	r := polly("-p", "hi", "--continue")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "no earlier session") {
		t.Fatalf("--continue on nothing: code=%d stderr=%q", r.code, r.stderr)
	}
	r = polly("-p", "hi", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
	}
	_, id, _ := strings.Cut(r.stdout, `"session":"`)
	id, _, _ = strings.Cut(id, `"`)
	if len(id) < 4 {
		t.Fatalf("no session id in %q", r.stdout)
	}
	r = polly("-p", "again", "--session", id[:4])
	if r.code != 0 {
		t.Fatalf("--session prefix: code=%d stderr=%q", r.code, r.stderr)
	}
	if n := len(srv.Last().Messages); n < 4 {
		t.Errorf("the resumed run sent %d messages; the earlier turn is missing", n)
	}
	r = polly("-p", "x", "--session", "zzzz")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `no session "zzzz"`) {
		t.Fatalf("unknown --session: code=%d stderr=%q", r.code, r.stderr)
	}
	_ = env
}

// polly sessions and polly leads list in a directory without .agent/ say
// there is nothing and create nothing.
func TestListingsCreateNoDatabase(t *testing.T) {
	env, polly := cliEnv(t, "", nil)
	for _, args := range [][]string{{"sessions"}, {"leads", "list"}} {
		r := polly(args...)
		if r.code != 0 || !strings.Contains(r.stdout, "no ") {
			t.Errorf("%v: code=%d stdout=%q stderr=%q", args, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(env.Dir, ".agent")); !os.IsNotExist(err) {
		t.Errorf(".agent was created: %v", err)
	}
}

// polly sessions names personas, not ids.
func TestSessionsListPersonaNames(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("ok"))
	_, polly := cliEnv(t, srv.URL(), nil)
	if r := polly("-p", "hi"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := polly("sessions")
	if r.code != 0 || !strings.Contains(r.stdout, " Polly ") || strings.Contains(r.stdout, "default") {
		t.Errorf("sessions list: %q", r.stdout)
	}
}

// A call refused in a headless run prints the whole refusal on stderr,
// with how to allow it.
func TestHeadlessDenialPrintsTheFix(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("run_command", `{"command":"`+strings.Repeat("echo padding-the-command-line; ", 8)+`make deploy"}`), llmtest.Text("I could not deploy."))
	_, polly := cliEnv(t, srv.URL(), map[string]string{"POLLY_MODE": "ask"})
	r := polly("-p", "deploy it")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "✗ run_command") || !strings.Contains(r.stderr, "or --yolo, or add a rule such as") ||
		!strings.Contains(r.stderr, "to permissions.allow in the config") {
		t.Errorf("stderr lacks the whole fix:\n%s", r.stderr)
	}
}

// --debug writes a slog log of the run's events to .agent/polly.log.
func TestDebugLog(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("list_dir", `{"path":"."}`), llmtest.Reply{Text: "empty here", ChunkSize: 3})
	env, polly := cliEnv(t, srv.URL(), nil)
	if r := polly("-p", "what is here?", "--debug"); r.code != 0 {
		t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(env.Dir, ".agent", "polly.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{"level=INFO msg=\"polly started\"", "type=tool_finished", "type=text_delta agent=default bytes=", "type=done"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// The stream-json status event uses snake_case fields like every other;
// tool_output carries a running command's output before tool_finished.
func TestStreamJSONStatusAndToolOutput(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("run_command", `{"command":"echo live-line"}`), llmtest.Text("ok"))
	_, polly := cliEnv(t, srv.URL(), map[string]string{"POLLY_MODE": "yolo"})
	r := polly("-p", "run it", "--output-format", "stream-json")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
	}
	var status, output string
	for _, l := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasPrefix(l, `{"type":"status"`) && status == "":
			status = l
		case strings.HasPrefix(l, `{"type":"tool_output"`):
			output = l
		case strings.HasPrefix(l, `{"type":"tool_finished"`) && output == "":
			t.Error("tool_finished before any tool_output")
		}
	}
	for _, want := range []string{`"context_tokens":`, `"tool_calls":`, `"anchor_in":`, `"has_prices":`} {
		if !strings.Contains(status, want) {
			t.Errorf("status line lacks %s: %s", want, status)
		}
	}
	if strings.Contains(status, "ContextTokens") {
		t.Errorf("Go field names in the status event: %s", status)
	}
	if !strings.Contains(output, `"text":"live-line\n"`) || !strings.Contains(output, `"call_id":`) {
		t.Errorf("tool_output line: %s", output)
	}
}

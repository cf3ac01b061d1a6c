package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

type runResult struct {
	code           int
	stdout, stderr string
}

// cliEnv is a fresh project and home in temp dirs, talking to base.
func cliEnv(t *testing.T, base string, extraEnv map[string]string) (Env, func(args ...string) runResult) {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	vars := map[string]string{"OPENAI_API_KEY": "sk-test-1234", "HOME": home}
	if base != "" {
		vars["OPENAI_BASE_URL"] = base
	}
	for k, v := range extraEnv {
		vars[k] = v
	}
	env := Env{
		Stdin:    strings.NewReader(""),
		Getenv:   func(k string) string { return vars[k] },
		Dir:      dir,
		Home:     home,
		Template: os.DirFS("../../.agent-template"),
		Version:  "test",
	}
	return env, func(args ...string) runResult {
		var out, errb bytes.Buffer
		e := env
		e.Args, e.Stdout, e.Stderr = args, &out, &errb
		code := Main(e)
		return runResult{code, out.String(), errb.String()}
	}
}

func TestHeadlessTextAnswerOnStdout(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("list_dir", `{"path":"."}`), llmtest.Text("The directory is empty."))
	_, polly := cliEnv(t, srv.URL(), nil)
	r := polly("-p", "what is here?")
	if r.code != 0 || r.stdout != "The directory is empty.\n" {
		t.Fatalf("code=%d stdout=%q stderr=%q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "✓ list_dir") || !strings.Contains(r.stderr, "session ") {
		t.Fatalf("progress missing on stderr: %q", r.stderr)
	}
	// The API key is sent to the provider as a bearer token.
	if got := srv.Last().Header.Get("Authorization"); got != "Bearer sk-test-1234" {
		t.Fatalf("Authorization = %q", got)
	}
	// The provider sees Polly and its version, nothing of an SDK.
	if got := srv.Last().Header.Get("User-Agent"); got != "Polly/test" {
		t.Fatalf("User-Agent = %q", got)
	}
}

// Must show (issue 2 #6): stream-json emits one valid JSON object per
// line; --continue resumes with the earlier messages sent to the model.
func TestStreamJSONAndContinue(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Reply{Text: "Noted: the code word is heron.", ChunkSize: 5},
		llmtest.Text("The code word was heron."),
	)
	_, polly := cliEnv(t, srv.URL(), nil)
	r := polly("run", "remember the code word heron", "--output-format", "stream-json")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	types := map[string]int{}
	var last map[string]any
	for i, l := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("line %d is not JSON: %q", i, l)
		}
		typ, _ := obj["type"].(string)
		if typ == "" {
			t.Fatalf("line %d has no type: %q", i, l)
		}
		types[typ]++
		last = obj
	}
	if types["text_delta"] < 2 || types["message"] != 1 || types["usage"] != 1 || types["done"] != 1 || types["result"] != 1 {
		t.Fatalf("event types = %v", types)
	}
	if last["type"] != "result" || last["result"] != "Noted: the code word is heron." || last["is_error"] != false {
		t.Fatalf("last line = %v", last)
	}

	r = polly("-p", "what was the code word?", "--continue", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("continue: code=%d stderr=%s", r.code, r.stderr)
	}
	var res Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Result != "The code word was heron." {
		t.Fatalf("json result %q: %v", r.stdout, err)
	}
	sent := srv.Last().Messages
	var roles []string
	for _, m := range sent[1:] {
		roles = append(roles, m.Role+":"+m.Content)
	}
	want := []string{"user:remember the code word heron", "assistant:Noted: the code word is heron.", "user:what was the code word?"}
	if strings.Join(roles, "|") != strings.Join(want, "|") {
		t.Fatalf("resumed request = %q", roles)
	}
	if res.Session == "" || res.Session != last["session"] {
		t.Fatalf("session %q, first run %v", res.Session, last["session"])
	}

	// polly sessions lists it.
	r = polly("sessions")
	if r.code != 0 || !strings.Contains(r.stdout, res.Session) || !strings.Contains(r.stdout, "remember the code word heron") {
		t.Fatalf("sessions: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestBadInputExitCodes(t *testing.T) {
	t.Run("no key and no base URL", func(t *testing.T) {
		_, polly := cliEnv(t, "", map[string]string{"OPENAI_API_KEY": ""})
		r := polly("-p", "hi")
		if r.code != 2 || !strings.Contains(r.stderr, "export OPENAI_API_KEY=") || !strings.Contains(r.stderr, "OPENAI_BASE_URL=http://localhost:11434/v1") {
			t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
		}
	})
	t.Run("unknown flag", func(t *testing.T) {
		_, polly := cliEnv(t, "", nil)
		r := polly("-p", "hi", "--frobnicate")
		if r.code != 2 || !strings.Contains(r.stderr, "frobnicate") || !strings.Contains(r.stderr, "Usage:") {
			t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
		}
	})
	t.Run("bad flag values", func(t *testing.T) {
		_, polly := cliEnv(t, "", nil)
		for _, args := range [][]string{
			{"-p", "hi", "--output-format", "xml"},
			{"-p", "hi", "--max-turns", "many"},
			{"-p", "hi", "--mode", "reckless"},
			{"-p", "hi", "--continue", "--session", "abc"},
			{"frobnicate"},
			{"-p", ""},
		} {
			if r := polly(args...); r.code != 2 {
				t.Errorf("%v: code=%d stderr=%q", args, r.code, r.stderr)
			}
		}
	})
	t.Run("broken config file", func(t *testing.T) {
		env, polly := cliEnv(t, "", nil)
		os.MkdirAll(filepath.Join(env.Dir, ".agent"), 0o755)
		// A presentation key: the only kind an untrusted project sets.
		os.WriteFile(filepath.Join(env.Dir, ".agent", "config.json"), []byte("{\n  \"tui\": {\"theme\": \"neon\"}\n}\n"), 0o644)
		r := polly("-p", "hi")
		if r.code != 2 || !strings.Contains(r.stderr, ".agent/config.json:2:") || !strings.Contains(r.stderr, "tui.theme") {
			t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
		}
	})
	t.Run("unreachable endpoint", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		env, polly := cliEnv(t, "http://"+addr+"/v1", nil)
		userConfig(t, env, `{"llm":{"max_retries":1}}`)
		r := polly("-p", "hi")
		if r.code != 1 || !strings.Contains(r.stderr, "network") || !strings.Contains(r.stderr, "unreachable") {
			t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
		}
	})
	t.Run("unknown persona", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		_, polly := cliEnv(t, srv.URL(), nil)
		r := polly("-p", "hi", "--persona", "wizard")
		if r.code != 2 || !strings.Contains(r.stderr, "coder") {
			t.Fatalf("code=%d stderr=%q", r.code, r.stderr)
		}
	})
}

func TestHeadlessAskModeDeniesWrites(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("write_file", `{"path":"x.txt","content":"x"}`), llmtest.Text("I could not write it."))
	env, polly := cliEnv(t, srv.URL(), nil)
	r := polly("-p", "write x.txt")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(env.Dir, "x.txt")); !os.IsNotExist(err) {
		t.Fatal("ask mode wrote a file in a headless run")
	}
	res := srv.Last().LastTurn()
	if !strings.Contains(res.Content, "permission denied") || !strings.Contains(res.Content, "--mode auto-edit") {
		t.Fatalf("tool result = %q", res.Content)
	}
	// --mode auto-edit allows it.
	srv.Push(llmtest.Call("write_file", `{"path":"x.txt","content":"x"}`), llmtest.Text("done"))
	if r := polly("-p", "write x.txt", "--mode", "auto-edit"); r.code != 0 {
		t.Fatalf("code=%d", r.code)
	}
	if _, err := os.Stat(filepath.Join(env.Dir, "x.txt")); err != nil {
		t.Fatal("auto-edit did not write the file")
	}
}

func TestVersionHelpInitConfig(t *testing.T) {
	env, polly := cliEnv(t, "", nil)
	if r := polly("--version"); r.code != 0 || r.stdout != "polly test\n" {
		t.Fatalf("%+v", r)
	}
	if r := polly("--help"); r.code != 0 || !strings.Contains(r.stdout, "--output-format") {
		t.Fatalf("%+v", r)
	}
	r := polly("init")
	if r.code != 0 || !strings.Contains(r.stdout, "created MEMORY.md") {
		t.Fatalf("%+v", r)
	}
	if _, err := os.Stat(filepath.Join(env.Home, ".agent", "workspace", "SOUL.md")); err != nil {
		t.Fatal(err)
	}
	if r := polly("init"); r.code != 0 || !strings.Contains(r.stdout, "nothing to create") {
		t.Fatalf("%+v", r)
	}
	r = polly("config")
	if r.code != 0 || !strings.Contains(r.stdout, "sk-…1234") || strings.Contains(r.stdout, "sk-test-1234") {
		t.Fatalf("config output leaks or lacks the masked key: %s", r.stdout)
	}
}

func TestHeadlessPersonaByIDOrName(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("coder here"), llmtest.Text("leadgen here"))
	_, polly := cliEnv(t, srv.URL(), nil)
	if r := polly("-p", "hi", "--persona", "coder"); r.code != 0 || r.stdout != "coder here\n" {
		t.Fatalf("%+v", r)
	}
	if sys := srv.Last().Messages[0].Content; !strings.Contains(sys, "You are **coder**") {
		t.Fatalf("system prompt is not the coder's: %.200q", sys)
	}
	if r := polly("-p", "hi", "--persona", "leadgen"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if sys := srv.Last().Messages[0].Content; !strings.Contains(sys, "You are **leadgen**") {
		t.Fatalf("system prompt is not leadgen's: %.200q", sys)
	}
}

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

// --debug writes a slog log of the run's events to .agent/polly.log, and
// a line per HTTP request of the provider client.
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
	for _, want := range []string{"level=INFO msg=\"polly started\"", "type=tool_finished", "type=text_delta agent=default bytes=", "type=done",
		"msg=\"llm request\" method=POST path=/v1/chat/completions sent="} {
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

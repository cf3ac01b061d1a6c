package hooks

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"polly/tools/sandbox/sandboxtest"
)

func newSet(t *testing.T, list []Hook) *Set {
	t.Helper()
	s, _, err := New(list, Options{Dir: t.TempDir(), Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func fire(t *testing.T, list []Hook, in Input, names ...string) Result {
	t.Helper()
	return newSet(t, list).Fire(context.Background(), in, names...)
}

func TestExitCodesAndOutput(t *testing.T) {
	dir := t.TempDir()
	stdin := filepath.Join(dir, "stdin.json")
	res := fire(t, []Hook{{Event: PreToolUse, Matcher: "Bash", Command: "cat > " + stdin + "; echo 'rm is not allowed' >&2; exit 2"}},
		Input{HookEventName: PreToolUse, SessionID: "s1", ToolName: "Bash", ToolUseID: "call_1", ToolInput: json.RawMessage(`{"command":"rm -rf x"}`)}, "Bash", "run_command")
	if !res.Block || res.Reason != "rm is not allowed" || len(res.Runs) != 1 || res.Runs[0].Outcome != "blocked" || res.Runs[0].ExitCode != 2 {
		t.Fatalf("exit 2: %+v", res)
	}
	var got map[string]any
	b, _ := os.ReadFile(stdin)
	if err := json.Unmarshal(b, &got); err != nil || got["hook_event_name"] != "PreToolUse" || got["tool_name"] != "Bash" ||
		got["session_id"] != "s1" || got["tool_use_id"] != "call_1" || got["tool_input"].(map[string]any)["command"] != "rm -rf x" ||
		got["cwd"] == "" || got["transcript_path"] == nil {
		t.Fatalf("stdin = %s (%v)", b, err)
	}

	res = fire(t, []Hook{{Event: UserPromptSubmit, Command: "echo 'the branch is main'"}}, Input{HookEventName: UserPromptSubmit, Prompt: "hi"})
	if res.Block || strings.Join(res.Context, "|") != "the branch is main" {
		t.Fatalf("exit 0 context: %+v", res)
	}
	// Plain stdout of a tool event is not context.
	if res := fire(t, []Hook{{Event: PostToolUse, Command: "echo noise"}}, Input{HookEventName: PostToolUse}, "Read"); len(res.Context) != 0 || res.Block {
		t.Fatalf("PostToolUse stdout: %+v", res)
	}

	res = fire(t, []Hook{{Event: PreToolUse, Command: "echo oops >&2; exit 3"}, {Event: PreToolUse, Command: "definitely-not-a-command-xyz"}},
		Input{HookEventName: PreToolUse}, "Write")
	if res.Block || len(res.Runs) != 2 || res.Runs[0].Outcome != "warning" || res.Runs[0].Message != "exit 3: oops" ||
		res.Runs[1].Outcome != "warning" || !strings.Contains(res.Runs[1].Message, "command not found") {
		t.Fatalf("other exits: %+v", res)
	}
	// Any other exit code with valid JSON: the JSON decides, no warning.
	res = fire(t, []Hook{{Event: PreToolUse, Command: `echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"json says no"}}'; exit 1`}},
		Input{HookEventName: PreToolUse}, "Bash")
	if !res.Block || res.Reason != "json says no" || res.Runs[0].Outcome != "blocked" {
		t.Fatalf("exit 1 with JSON: %+v", res)
	}
	// Exit 2 on an event that cannot block is a warning for the user.
	res = fire(t, []Hook{{Event: SessionStart, Command: "echo nope >&2; exit 2"}}, Input{HookEventName: SessionStart}, "startup")
	if res.Block || res.Runs[0].Outcome != "warning" || !strings.Contains(res.Runs[0].Message, "cannot block") {
		t.Fatalf("SessionStart exit 2: %+v", res)
	}
}

func TestJSONOutput(t *testing.T) {
	tests := []struct {
		out        string
		block      bool
		permission string
		reason     string
		context    string
		stop       bool
		updated    string
	}{
		{`{"decision":"block","reason":"tests fail"}`, true, "deny", "tests fail", "", false, ""},
		{`{"decision":"approve"}`, false, "allow", "", "", false, ""},
		{`{"continue":false,"stopReason":"halt"}`, false, "", "", "", true, ""},
		{`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no secrets"}}`, true, "deny", "no secrets", "", false, ""},
		{`{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls -la"}}}`, false, "allow", "", "", false, `{"command":"ls -la"}`},
		{`{"hookSpecificOutput":{"permissionDecision":"ask","additionalContext":"careful"}}`, false, "ask", "", "careful", false, ""},
		{`{"hookSpecificOutput":{"permissionDecision":"defer"}}`, false, "", "", "", false, ""},
		{`{"suppressOutput":true,"systemMessage":"hello user"}`, false, "", "", "", false, ""},
	}
	for _, tt := range tests {
		res := fire(t, []Hook{{Event: PreToolUse, Command: "echo '" + tt.out + "'"}}, Input{HookEventName: PreToolUse}, "Bash")
		if res.Block != tt.block || (tt.block && res.Permission != "deny" && tt.permission != "") || (!tt.block && res.Permission != tt.permission) ||
			(tt.reason != "" && res.Reason != tt.reason) || strings.Join(res.Context, "") != tt.context || res.Stop != tt.stop ||
			string(res.UpdatedInput) != tt.updated {
			t.Errorf("%s: %+v", tt.out, res)
		}
	}
	res := fire(t, []Hook{{Event: Stop, Command: `echo '{"systemMessage":"lint is clean","continue":false,"stopReason":"done for today"}'`}}, Input{HookEventName: Stop})
	if !res.Stop || res.StopReason != "done for today" || strings.Join(res.Messages, "") != "lint is clean" || res.Runs[0].Outcome != "stopped" {
		t.Fatalf("stop: %+v", res)
	}
	// JSON with a wrong type is a warning, not a decision.
	res = fire(t, []Hook{{Event: PreToolUse, Command: `echo '{"continue":"no","decision":"block"}'`}}, Input{HookEventName: PreToolUse}, "Bash")
	if res.Block || res.Stop || res.Runs[0].Outcome != "warning" || !strings.Contains(res.Runs[0].Message, "schema") {
		t.Fatalf("bad schema: %+v", res)
	}
	// deny beats allow across hooks.
	res = fire(t, []Hook{
		{Event: PreToolUse, Command: `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`},
		{Event: PreToolUse, Command: `echo '{"hookSpecificOutput":{"permissionDecision":"deny"}}'`},
	}, Input{HookEventName: PreToolUse}, "Bash")
	if !res.Block || res.Permission != "deny" {
		t.Fatalf("deny must win: %+v", res)
	}
	// Notification discards systemMessage and continue.
	res = fire(t, []Hook{{Event: Notification, Command: `echo '{"continue":false,"systemMessage":"x"}'`}}, Input{HookEventName: Notification}, "idle_prompt")
	if res.Stop || len(res.Messages) != 0 {
		t.Fatalf("Notification: %+v", res)
	}
}

// Matchers follow Claude Code's rules: exact names (lists with | or ,),
// otherwise an unanchored regular expression; Polly's own tool names match
// too. Events without matcher support ignore the matcher.
func TestMatchers(t *testing.T) {
	s := newSet(t, []Hook{
		{Event: PreToolUse, Matcher: "Bash", Command: "true"},
		{Event: PreToolUse, Matcher: "Edit|Write", Command: "true"},
		{Event: PreToolUse, Matcher: "Edit, Write", Command: "true"},
		{Event: PreToolUse, Matcher: "mcp__github__.*", Command: "true"},
		{Event: PreToolUse, Matcher: "*", Command: "true"},
		{Event: PreToolUse, Matcher: "", Command: "true"},
		{Event: PreToolUse, Matcher: "Read", Command: "true"},        // exact: not ReadMe
		{Event: PreToolUse, Matcher: "^Notebook", Command: "true"},   // a regular expression
		{Event: PreToolUse, Matcher: "mcp__github", Command: "true"}, // exact, so it matches no tool
		{Event: Stop, Matcher: "whatever", Command: "true"},          // Stop has no matcher support
	})
	count := func(names ...string) int {
		n := 0
		for _, h := range s.hooks {
			if h.Event == PreToolUse && h.match.matches(names) {
				n++
			}
		}
		return n
	}
	for _, tt := range []struct {
		names []string
		want  int
	}{
		{[]string{"Bash", "run_command"}, 3}, {[]string{"Edit", "edit_file"}, 4}, {[]string{"Write", "write_file"}, 4},
		{[]string{"mcp__github__search"}, 3}, {[]string{"Read", "read_file"}, 3}, {[]string{"ReadMe"}, 2},
		{[]string{"NotebookEdit"}, 3}, {[]string{"list_dir"}, 2},
	} {
		if got := count(tt.names...); got != tt.want {
			t.Errorf("%v matched %d hooks, want %d", tt.names, got, tt.want)
		}
	}
	if res := s.Fire(context.Background(), Input{HookEventName: Stop}); len(res.Runs) != 1 {
		t.Fatalf("Stop ignores its matcher: %+v", res)
	}
	if _, _, err := New([]Hook{{Event: PreToolUse, Matcher: "(", Command: "true"}}, Options{}); err == nil {
		t.Fatal("a broken matcher must be an error")
	}
	if s.Has(PostToolUse) || !s.Has(PreToolUse) || (*Set)(nil).Has(PreToolUse) {
		t.Fatal("Has")
	}
}

// "if" narrows a handler to calls matching one permission rule.
func TestIfRule(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ran")
	s := newSet(t, []Hook{
		{Event: PreToolUse, Matcher: "Bash", If: "Bash(git *)", Command: "echo git >> " + log},
		{Event: PreToolUse, Matcher: "Edit|Write", If: "Edit(*.ts)", Command: "echo ts >> " + log},
	})
	for _, call := range []struct {
		name, input string
	}{
		{"Bash", `{"command":"npm test && git push"}`}, {"Bash", `{"command":"FOO=1 git status"}`}, {"Bash", `{"command":"ls"}`},
		{"Edit", `{"file_path":"/p/src/a.ts"}`}, {"Edit", `{"file_path":"/p/src/a.go"}`}, {"Write", `{"file_path":"/p/b.ts"}`},
	} {
		s.Fire(context.Background(), Input{HookEventName: PreToolUse, ToolName: call.name, ToolInput: json.RawMessage(call.input)}, call.name)
	}
	b, _ := os.ReadFile(log)
	if got := strings.Fields(string(b)); strings.Join(got, " ") != "git git ts" {
		t.Fatalf("ran: %q", got)
	}
}

// Events Polly never fires, and handler types it does not run, are
// accepted and reported once as unused.
func TestUnusedHooksAreReported(t *testing.T) {
	s, warnings, err := New([]Hook{
		{Event: "PermissionRequest", Command: "true", Source: "~/.claude/settings.json"},
		{Event: "ConfigChange", Command: "true", Source: "~/.claude/settings.json"},
		{Event: Stop, Type: "prompt", Source: ".claude/settings.json"},
		{Event: PreToolUse, Command: "true", Source: "a"},
		{Event: PreToolUse, Command: "true", Source: "b"}, // the same handler twice runs once
	}, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(warnings, "\n")
	if s.Len() != 1 || !strings.Contains(all, "Polly has no moment for PermissionRequest") || !strings.Contains(all, "ConfigChange") ||
		!strings.Contains(all, `Polly does not run "prompt" hooks`) || len(warnings) != 3 {
		t.Fatalf("len=%d warnings:\n%s", s.Len(), all)
	}
}

// A hook that hangs is killed at its timeout with everything it started.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	res := fire(t, []Hook{{Event: PreToolUse, Command: "sleep 300 & echo $! > " + pidFile + "; wait", Timeout: 300 * time.Millisecond}},
		Input{HookEventName: PreToolUse}, "Bash")
	if res.Block || len(res.Runs) != 1 || res.Runs[0].Outcome != "timeout" || !strings.Contains(res.Runs[0].Message, "300ms") {
		t.Fatalf("timeout: %+v", res)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("Fire waited %s for a hook with a 300ms timeout", time.Since(start))
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for sandboxtest.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the hook's background sleep (pid %d) outlived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Bad input: a hook printing 10 MB is drained and cut; the event goes on.
func TestHugeOutputIsCut(t *testing.T) {
	res := fire(t, []Hook{{Event: UserPromptSubmit, Command: "head -c 10000000 /dev/zero | tr '\\0' x; echo"}}, Input{HookEventName: UserPromptSubmit})
	if res.Block || len(res.Context) != 1 || len(res.Context[0]) > maxText+200 || !strings.Contains(res.Context[0], "characters of the hook's output cut") {
		t.Fatalf("runs=%+v context=%d bytes", res.Runs, len(strings.Join(res.Context, "")))
	}
}

func TestCancelStopsHooks(t *testing.T) {
	s := newSet(t, []Hook{{Event: Stop, Command: "sleep 300"}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := s.Fire(ctx, Input{HookEventName: Stop})
	if res.Block || res.Runs[0].Outcome != "warning" || res.Runs[0].Message != "cancelled" {
		t.Fatalf("%+v", res)
	}
}

// An http hook gets the event as a POST body with only the allowed
// variables in its headers; its JSON answer decides like a command's.
func TestHTTPHook(t *testing.T) {
	var body []byte
	var auth, other string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		auth, other = r.Header.Get("Authorization"), r.Header.Get("X-Other")
		w.Write([]byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"server says no"}}`))
	}))
	defer srv.Close()
	s, _, err := New([]Hook{{Event: PreToolUse, Type: "http", URL: srv.URL, AllowedEnvVars: []string{"MY_TOKEN"},
		Headers: map[string]string{"Authorization": "Bearer $MY_TOKEN", "X-Other": "${HIDDEN}"}}},
		Options{Dir: t.TempDir(), Env: []string{"MY_TOKEN=tok-1", "HIDDEN=leak"}})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Fire(context.Background(), Input{HookEventName: PreToolUse, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls"}`)}, "Bash")
	if !res.Block || res.Reason != "server says no" || auth != "Bearer tok-1" || other != "" || !strings.Contains(string(body), `"tool_name":"Bash"`) {
		t.Fatalf("res=%+v auth=%q other=%q body=%s", res, auth, other, body)
	}
	// A failing server is a warning and decides nothing.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }))
	defer bad.Close()
	s2 := newSet(t, []Hook{{Event: PreToolUse, Type: "http", URL: bad.URL}})
	if res := s2.Fire(context.Background(), Input{HookEventName: PreToolUse}, "Bash"); res.Block || res.Runs[0].Outcome != "warning" {
		t.Fatalf("500: %+v", res)
	}
}

// An async hook does not hold the event; its additionalContext is
// delivered afterwards, and Close kills one still running.
func TestAsyncHook(t *testing.T) {
	s := newSet(t, []Hook{{Event: PostToolUse, Async: true,
		Command: `sleep 0.2; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"tests passed"},"decision":"block"}'`}})
	start := time.Now()
	res := s.Fire(context.Background(), Input{HookEventName: PostToolUse}, "Write")
	if time.Since(start) > 150*time.Millisecond || res.Block || len(res.Runs) != 1 || res.Runs[0].Outcome != "async" {
		t.Fatalf("async waited or decided: %s %+v", time.Since(start), res)
	}
	deadline := time.Now().Add(10 * time.Second)
	var got []Delivery
	for len(got) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		got = s.TakeAsync()
	}
	if len(got) != 1 || strings.Join(got[0].Context, "") != "tests passed" {
		t.Fatalf("delivered %+v", got)
	}
	slow := newSet(t, []Hook{{Event: PostToolUse, Async: true, Command: "sleep 300"}})
	slow.Fire(context.Background(), Input{HookEventName: PostToolUse}, "Write")
	start = time.Now()
	slow.Close()
	if time.Since(start) > 10*time.Second {
		t.Fatal("Close did not kill the async hook")
	}
}

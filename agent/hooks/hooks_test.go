package hooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"polly/tools/sandbox/sandboxtest"
)

func fire(t *testing.T, list []Hook, in Input, target string) Result {
	t.Helper()
	s, err := New(list, Options{Dir: t.TempDir(), Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	return s.Fire(context.Background(), in, target)
}

func TestExitCodesAndOutput(t *testing.T) {
	dir := t.TempDir()
	stdin := filepath.Join(dir, "stdin.json")
	res := fire(t, []Hook{{Event: PreToolUse, Matcher: "Bash", Command: "cat > " + stdin + "; echo 'rm is not allowed' >&2; exit 2"}},
		Input{HookEventName: PreToolUse, SessionID: "s1", ToolName: "run_command", ToolInput: json.RawMessage(`{"command":"rm -rf x"}`)}, "run_command")
	if !res.Block || res.Reason != "rm is not allowed" || len(res.Runs) != 1 || res.Runs[0].Outcome != "blocked" || res.Runs[0].ExitCode != 2 {
		t.Fatalf("exit 2: %+v", res)
	}
	var got map[string]any
	b, _ := os.ReadFile(stdin)
	if err := json.Unmarshal(b, &got); err != nil || got["hook_event_name"] != "PreToolUse" || got["tool_name"] != "run_command" ||
		got["session_id"] != "s1" || got["tool_input"].(map[string]any)["command"] != "rm -rf x" || got["cwd"] == "" {
		t.Fatalf("stdin = %s (%v)", b, err)
	}

	res = fire(t, []Hook{{Event: UserPromptSubmit, Command: "echo 'the branch is main'"}}, Input{HookEventName: UserPromptSubmit, Prompt: "hi"}, "")
	if res.Block || strings.Join(res.Context, "|") != "the branch is main" {
		t.Fatalf("exit 0 context: %+v", res)
	}
	// Plain stdout of a tool event is not context.
	if res := fire(t, []Hook{{Event: PostToolUse, Command: "echo noise"}}, Input{HookEventName: PostToolUse}, "read_file"); len(res.Context) != 0 || res.Block {
		t.Fatalf("PostToolUse stdout: %+v", res)
	}

	res = fire(t, []Hook{{Event: PreToolUse, Command: "echo oops >&2; exit 3"}, {Event: PreToolUse, Command: "definitely-not-a-command-xyz"}},
		Input{HookEventName: PreToolUse}, "write_file")
	if res.Block || len(res.Runs) != 2 || res.Runs[0].Outcome != "warning" || res.Runs[0].Message != "exit 3: oops" ||
		res.Runs[1].Outcome != "warning" || !strings.Contains(res.Runs[1].Message, "command not found") {
		t.Fatalf("other exits: %+v", res)
	}
}

func TestJSONOutput(t *testing.T) {
	tests := []struct {
		out        string
		block      bool
		permission string
		reason     string
		context    string
	}{
		{`{"decision":"block","reason":"tests fail"}`, true, "", "tests fail", ""},
		{`{"continue":false,"stopReason":"halt"}`, true, "", "halt", ""},
		{`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no secrets"}}`, true, "deny", "no secrets", ""},
		{`{"hookSpecificOutput":{"permissionDecision":"allow"}}`, false, "allow", "", ""},
		{`{"hookSpecificOutput":{"permissionDecision":"ask","additionalContext":"careful"}}`, false, "ask", "", "careful"},
	}
	for _, tt := range tests {
		res := fire(t, []Hook{{Event: PreToolUse, Command: "echo '" + tt.out + "'"}}, Input{HookEventName: PreToolUse}, "run_command")
		if res.Block != tt.block || res.Permission != tt.permission || (tt.reason != "" && res.Reason != tt.reason) || strings.Join(res.Context, "") != tt.context {
			t.Errorf("%s: %+v", tt.out, res)
		}
	}
	// deny beats allow across hooks.
	res := fire(t, []Hook{
		{Event: PreToolUse, Command: `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`},
		{Event: PreToolUse, Command: `echo '{"hookSpecificOutput":{"permissionDecision":"deny"}}'`},
	}, Input{HookEventName: PreToolUse}, "run_command")
	if !res.Block || res.Permission != "deny" {
		t.Fatalf("deny must win: %+v", res)
	}
}

func TestMatchers(t *testing.T) {
	s, err := New([]Hook{
		{Event: PreToolUse, Matcher: "Bash", Command: "true"},
		{Event: PreToolUse, Matcher: "Edit|Write", Command: "true"},
		{Event: PreToolUse, Matcher: "mcp__github__.*", Command: "true"},
		{Event: PreToolUse, Matcher: "*", Command: "true"},
		{Event: PreToolUse, Matcher: "", Command: "true"},
		{Event: PreToolUse, Matcher: "read", Command: "true"}, // anchored: not read_file
	}, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	count := func(tool string) int {
		n := 0
		for _, h := range s.hooks {
			if h.matches(tool) {
				n++
			}
		}
		return n
	}
	for tool, want := range map[string]int{"run_command": 3, "edit_file": 3, "write_file": 3, "mcp__github__search": 3, "read_file": 2, "grep": 2} {
		if got := count(tool); got != want {
			t.Errorf("%s matched %d hooks, want %d", tool, got, want)
		}
	}
	if _, err := New([]Hook{{Event: PreToolUse, Matcher: "(", Command: "true"}}, Options{}); err == nil {
		t.Fatal("a broken matcher must be an error")
	}
	if s.Has(PostToolUse) || !s.Has(PreToolUse) || (*Set)(nil).Has(PreToolUse) {
		t.Fatal("Has")
	}
}

// A hook that hangs is killed at its timeout with everything it started.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	res := fire(t, []Hook{{Event: PreToolUse, Command: "sleep 300 & echo $! > " + pidFile + "; wait", Timeout: 300 * time.Millisecond}},
		Input{HookEventName: PreToolUse}, "run_command")
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

func TestCancelStopsHooks(t *testing.T) {
	s, _ := New([]Hook{{Event: Stop, Command: "sleep 300"}}, Options{Dir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := s.Fire(ctx, Input{HookEventName: Stop}, "")
	if res.Block || res.Runs[0].Outcome != "warning" || res.Runs[0].Message != "cancelled" {
		t.Fatalf("%+v", res)
	}
}

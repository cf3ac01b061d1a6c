package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/agent/llmtest"
	"polly/tools/sandbox/sandboxtest"
)

// userConfig writes the user's config file under env.Home.
func userConfig(t *testing.T, env Env, text string) {
	t.Helper()
	writeFile(t, filepath.Join(env.Home, ".config/polly/config.json"), text)
}

func hookConfig(event, matcher, command string, timeout int) string {
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{event: []any{map[string]any{
		"matcher": matcher, "hooks": []any{map[string]any{"type": "command", "command": command, "timeout": timeout}}}}}})
	return string(b)
}

// Must show (issue 15 #3): a Claude Code hooks block whose PreToolUse
// matcher is "Bash" fires for run_command; exiting 2 stops the command
// (nothing happens on disk, even in yolo) and the hook's stderr is what the
// model receives as the tool result.
func TestPreToolUseHookBlocksRunCommand(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("run_command", `{"command":"touch created-by-command.txt"}`),
		llmtest.Text("understood"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	seen := filepath.Join(env.Dir, ".hook-stdin.json") // hooks run in the sandbox: they write the project
	// The block exactly as Claude Code documents it.
	userConfig(t, env, `{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          { "type": "command", "command": "cat > `+seen+`; echo 'BLOCKED-BY-HOOK: no new files today' >&2; exit 2", "timeout": 30 }
        ]
      }
    ]
  }
}`)
	r := polly("-p", "make a file", "--yolo")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(env.Dir, "created-by-command.txt")); err == nil {
		t.Fatal("the blocked command ran")
	}
	got := srv.Last().LastTurn()
	if got.Role != "tool" || !strings.Contains(got.Content, "BLOCKED-BY-HOOK: no new files today") {
		t.Fatalf("the model did not get the hook's stderr: %+v", got)
	}
	var in map[string]any
	b, _ := os.ReadFile(seen)
	// Claude Code's names and shapes: Bash, its tool_use_id, the mode in
	// Claude Code's words, a session id and transcript from the first call.
	if err := json.Unmarshal(b, &in); err != nil || in["tool_name"] != "Bash" || in["hook_event_name"] != "PreToolUse" ||
		in["tool_input"].(map[string]any)["command"] != "touch created-by-command.txt" || in["cwd"] != env.Dir ||
		in["tool_use_id"] != "call_1" || in["permission_mode"] != "bypassPermissions" || in["session_id"] == "" ||
		!strings.HasSuffix(in["transcript_path"].(string), ".jsonl") {
		t.Fatalf("hook stdin = %s (%v)", b, err)
	}
	if !strings.Contains(r.stderr, "↪ hook PreToolUse Bash: blocked") {
		t.Fatalf("no hook line in the progress:\n%s", r.stderr)
	}
}

// PostToolUse receives the tool's response as JSON; a hook command that
// does not exist is a warning and the tool call goes on.
func TestPostToolUseGetsTheResponse(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("run_command", `{"command":"echo made > out.txt; echo RESPONSE-MARKER"}`),
		llmtest.Text("done"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	seen := filepath.Join(env.Dir, ".hook-post.json")
	userConfig(t, env, `{"hooks": {
  "PostToolUse": [{"matcher": "run_command", "hooks": [{"type": "command", "command": "cat > `+seen+`"}]}],
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "no-such-hook-command-42"}]}]
}}`)
	r := polly("-p", "write out.txt", "--output-format", "stream-json", "--yolo")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(env.Dir, "out.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the command did not run after the missing hook: %q %v", b, err)
	}
	if !strings.Contains(r.stdout, `"type":"notice"`) || !strings.Contains(r.stdout, "command not found") {
		t.Fatalf("no warning for the missing hook command:\n%s", r.stdout)
	}
	var in struct {
		Event    string         `json:"hook_event_name"`
		Tool     string         `json:"tool_name"`
		Response map[string]any `json:"tool_response"`
	}
	b, _ := os.ReadFile(seen)
	if err := json.Unmarshal(b, &in); err != nil || in.Event != "PostToolUse" || in.Tool != "Bash" ||
		!strings.Contains(in.Response["stdout"].(string), "RESPONSE-MARKER") || in.Response["interrupted"] != false {
		t.Fatalf("PostToolUse stdin = %s (%v)", b, err)
	}
	// stream-json carries each hook run as a "hook" event.
	var hooks []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var obj map[string]any
		if json.Unmarshal([]byte(l), &obj) == nil && obj["type"] == "hook" {
			hooks = append(hooks, obj)
		}
	}
	if len(hooks) != 2 || hooks[0]["event"] != "PreToolUse" || hooks[0]["outcome"] != "warning" || hooks[1]["event"] != "PostToolUse" ||
		hooks[1]["outcome"] != "ok" || hooks[1]["target"] != "Bash" {
		t.Fatalf("hook events = %v", hooks)
	}
}

// UserPromptSubmit's stdout reaches the model with the prompt; SessionStart
// adds context too; a UserPromptSubmit exit 2 drops the prompt before any
// request or storage.
func TestPromptHooks(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("ok"))
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, `{"hooks": {
  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "grep -q SECRET && { echo 'prompt holds a secret' >&2; exit 2; }; echo CONTEXT-FROM-HOOK: branch main"}]}],
  "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo SESSION-CONTEXT"}]}]
}}`)
	r := polly("-p", "what branch?")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	msgs := srv.Last().Messages
	var joined []string
	for _, m := range msgs[1:] {
		joined = append(joined, m.Role+":"+m.Content)
	}
	all := strings.Join(joined, "\n")
	if !strings.Contains(all, "user:what branch?") || !strings.Contains(all, "CONTEXT-FROM-HOOK: branch main") || !strings.Contains(all, "SESSION-CONTEXT") {
		t.Fatalf("hook context not sent:\n%s", all)
	}

	r = polly("-p", "here is my SECRET token")
	if r.code != 0 || srv.Calls() != 1 || !strings.Contains(r.stderr, "prompt blocked by a UserPromptSubmit hook: prompt holds a secret") {
		t.Fatalf("blocked prompt: code=%d calls=%d stderr=%s", r.code, srv.Calls(), r.stderr)
	}
	r = polly("sessions")
	if strings.Contains(r.stdout, "SECRET") {
		t.Fatalf("a blocked prompt was stored:\n%s", r.stdout)
	}
}

// A Stop hook that exits 2 sends the agent back to work with its reason;
// the second time (stop_hook_active) it lets it stop.
func TestStopHookContinues(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("first answer"), llmtest.Text("second answer"))
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, hookConfig("Stop", "", `grep -q '"stop_hook_active":true' && exit 0; echo 'run the tests first' >&2; exit 2`, 10))
	r := polly("-p", "fix it")
	if r.code != 0 || r.stdout != "second answer\n" || srv.Calls() != 2 {
		t.Fatalf("code=%d stdout=%q calls=%d stderr=%s", r.code, r.stdout, srv.Calls(), r.stderr)
	}
	if last := srv.Last().LastTurn(); last.Role != "user" || !strings.Contains(last.Content, "run the tests first") {
		t.Fatalf("the reason did not reach the model: %+v", last)
	}
}

// A hook that hangs is killed at its timeout, with every process it
// started, and the run goes on.
func TestHangingHookIsKilled(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("list_dir", `{"path":"."}`), llmtest.Text("listed"))
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, hookConfig("PreToolUse", "list_dir", "setsid sleep 300.4243 & sleep 300.4242", 1))
	// (list_dir has no Claude Code twin: matchers use its Polly name.)
	r := polly("-p", "list")
	if r.code != 0 || r.stdout != "listed\n" || !strings.Contains(r.stderr, "killed after its timeout of 1s") {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		live := sandboxtest.Living(func(p sandboxtest.Proc) bool { return strings.HasPrefix(p.Cmdline, "sleep\x00300.424") })
		if len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the hook are still alive: %+v", live)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Bad input: a hooks block with a wrong type stops Polly with exit 2
// naming the file, the line and the field; project hooks of an untrusted
// project are ignored with a warning.
func TestHooksConfigErrorsAndTrust(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("list_dir", `{"path":"."}`), llmtest.Text("ok"))
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, "{\n  \"hooks\": {\n    \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"command\": \"true\", \"timeout\": \"60\"}]}]\n  }\n}\n")
	r := polly("-p", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "config.json:3:") || !strings.Contains(r.stderr, "hooks.PreToolUse[0].hooks[0].timeout: expected a number") {
		t.Fatalf("wrong type: code=%d stderr=%s", r.code, r.stderr)
	}
	userConfig(t, env, `{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}`)
	if r := polly("-p", "hi"); r.code != 2 || !strings.Contains(r.stderr, "hooks.PreToolUse[0].matcher") || !strings.Contains(r.stderr, "not a valid regular expression") {
		t.Fatalf("bad matcher: code=%d stderr=%s", r.code, r.stderr)
	}
	userConfig(t, env, `{"hooks": {"PreToolUze": []}}`)
	if r := polly("-p", "hi"); r.code != 2 || !strings.Contains(r.stderr, `did you mean "PreToolUse"`) {
		t.Fatalf("bad event: code=%d stderr=%s", r.code, r.stderr)
	}
	// Every event of Claude Code's reference is accepted; one Polly never
	// fires is reported as unused, never an exit 2.
	userConfig(t, env, `{"hooks": {"PermissionRequest": [{"hooks": [{"type": "command", "command": "true"}]}]}}`)
	if r := polly("-p", "hi"); r.code != 0 || !strings.Contains(r.stderr, "Polly has no moment for PermissionRequest") {
		t.Fatalf("unused event: code=%d stderr=%s", r.code, r.stderr)
	}
	srv.Push(llmtest.Call("list_dir", `{"path":"."}`), llmtest.Text("ok"))

	userConfig(t, env, `{}`)
	marker := filepath.Join(env.Dir, "project-hook-ran")
	writeFile(t, filepath.Join(env.Dir, ".agent/config.json"), hookConfig("PreToolUse", "", "touch "+marker, 10))
	r = polly("-p", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "are ignored: hooks") {
		t.Fatalf("untrusted project: code=%d stderr=%s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an untrusted project's hook ran")
	}
}

// Bad input: a hook that prints 10 MB is drained, its text cut at Claude
// Code's 10,000 characters, and the run goes on with the rest intact.
func TestHookPrintingTenMegabytes(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("still fine"))
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, hookConfig("UserPromptSubmit", "", "head -c 10000000 /dev/zero | tr '\\0' x; echo", 30))
	r := polly("-p", "hello")
	if r.code != 0 || r.stdout != "still fine\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	var sent int
	for _, m := range srv.Last().Messages {
		sent += len(m.Content)
	}
	if all := srv.Last().Raw; sent > 200_000 || !strings.Contains(string(all), "characters of the hook's output cut") || !strings.Contains(string(all), "hello") {
		t.Fatalf("%d characters sent; the hook's output was not cut", sent)
	}
}

package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// needJQ fails the test when jq is missing: the hooks below are the
// documented Claude Code examples, which read their input with jq (CI
// installs it, see .ci/run).
func needJQ(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq is needed by this test (apt-get install jq)")
	}
}

// claudeSettings is a hooks block as a Claude Code user has it in
// .claude/settings.json: a PreToolUse deny for rm -rf, a PreToolUse
// updatedInput rewrite that stamps a header on every new file, a
// PostToolUse formatter that reads .tool_input.file_path with jq, a Stop
// hook that sends the agent back once, a Notification entry, a SessionEnd
// entry, plus what Polly accepts without running (a prompt hook, an event
// it has no moment for, fields it does not know).
const claudeSettings = `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {"allow": ["Bash(go test:*)"]},
  "env": {"FOO": "bar"},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "jq -r .tool_input.command | grep -q 'rm -rf' && jq -n '{hookSpecificOutput: {hookEventName: \"PreToolUse\", permissionDecision: \"deny\", permissionDecisionReason: \"Destructive command blocked by hook\"}}' || exit 0",
            "statusMessage": "checking the command"
          }
        ]
      },
      {
        "matcher": "Write",
        "hooks": [
          {
            "type": "command",
            "command": "jq '{hookSpecificOutput: {hookEventName: \"PreToolUse\", permissionDecision: \"allow\", updatedInput: (.tool_input + {content: (\"// Copyright the authors.\\n\\n\" + .tool_input.content)})}}'"
          }
        ]
      }
    ],
    "PostToolUse": [
      {
        "matcher": "Write|Edit",
        "hooks": [
          { "type": "command", "command": "jq -r '.tool_input.file_path' | xargs gofmt -w", "timeout": 30 },
          { "type": "command", "command": "jq -c '{tool_name, tool_use_id, tool_response}' >> \"$CLAUDE_PROJECT_DIR\"/post.log" }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          { "type": "command", "command": "jq -e .stop_hook_active >/dev/null && exit 0; echo 'Run the tests before you stop.' >&2; exit 2" },
          { "type": "prompt", "prompt": "Evaluate if Claude should stop: $ARGUMENTS" }
        ]
      }
    ],
    "Notification": [
      { "matcher": "idle_prompt", "hooks": [ { "type": "command", "command": "jq -r '.notification_type + \": \" + .message' >> \"$CLAUDE_PROJECT_DIR\"/notified.log" } ] }
    ],
    "SessionEnd": [
      { "hooks": [ { "type": "command", "command": "jq -r '.reason + \" \" + .session_id' >> \"$CLAUDE_PROJECT_DIR\"/ended.log" } ] }
    ],
    "PermissionRequest": [
      { "matcher": "Bash", "hooks": [ { "type": "command", "command": "true", "once": true, "shell": "bash", "retries": 3 } ] }
    ]
  }
}`

// Must show (issue 28): a real Claude Code hooks block works unchanged —
// checked on what the model received and on what landed on disk.
func TestClaudeCodeHooksBlock(t *testing.T) {
	needJQ(t)
	srv := llmtest.NewServer(t,
		llmtest.Call("write_file", `{"path":"main.go","content":"package main\nfunc main(){\nprintln( \"hi\")\n}\n"}`),
		llmtest.Call("run_command", `{"command":"rm -rf build"}`),
		llmtest.Text("All done."),
		llmtest.Text("Tests pass; done."),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	writeFile(t, filepath.Join(env.Dir, ".claude/settings.json"), claudeSettings)
	writeFile(t, filepath.Join(env.Dir, "build/keep.txt"), "precious")
	userConfig(t, env, `{"notify_after_seconds": 0}`)

	r := polly("-p", "write a hello world", "--yolo", "--trust")
	if r.code != 0 || r.stdout != "Tests pass; done.\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	// updatedInput stamped the header, then the formatter reformatted the file.
	b, _ := os.ReadFile(filepath.Join(env.Dir, "main.go"))
	if want := "// Copyright the authors.\n\npackage main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"; string(b) != want {
		t.Fatalf("main.go on disk:\n%s\nwant:\n%s", b, want)
	}
	// The deny: nothing removed, and the model got the hook's reason.
	if _, err := os.Stat(filepath.Join(env.Dir, "build/keep.txt")); err != nil {
		t.Fatalf("the denied rm -rf ran: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := reqs[2].LastTurn(); got.Role != "tool" || !strings.Contains(got.Content, "Destructive command blocked by hook") {
		t.Fatalf("the model did not get the deny reason: %+v", got)
	}
	// The Stop hook's stderr sent the agent back once.
	if got := reqs[3].LastTurn(); got.Role != "user" || !strings.Contains(got.Content, "Run the tests before you stop.") {
		t.Fatalf("the Stop hook's reason did not reach the model: %+v", got)
	}
	// PostToolUse fired for the write that ran, in Claude Code's shape, and
	// not for the denied command.
	post, _ := os.ReadFile(filepath.Join(env.Dir, "post.log"))
	lines := strings.Split(strings.TrimSpace(string(post)), "\n")
	var first struct {
		ToolName  string         `json:"tool_name"`
		ToolUseID string         `json:"tool_use_id"`
		Response  map[string]any `json:"tool_response"`
	}
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.ToolName != "Write" || first.ToolUseID != "call_1" ||
		first.Response["filePath"] != filepath.Join(env.Dir, "main.go") || first.Response["success"] != true {
		t.Fatalf("post.log:\n%s", post)
	}
	// Notification (idle_prompt) at the end of the turn; SessionEnd at exit.
	if n, _ := os.ReadFile(filepath.Join(env.Dir, "notified.log")); !strings.HasPrefix(string(n), "idle_prompt: ") {
		t.Fatalf("notified.log = %q", n)
	}
	if e, _ := os.ReadFile(filepath.Join(env.Dir, "ended.log")); !strings.HasPrefix(string(e), "other ") || len(strings.TrimSpace(string(e))) <= 6 {
		t.Fatalf("ended.log = %q", e)
	}
	// The deny's statusMessage names its line in the progress.
	if !strings.Contains(r.stderr, "↪ hook PreToolUse Bash: blocked checking the command") {
		t.Fatalf("no status message line:\n%s", r.stderr)
	}
	// Accepted but unused: said once, never an exit 2.
	for _, want := range []string{"Polly has no moment for PermissionRequest", `Polly does not run "prompt" hooks`, `unknown field "retries" ignored`} {
		if strings.Count(r.stderr, want) != 1 {
			t.Fatalf("want %q once in:\n%s", want, r.stderr)
		}
	}
	// The transcript export holds the Write call under its Claude Code name.
	var tp string
	if m := transcriptUse(t, env.Dir); m != "" {
		tp = m
	}
	if tp == "" {
		t.Fatal("no Write tool_use in the transcript export")
	}
}

// transcriptUse finds the file_path of a Write tool_use in the session's
// JSONL export.
func transcriptUse(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, ".agent/transcripts/*.jsonl"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				Type    string `json:"type"`
				Message struct {
					Content json.RawMessage `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "assistant" {
				continue
			}
			var blocks []struct {
				Type  string         `json:"type"`
				Name  string         `json:"name"`
				Input map[string]any `json:"input"`
			}
			json.Unmarshal(line.Message.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool_use" && b.Name == "Write" {
					fh.Close()
					p, _ := b.Input["file_path"].(string)
					return p
				}
			}
		}
		fh.Close()
	}
	return ""
}

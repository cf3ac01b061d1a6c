package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// Must show (issue 28 #6): command files from .claude/commands,
// .opencode/command and ~/.claude/commands run headless as
// `polly -p "/name args"`: the model gets the prompt with the arguments in
// place, allowed-tools are pre-approved for that turn (a command that
// would ask runs in ask mode), an opencode "agent" picks the persona; a
// missing argument sends and stores nothing (exit 2); a file with broken
// front matter is skipped with a warning and the others work.
func TestCustomCommandsHeadless(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("run_command", `{"command":"touch reviewed-42"}`), llmtest.Text("reviewed"),
		llmtest.Text("standup written"),
		llmtest.Text("tests run"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	writeFile(t, filepath.Join(env.Dir, ".claude/commands/review.md"),
		"---\ndescription: Review a pull request\nargument-hint: [pr] [priority]\nallowed-tools: Bash(touch:*)\n---\nReview PR #$1 at priority $2, then run `touch reviewed-$1`.\n")
	writeFile(t, filepath.Join(env.Home, ".claude/commands/standup.md"), "Write my standup.\n")
	writeFile(t, filepath.Join(env.Dir, ".opencode/command/test.md"), "---\nagent: coder\n---\nRun the tests.\n")
	writeFile(t, filepath.Join(env.Dir, ".claude/commands/broken.md"), "---\ndescription: \"unclosed\n  nested: [\n---\nBroken.\n")

	r := polly("-p", "/review 42 high") // ask mode: run_command would be denied headless
	if r.code != 0 || r.stdout != "reviewed\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	if got := srv.Requests()[0].LastTurn().Content; got != "Review PR #42 at priority high, then run `touch reviewed-42`." {
		t.Fatalf("the model got %q", got)
	}
	if _, err := os.Stat(filepath.Join(env.Dir, "reviewed-42")); err != nil {
		t.Fatalf("allowed-tools did not pre-approve the command: %v\n%s", err, r.stderr)
	}
	if !strings.Contains(r.stderr, "command /broken skipped") || !strings.Contains(r.stderr, "not valid YAML") {
		t.Fatalf("no warning for the broken file:\n%s", r.stderr)
	}

	calls := srv.Calls()
	r = polly("-p", "/review 42")
	if r.code != 2 || !strings.Contains(r.stderr, "/review needs 2 arguments, got 1 (usage: /review [pr] [priority]); nothing was sent") || srv.Calls() != calls {
		t.Fatalf("missing argument: code=%d calls %d→%d stderr=%s", r.code, calls, srv.Calls(), r.stderr)
	}
	if r := polly("sessions"); strings.Count(r.stdout, "Review PR") != 1 {
		t.Fatalf("the refused command was stored:\n%s", r.stdout)
	}

	if r := polly("-p", "/standup for monday"); r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if got := srv.Last().LastTurn().Content; got != "Write my standup.\n\nARGUMENTS: for monday" {
		t.Fatalf("user command: %q", got)
	}

	r = polly("-p", "/test", "--output-format", "json")
	var res Result
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Persona != "coder" {
		t.Fatalf("agent: code=%d stdout=%s stderr=%s", r.code, r.stdout, r.stderr)
	}
}

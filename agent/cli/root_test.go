package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// inDir runs Polly as if started in dir (the other fields of env kept).
func inDir(env Env, dir string) func(args ...string) runResult {
	return func(args ...string) runResult {
		var out, errb bytes.Buffer
		e := env
		e.Dir, e.Args, e.Stdout, e.Stderr = dir, args, &out, &errb
		code := Main(e)
		return runResult{code, out.String(), errb.String()}
	}
}

// Must show (issue 28 #5): started in src/ of a git repository, Polly
// works on the repository: the root's .agent/ (no second one in src/), its
// .claude/settings.json hooks, its AGENTS.md, and the instruction files
// from the root down to src/ (CLAUDE.md where no AGENTS.md stands, its
// @imports, CLAUDE.local.md). Tools resolve paths from the root.
func TestStartedInASubdirectory(t *testing.T) {
	needJQ(t)
	srv := llmtest.NewServer(t, llmtest.Call("read_file", `{"path":"src/main.go"}`), llmtest.Text("read it"), llmtest.Text("again"))
	env, _ := cliEnv(t, srv.URL(), nil)
	repo := env.Dir
	src := filepath.Join(repo, "src")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	writeFile(t, filepath.Join(repo, "AGENTS.md"), "ROOT-AGENTS: run make check\n")
	writeFile(t, filepath.Join(repo, "CLAUDE.md"), "ROOT-CLAUDE: see @docs/conventions.md\n")
	writeFile(t, filepath.Join(repo, "docs/conventions.md"), "IMPORTED-CONVENTIONS\n")
	writeFile(t, filepath.Join(src, "CLAUDE.md"), "SRC-CLAUDE: Go code lives here\n")
	writeFile(t, filepath.Join(src, "CLAUDE.local.md"), "SRC-LOCAL: my sandbox is on port 8080\n")
	writeFile(t, filepath.Join(src, "main.go"), "package main // MAIN-MARKER\n")
	writeFile(t, filepath.Join(repo, ".claude/settings.json"),
		`{"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "jq -r .tool_input.file_path >> \"$CLAUDE_PROJECT_DIR\"/read.log"}]}]}}`)

	polly := inDir(env, src)
	r := polly("-p", "read main.go", "--trust")
	if r.code != 0 || r.stdout != "read it\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	sys := srv.Requests()[0].Messages[0].Content
	order := []string{"ROOT-AGENTS", "ROOT-CLAUDE", "IMPORTED-CONVENTIONS", "SRC-CLAUDE", "SRC-LOCAL"}
	last := -1
	for _, want := range order {
		i := strings.Index(sys, want)
		if i <= last {
			t.Fatalf("%q missing or out of order in the system prompt:\n%s", want, sys)
		}
		last = i
	}
	if got := srv.Requests()[1].LastTurn(); !strings.Contains(got.Content, "MAIN-MARKER") {
		t.Fatalf("read_file did not resolve from the root: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(repo, ".agent", "polly.db")); err != nil {
		t.Fatalf("no .agent/ at the root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, ".agent")); err == nil {
		t.Fatal("a second .agent/ was made in src/")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "read.log")); strings.TrimSpace(string(b)) != filepath.Join(repo, "src/main.go") {
		t.Fatalf("the root's hook did not run with Claude Code's file_path: %q", b)
	}
	// From the root, the same sessions (and --continue) are there.
	r = inDir(env, repo)("-p", "again", "--continue")
	if r.code != 0 || r.stdout != "again\n" {
		t.Fatalf("continue from the root: code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// readmeBlock returns the first fenced block of kind lang after heading in
// the README.
func readmeBlock(t *testing.T, heading, lang string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```"+lang+"\n")
	if !ok {
		t.Fatalf("README: no %s block after %q", lang, heading)
	}
	block, _, _ := strings.Cut(rest, "```")
	return block
}

// The README's examples of MCP servers, skills and hooks work as written.
func TestREADMEExtensionExamples(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("run_command", `{"command":"rm -rf build"}`),
		llmtest.Call("write_file", `{"path":"notes.txt","content":"hi\n"}`),
		llmtest.Text("done"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, readmeBlock(t, "### Hooks", "json"))
	writeFile(t, filepath.Join(env.Dir, ".mcp.json"), readmeBlock(t, "### MCP servers", "json"))
	writeFile(t, filepath.Join(env.Dir, ".agents/skills/release-notes/SKILL.md"), readmeBlock(t, "### Agent Skills", "markdown"))
	if err := os.MkdirAll(filepath.Join(env.Dir, "build"), 0o755); err != nil {
		t.Fatal(err)
	}

	r := polly("-p", "clean up and take notes", "--yolo")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	// .mcp.json parses; the project is not trusted, so it is listed and ignored.
	if !strings.Contains(r.stderr, "project MCP servers ignored") || !strings.Contains(r.stderr, "files (project .mcp.json") || !strings.Contains(r.stderr, "github (project .mcp.json") {
		t.Fatalf("the .mcp.json example: %s", r.stderr)
	}
	reqs := srv.Requests()
	if !strings.Contains(reqs[0].Messages[0].Content, "- release-notes: Write release notes from the git log") {
		t.Fatal("the skill example is not listed")
	}
	var prompt string
	for _, m := range reqs[0].Messages {
		prompt += m.Content + "\n"
	}
	if !strings.Contains(prompt, "Current git branch:") {
		t.Fatalf("the UserPromptSubmit example added nothing:\n%s", prompt)
	}
	if got := reqs[1].LastTurn().Content; !strings.Contains(got, "rm -rf is not allowed; delete files one by one") {
		t.Fatalf("the PreToolUse example did not block: %q", got)
	}
	if _, err := os.Stat(filepath.Join(env.Dir, "build")); err != nil {
		t.Fatal("the blocked rm -rf ran")
	}
	b, err := os.ReadFile(filepath.Join(env.Dir, "edits.jsonl")) // hooks run in the sandbox: .agent is read-only to them
	if err != nil || !strings.Contains(string(b), `"tool_name":"Write"`) || !strings.Contains(string(b), "notes.txt") {
		t.Fatalf("the PostToolUse example wrote %q (%v)", b, err)
	}
	if r := polly("skills"); !strings.Contains(r.stdout, "release-notes") {
		t.Fatalf("polly skills: %s", r.stdout)
	}
}

// The README's command and agent files work as written.
func TestREADMECommandAndAgentExamples(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("reviewed"), llmtest.Text("as the reviewer"))
	env, polly := cliEnv(t, srv.URL(), nil)
	writeFile(t, filepath.Join(env.Dir, ".claude/commands/review.md"), readmeBlock(t, "### Custom commands", "markdown"))
	writeFile(t, filepath.Join(env.Dir, ".claude/agents/code-reviewer.md"), readmeBlock(t, "### Agents from Markdown", "markdown"))
	if r := polly("-p", "/review 42 high"); r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if got := srv.Last().LastTurn().Content; got != "Review PR #42 with priority high. Read the diff with `gh pr view 42 --patch` first." {
		t.Fatalf("the command example sent %q", got)
	}
	if r := polly("-p", "hi", "--persona", "code-reviewer"); r.code != 0 || !strings.Contains(srv.Last().Messages[0].Content, "You are a senior code reviewer.") {
		t.Fatalf("the agent example: code=%d stderr=%s", r.code, r.stderr)
	}
}

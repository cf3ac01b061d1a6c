package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// Must show (issue 28 #7): a Claude Code agent file (.claude/agents/*.md)
// is a persona: delegate_task names it to the model and runs it with its
// prompt, its tools (Claude Code's names mapped) and its temperature;
// --persona picks it like any other.
func TestMarkdownAgentThroughDelegate(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("delegate_task", `{"agent":"code-reviewer","task":"review main.go"}`),
		llmtest.Text("LGTM: errors are handled"),
		llmtest.Text("The reviewer says LGTM."),
		llmtest.Text("direct answer"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	writeFile(t, filepath.Join(env.Dir, ".claude/agents/code-reviewer.md"),
		"---\nname: code-reviewer\ndescription: Expert code reviewer. Use after writing code.\ntools: Read, Grep, Glob\ntemperature: 0.2\ncolor: purple\npermissionMode: plan\n---\nYou are REVIEWER-PROMPT, a senior code reviewer.\n")
	r := polly("-p", "get main.go reviewed")
	if r.code != 0 || r.stdout != "The reviewer says LGTM.\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	reqs := srv.Requests()
	if !strings.Contains(string(reqs[0].Raw), "code-reviewer: Expert code reviewer. Use after writing code.") {
		t.Fatal("delegate_task does not name the added specialist")
	}
	child := reqs[1]
	if !strings.Contains(child.Messages[0].Content, "You are REVIEWER-PROMPT") || child.Temperature == nil || *child.Temperature != 0.2 {
		t.Fatalf("the sub-agent's prompt or temperature: %v\n%s", child.Temperature, child.Messages[0].Content)
	}
	if !slices.Contains(child.Tools, "read_file") || !slices.Contains(child.Tools, "grep") || slices.Contains(child.Tools, "run_command") || slices.Contains(child.Tools, "write_file") {
		t.Fatalf("the sub-agent's tools: %v", child.Tools)
	}
	if !strings.Contains(r.stderr, `unknown front matter field "permissionMode" ignored`) {
		t.Fatalf("no warning for the unknown field:\n%s", r.stderr)
	}
	if r := polly("-p", "hi", "--persona", "code-reviewer"); r.code != 0 || !strings.Contains(srv.Last().Messages[0].Content, "REVIEWER-PROMPT") {
		t.Fatalf("--persona code-reviewer: code=%d stderr=%s", r.code, r.stderr)
	}
}

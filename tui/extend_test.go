package tui

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent"
	"polly/agent/hooks"
	"polly/agent/llmtest"
	"polly/workspace/skills"
)

// Hook runs that decided something are small lines in the transcript;
// failed ones arrive as warnings (notices) and are not shown twice.
func TestHookLines(t *testing.T) {
	tr := newTranscript()
	tr.apply(agent.HookRan{Run: hooks.Run{Event: "PreToolUse", Target: "run_command", Command: "./guard.sh", Outcome: "blocked", Message: "no rm"}})
	tr.apply(agent.HookRan{Run: hooks.Run{Event: "PreToolUse", Command: "missing", Outcome: "warning"}})
	if len(tr.items) != 1 || tr.items[0].kind != kNotice || tr.items[0].text != "hook PreToolUse run_command: blocked `./guard.sh` — no rm" {
		t.Fatalf("items = %+v", tr.items)
	}
}

func TestSkillsText(t *testing.T) {
	if got := skillsText(&skills.Set{}); !strings.HasPrefix(got, "no skills found") {
		t.Fatal(got)
	}
}

// /mcp opens the MCP panel; /skills lists the skills in the transcript.
func TestMCPAndSkillsCommands(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.prompt("/mcp")
	h.until("the servers' state", func() bool { return strings.Contains(h.screen(), "no MCP servers configured") })
	if scr := h.screen(); !strings.Contains(scr, "MCP servers") {
		t.Fatalf("/mcp:\n%s", scr)
	}
	h.key("esc")
	h.prompt("/skills")
	if scr := h.screen(); !strings.Contains(scr, "no skills found") {
		t.Fatalf("/skills:\n%s", scr)
	}
}

// Must show (issue 28 #6): a command file becomes a slash command: listed
// in /help and completion, sent as its prompt with the arguments in
// place (the transcript shows what was typed); a missing argument sends
// nothing and keeps the text.
func TestCustomCommandInTheTUI(t *testing.T) {
	h := newHarness(t, harnessOpts{files: map[string]string{
		".claude/commands/review.md": "---\ndescription: Review a pull request\nargument-hint: [pr] [priority]\n---\nReview PR #$1 at priority $2.\n",
	}}, llmtest.Text("reviewed"))
	h.typeText("/rev")
	if c := h.m.completion(); len(c.items) != 1 || c.items[0].value != "/review" || !strings.Contains(h.screen(), "/review [pr] [priority]  Review a pull request") {
		t.Fatalf("completions: %+v\n%s", c.items, h.screen())
	}
	h.key("tab")
	if v := h.m.input.Value(); v != "/review " {
		t.Fatalf("tab completed to %q", v)
	}
	h.typeText("42 high")
	h.key("enter")
	h.until("the reply", h.idle)
	if got := h.srv.Last().LastMessage().Content; got != "Review PR #42 at priority high." {
		t.Fatalf("the model got %q", got)
	}
	if s := h.screen(); !strings.Contains(s, "/review 42 high") || strings.Contains(s, "Review PR #42") {
		t.Fatalf("screen:\n%s", s)
	}
	calls := h.srv.Calls()
	h.prompt("/review 7")
	if h.srv.Calls() != calls || h.m.input.Value() != "/review 7" || !strings.Contains(h.screen(), "/review needs 2 arguments, got 1") {
		t.Fatalf("missing argument: calls %d → %d, input %q\n%s", calls, h.srv.Calls(), h.m.input.Value(), h.screen())
	}
	h.m.input.SetValue("")
	h.prompt("/help")
	if s := strings.Join(h.m.panel.(*helpPanel).lines(200), "\n"); !strings.Contains(s, "/review [pr] [priority]") || !strings.Contains(s, "Review a pull request") {
		t.Fatalf("/help:\n%s", s)
	}
}

// An MCP prompt is offered in completion once its server is ready and
// sends what the server made of the arguments.
func TestMCPPromptInTheTUI(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "demo-server")
	if out, err := exec.Command("go", "build", "-o", bin, "../tools/mcp/testdata/server").CombinedOutput(); err != nil {
		t.Fatalf("build the MCP test server: %v\n%s", err, out)
	}
	h := newHarness(t, harnessOpts{config: `{"mcp_servers": {"rich": {"command": "` + bin + `", "args": ["rich"]}}}`}, llmtest.Text("reviewed"))
	h.until("the MCP server's prompt", func() bool {
		for _, c := range h.m.customCommands() {
			if c.Name == "mcp__rich__review" {
				return true
			}
		}
		return false
	})
	h.prompt("/mcp__rich__review main.go tests")
	h.until("the reply", func() bool { return h.srv.Calls() == 1 && h.idle() })
	if got := h.srv.Last().LastMessage().Content; got != "Review main.go with a focus on tests." {
		t.Fatalf("the model got %q", got)
	}
}

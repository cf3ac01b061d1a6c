package tui

import (
	"strings"
	"testing"

	"polly/agent"
	"polly/agent/hooks"
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

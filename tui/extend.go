package tui

import (
	"fmt"
	"strings"

	"polly/agent"
	"polly/workspace/skills"
)

// skillsText is what /skills shows: each skill with where it was found.
func skillsText(set *skills.Set) string {
	list := set.All()
	if len(list) == 0 {
		return "no skills found (looked in .agents/skills, .claude/skills, ~/.config/agents/skills, ~/.claude/skills and the workspace's skills/)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d skills (the model sees names and descriptions; it loads one with the skill tool or by reading its SKILL.md):", len(list))
	for _, k := range list {
		desc := strings.Join(strings.Fields(k.Description), " ")
		if r := []rune(desc); len(r) > 100 {
			desc = string(r[:97]) + "..."
		}
		fmt.Fprintf(&b, "\n  %s — %s [%s]", k.Name, desc, k.Root)
	}
	return b.String()
}

// hookLine is the small transcript line of a hook run.
func hookLine(ev agent.HookRan) string {
	target := ""
	if ev.Target != "" {
		target = " " + ev.Target
	}
	line := fmt.Sprintf("hook %s%s: %s `%s`", ev.Event, target, ev.Outcome, ev.Command)
	if ev.Status != "" { // the entry's statusMessage
		line = fmt.Sprintf("hook %s%s: %s — %s", ev.Event, target, ev.Outcome, ev.Status)
	}
	if ev.Outcome == "blocked" && ev.Message != "" {
		line += " — " + ev.Message
	}
	return line
}

package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/memory/task"
)

// teamPanel lists the sub-agents; Enter opens one's live transcript.
type teamPanel struct {
	sel  int
	open *subRow
}

func (p *teamPanel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	if r := p.open; r != nil {
		h := m.h - 4
		switch k {
		case "esc", "q":
			p.open = nil
		case "pgup":
			r.tr.scrollUp(m.r, m.w, h, max(1, h-2))
		case "pgdown", "space":
			r.tr.scrollDown(m.r, m.w, h, max(1, h-2))
		case "up", "k":
			r.tr.scrollUp(m.r, m.w, h, 1)
		case "down", "j":
			r.tr.scrollDown(m.r, m.w, h, 1)
		case "ctrl+x":
			r.tr.toggle()
		}
		return nil
	}
	switch k {
	case "esc", "q":
		m.closePanel()
	case "up", "k", "down", "j":
		p.sel = moveSelection(p.sel, len(m.team.rows), k)
	case "enter":
		if p.sel >= 0 && p.sel < len(m.team.rows) {
			p.open = m.team.rows[p.sel]
			p.open.tr.toEnd()
		}
	}
	return nil
}

func (p *teamPanel) view(m *Model, w, h int) []string {
	th := m.th
	if r := p.open; r != nil {
		out := []string{m.panelTitle("Team › "+r.personaName(), "live transcript · pgup/pgdn scroll · ctrl+x expand tool · esc back", w)}
		out = append(out, m.r.subLines(r, w)...)
		return append(out, r.tr.view(m.r, w, h-len(out))...)
	}
	out := []string{m.panelTitle("Team", "↑↓ choose · enter open its transcript · esc close", w)}
	if len(m.team.rows) == 0 {
		return append(out, th.dim.Render(clip("  no sub-agents in this session yet: Polly starts them with delegate_task", w)))
	}
	out = append(out, th.dim.Render(clip(fmt.Sprintf(" %-10s %-10s %-10s %-28s %-24s %7s %5s %7s %8s", "PERSONA", "MODEL", "STATUS", "TASK", "NOW", "ELAPSED", "TOOLS", "TOKENS", "COST"), w)))
	now := m.now()
	rows := make([]string, len(m.team.rows))
	for i, r := range m.team.rows {
		cur := ""
		if r.running() {
			cur = strings.TrimSpace(r.tool + " " + r.brief)
			if cur == "" {
				cur = "thinking"
			}
		}
		cost := "-"
		if r.cost > 0 {
			cost = fmt.Sprintf("$%.4f", r.cost)
		}
		rows[i] = fmt.Sprintf(" %-10s %-10s %-10s %-28s %-24s %7s %5d %7s %8s", clip(r.personaName(), 10), clip(r.model, 10), r.status,
			clip(oneLine(r.task), 28), clip(cur, 24), fmtDur(r.elapsedAt(now).Truncate(1e8)), r.toolCalls,
			fmtCount(r.usage.PromptTokens+r.usage.CompletionTokens), cost)
	}
	return append(out, m.list(rows, p.sel, w, h-len(out))...)
}

// taskLines is the task panel: the current persona's request, plan,
// latest anchor and last checkpoint.
func (m *Model) taskLines(w int) []string {
	th := m.th
	p := m.current()
	out := []string{m.panelTitle("Task · "+p.p.Name, "↑↓ pgup/pgdn scroll · esc close", w)}
	if !p.hasStatus {
		if p.busy() {
			return append(out, th.dim.Render("  loading…"))
		}
		return append(out, th.dim.Render("  no task yet for "+p.p.Name))
	}
	s := p.status
	section := func(name string) { out = append(out, "", th.accent.Render(name)) }
	section("Original request")
	req := s.OriginalRequest
	if req == "" {
		req = "(none yet)"
	}
	out = append(out, m.r.md.lines(req, max(10, w))...)
	section(fmt.Sprintf("Plan (%s so far; anchor in %d, checkpoint in %d)", plural(s.ToolCalls, "tool call"), max(0, s.AnchorIn), max(0, s.CheckpointIn)))
	if len(s.Plan) == 0 {
		out = append(out, th.dim.Render("  no plan steps (the persona sets them with task_plan)"))
	}
	for i, st := range s.Plan {
		mark, style := "[ ]", th.dim
		switch st.Status {
		case task.Done:
			mark, style = "[x]", th.ok
		case task.InProgress:
			mark, style = "[>]", th.warn
		}
		out = append(out, prefixed(plainLines(fmt.Sprintf("%s %d. %s", mark, i+1, st.Title), max(1, w-2)), "  ", style)...)
	}
	section("Latest anchor")
	if s.Anchor == "" {
		out = append(out, th.dim.Render("  none yet"))
	} else {
		out = append(out, m.r.md.lines(s.Anchor, max(10, w))...)
	}
	section("Last checkpoint")
	switch {
	case p.hasCheckpoint:
		c := p.checkpoint
		out = append(out, prefixed(plainLines(fmt.Sprintf("%s (%s, after %s, %s)", c.Path, c.Reason, plural(c.ToolCalls, "tool call"), c.Time.Local().Format("15:04:05")), max(1, w-2)), "  ")...)
	case s.CheckpointPath != "":
		out = append(out, prefixed(plainLines(s.CheckpointPath+" (none written in this run yet)", max(1, w-2)), "  ", th.dim)...)
	default:
		out = append(out, th.dim.Render("  none"))
	}
	if s.Compactions > 0 {
		out = append(out, "", th.dim.Render("  "+plural(s.Compactions, "compaction")+" so far"))
	}
	return out
}

// helpLines is the help panel: every key and every command.
func (m *Model) helpLines(w int) []string {
	th := m.th
	out := []string{m.panelTitle("Help", "↑↓ pgup/pgdn scroll · esc close", w)}
	for _, g := range m.keys.groups() {
		out = append(out, "", th.accent.Render(g.title))
		for _, b := range g.keys {
			h := b.Help()
			out = append(out, clip(fmt.Sprintf("  %s %s", th.key.Render(fmt.Sprintf("%-22s", h.Key)), h.Desc), w))
		}
	}
	out = append(out, "", th.accent.Render("Commands (type / to complete, tab completes)"))
	for _, c := range slashCommands {
		name := c.name
		if c.args != "" {
			name += " " + c.args
		}
		out = append(out, clip(fmt.Sprintf("  %s %s", th.key.Render(fmt.Sprintf("%-22s", name)), c.help), w))
	}
	out = append(out, "", th.accent.Render("Panels"),
		clip("  memory: e edits the file in $EDITOR, the view refreshes when it changes on disk", w),
		clip("  tool outputs: / searches every output of the session, enter shows one whole", w),
		clip("  team: enter opens a sub-agent's live transcript", w),
		clip("  permission dialog: y allow once · a allow for this session · n deny with a reason", w))
	return out
}

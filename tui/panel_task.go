package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"polly/memory/task"
)

// taskPanel shows a persona's request, plan, latest anchor and last
// checkpoint, as its status has them (the root keeps them current).
type taskPanel struct {
	look
	text textPanel
	p    *personaState
}

func newTaskPanel(lk look, p *personaState) *taskPanel {
	return &taskPanel{look: lk, text: textPanel{keys: newPagerKeys()}, p: p}
}

func (t *taskPanel) Init() tea.Cmd             { return nil }
func (t *taskPanel) SetSize(w, h int)          { t.text.w, t.text.h = w, h }
func (t *taskPanel) ShortHelp() []key.Binding  { return t.text.ShortHelp() }
func (t *taskPanel) FullHelp() [][]key.Binding { return t.text.FullHelp() }

func (t *taskPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	if lm, ok := msg.(lookMsg); ok {
		t.look = lm.look
	}
	if !t.text.update(msg) {
		return nil, nil
	}
	return t, nil
}

func (t *taskPanel) View() string { return t.text.view(t.lines(t.text.w)) }

func (t *taskPanel) lines(w int) []string {
	th, p := t.th, t.p
	out := []string{panelTitle(th, "Task · "+p.p.Name, t, w)}
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
	out = append(out, t.r.md.lines(req, max(10, w))...)
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
		out = append(out, t.r.md.lines(s.Anchor, max(10, w))...)
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

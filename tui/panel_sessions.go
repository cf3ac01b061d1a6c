package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"polly/memory/store"
)

// sessionsPanel lists this directory's sessions; Enter resumes one.
type sessionsPanel struct {
	seq  int
	rows []store.SessionSummary
	sel  int
	err  string
	done bool // the list arrived
}

type sessListMsg struct {
	seq  int
	rows []store.SessionSummary
	err  error
}

func (p *sessionsPanel) list(m *Model) tea.Cmd {
	st, seq, ctx := m.app.Store, p.seq, m.ctx
	return func() tea.Msg {
		if st == nil {
			return sessListMsg{seq: seq, err: fmt.Errorf("no session store (.agent/polly.db could not be opened)")}
		}
		rows, err := st.ListSessions(ctx, 100)
		return sessListMsg{seq: seq, rows: rows, err: err}
	}
}

func (p *sessionsPanel) update(msg sessListMsg) {
	if msg.seq != p.seq {
		return
	}
	p.rows, p.done = msg.rows, true
	if msg.err != nil {
		p.err = msg.err.Error()
	}
}

func (p *sessionsPanel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc", "q":
		m.closePanel()
	case "up", "k", "down", "j":
		p.sel = moveSelection(p.sel, len(p.rows), msg.String())
	case "enter":
		if p.sel >= 0 && p.sel < len(p.rows) {
			return m.openSession(p.rows[p.sel].ID)
		}
	case "n":
		return m.openSession("")
	}
	return nil
}

func (p *sessionsPanel) view(m *Model, w, h int) []string {
	out := []string{m.panelTitle("Sessions", "↑↓ choose · enter resume · n new session · esc close", w)}
	switch {
	case p.err != "":
		return append(out, m.th.bad.Render(clip(p.err, w)))
	case !p.done:
		return append(out, m.th.dim.Render("  loading…"))
	case len(p.rows) == 0:
		return append(out, m.th.dim.Render("  no sessions yet in this directory"))
	}
	out = append(out, m.th.dim.Render(clip(fmt.Sprintf(" %-8s  %-16s  %-10s  %-11s  %5s  %7s  %s", "ID", "UPDATED", "PERSONA", "STATUS", "MSGS", "TOKENS", "TITLE"), w)))
	rows := make([]string, len(p.rows))
	names := m.namesByID()
	for i, s := range p.rows {
		persona := s.Persona
		if n, ok := names[persona]; ok {
			persona = n
		}
		cur := " "
		if s.ID == m.sessID {
			cur = "*"
		}
		rows[i] = fmt.Sprintf("%s%-8s  %-16s  %-10s  %-11s  %5d  %7s  %s", cur, s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"),
			clip(persona, 10), s.Status, s.Messages, fmtCount(s.PromptTokens+s.CompletionTokens), oneLine(s.Title))
	}
	return append(out, m.list(rows, p.sel, w, h-len(out))...)
}

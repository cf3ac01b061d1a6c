package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"polly/agent/app"
)

// sessionsPanel lists this directory's sessions; Enter resumes one. A
// session Polly did not make here is marked !, and resuming it asks first.
type sessionsPanel struct {
	rowList[app.Listed]
	keys    sessionsKeys
	current string            // the session on screen, marked *
	names   map[string]string // persona id → name
}

type sessionsKeys struct {
	listKeys
	Resume, New key.Binding
}

func newSessionsKeys() sessionsKeys {
	return sessionsKeys{listKeys: newListKeys(), Resume: bind("enter", "resume", "enter"), New: bind("n", "new session", "n")}
}

func (k sessionsKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Choose, k.Resume, k.New, k.Close}
}
func (k sessionsKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// listSessions reads the sessions list (in the panel's Cmd).
func (m *Model) listSessions() func() ([]app.Listed, error) {
	sessions, ctx := m.app.Sessions(), m.ctx
	return func() ([]app.Listed, error) {
		return sessions.List(ctx, 100)
	}
}

func newSessionsPanel(lk look, seq int, list func() ([]app.Listed, error), current string, names map[string]string) *sessionsPanel {
	return &sessionsPanel{rowList: rowList[app.Listed]{look: lk, seq: seq, read: list}, keys: newSessionsKeys(), current: current, names: names}
}

func (p *sessionsPanel) ShortHelp() []key.Binding  { return p.keys.ShortHelp() }
func (p *sessionsPanel) FullHelp() [][]key.Binding { return p.keys.FullHelp() }

func (p *sessionsPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	handled, closed := p.update(msg, p.keys.listKeys)
	switch {
	case closed:
		return nil, nil
	case handled:
		return p, nil
	}
	if msg, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(msg, p.keys.Resume):
			if row, ok := p.selected(); ok {
				return p, msgCmd(resumeSessionMsg{id: row.ID})
			}
		case key.Matches(msg, p.keys.New):
			return p, msgCmd(resumeSessionMsg{})
		}
	}
	return p, nil
}

func (p *sessionsPanel) View() string {
	header := fmt.Sprintf(" %-8s  %-16s  %-10s  %-11s  %5s  %7s  %s", "ID", "UPDATED", "PERSONA", "STATUS", "MSGS", "TOKENS", "TITLE")
	return p.view(p.th, "Sessions", p, "no sessions yet in this directory", header, func(s app.Listed) string {
		cur, title := " ", oneLine(s.Title)
		if s.ID == p.current {
			cur = "*"
		}
		if s.Foreign != "" {
			cur, title = "!", "(not made here) "+title
		}
		return fmt.Sprintf("%s%-8s  %-16s  %-10s  %-11s  %5d  %7s  %s", cur, s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"),
			clip(nameOf(p.names, s.Persona), 10), s.Status, s.Messages, fmtCount(s.PromptTokens+s.CompletionTokens), title)
	})
}

package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"polly/memory/store"
)

// sessionsPanel lists this directory's sessions; Enter resumes one.
type sessionsPanel struct {
	look
	keys    sessionsKeys
	seq     int
	list    func() ([]store.SessionSummary, error)
	current string            // the session on screen, marked *
	names   map[string]string // persona id → name
	rows    []store.SessionSummary
	sel     int
	err     string
	done    bool // the list arrived
	w, h    int
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

type sessListMsg struct {
	seq  int
	rows []store.SessionSummary
	err  error
}

// listSessions reads the sessions list (in the panel's Cmd).
func (m *Model) listSessions() func() ([]store.SessionSummary, error) {
	st, ctx := m.app.Store, m.ctx
	return func() ([]store.SessionSummary, error) {
		if st == nil {
			return nil, fmt.Errorf("no session store (.agent/polly.db could not be opened)")
		}
		return st.ListSessions(ctx, 100)
	}
}

func newSessionsPanel(lk look, seq int, list func() ([]store.SessionSummary, error), current string, names map[string]string) *sessionsPanel {
	return &sessionsPanel{look: lk, keys: newSessionsKeys(), seq: seq, list: list, current: current, names: names}
}

func (p *sessionsPanel) ShortHelp() []key.Binding  { return p.keys.ShortHelp() }
func (p *sessionsPanel) FullHelp() [][]key.Binding { return p.keys.FullHelp() }
func (p *sessionsPanel) SetSize(w, h int)          { p.w, p.h = w, h }

func (p *sessionsPanel) Init() tea.Cmd {
	seq, list := p.seq, p.list
	return func() tea.Msg {
		rows, err := list()
		return sessListMsg{seq: seq, rows: rows, err: err}
	}
}

func (p *sessionsPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	switch msg := msg.(type) {
	case lookMsg:
		p.look = msg.look
	case sessListMsg:
		if msg.seq != p.seq {
			return p, nil
		}
		p.rows, p.done = msg.rows, true
		if msg.err != nil {
			p.err = msg.err.Error()
		}
	case tea.MouseWheelMsg:
		if k, ok := wheelKey(msg); ok {
			p.sel = moveSelection(p.sel, len(p.rows), k)
		}
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, p.keys.Close):
			return nil, nil
		case key.Matches(msg, p.keys.Choose):
			p.sel = moveSelection(p.sel, len(p.rows), msg.String())
		case key.Matches(msg, p.keys.Resume):
			if p.sel >= 0 && p.sel < len(p.rows) {
				return p, msgCmd(resumeSessionMsg{id: p.rows[p.sel].ID})
			}
		case key.Matches(msg, p.keys.New):
			return p, msgCmd(resumeSessionMsg{})
		}
	}
	return p, nil
}

func (p *sessionsPanel) View() string {
	th, w := p.th, p.w
	out := []string{panelTitle(th, "Sessions", p, w)}
	switch {
	case p.err != "":
		return joinLines(append(out, th.bad.Render(clip(p.err, w))))
	case !p.done:
		return joinLines(append(out, th.dim.Render("  loading…")))
	case len(p.rows) == 0:
		return joinLines(append(out, th.dim.Render("  no sessions yet in this directory")))
	}
	out = append(out, th.dim.Render(clip(fmt.Sprintf(" %-8s  %-16s  %-10s  %-11s  %5s  %7s  %s", "ID", "UPDATED", "PERSONA", "STATUS", "MSGS", "TOKENS", "TITLE"), w)))
	rows := make([]string, len(p.rows))
	for i, s := range p.rows {
		cur := " "
		if s.ID == p.current {
			cur = "*"
		}
		rows[i] = fmt.Sprintf("%s%-8s  %-16s  %-10s  %-11s  %5d  %7s  %s", cur, s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"),
			clip(nameOf(p.names, s.Persona), 10), s.Status, s.Messages, fmtCount(s.PromptTokens+s.CompletionTokens), oneLine(s.Title))
	}
	return joinLines(append(out, listRows(th, rows, p.sel, w, p.h-len(out))...))
}

package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/agent/inspect"
)

// contextMsg carries /context's text: what the model received on this
// persona's last call.
type contextMsg struct {
	text string
	err  error
}

// contextView loads the current persona's last model call of this session,
// rebuilt from its record, and renders it as `polly inspect` does: the
// token breakdown by part and every message.
func (m *Model) contextView() tea.Cmd {
	st, id, ctx, persona := m.app.Store, m.sessID, m.ctx, m.current().p.ID
	if st == nil {
		m.flash = "no session store: requests are not recorded"
		return nil
	}
	if id == "" {
		m.current().tr.add(&item{kind: kSystem, text: "no model call yet in this session"})
		return nil
	}
	return func() tea.Msg {
		calls, err := st.Calls(ctx, id)
		if err != nil {
			return contextMsg{err: err}
		}
		last := -1
		for i, c := range calls {
			if c.Persona == persona && (c.Record == nil || c.Record.Kind == "main") {
				last = i
			}
		}
		if last < 0 {
			return contextMsg{text: "no model call of " + persona + " yet in this session"}
		}
		rb, err := st.Rebuild(ctx, calls[last])
		if err != nil {
			return contextMsg{err: errorText(inspect.Explain(err))}
		}
		var b strings.Builder
		if err := inspect.Render(&b, rb, len(calls)); err != nil {
			return contextMsg{err: err}
		}
		return contextMsg{text: strings.TrimRight(b.String(), "\n")}
	}
}

type errorText string

func (e errorText) Error() string { return string(e) }

func (m *Model) showContext(msg contextMsg) {
	tr := m.current().tr
	tr.toEnd()
	if msg.err != nil {
		tr.add(&item{kind: kError, text: "context: " + msg.err.Error()})
		return
	}
	tr.add(&item{kind: kSystem, text: msg.text})
}

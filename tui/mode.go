package tui

import (
	"charm.land/lipgloss/v2"

	"polly/tools/permission"
)

// The permission mode is always on the status bar (yolo in red) and
// shift+tab cycles it: ask → auto-edit → yolo → ask. Yolo is confirmed
// first (y); the dialog's "allow all edits this session" switches ask to
// auto-edit. The mode is the policy's, for every agent of this Polly,
// until it quits or the mode changes again.

// mode is the permission mode decisions are made in now.
func (m *Model) mode() permission.Mode {
	if m.app == nil || m.app.Policy == nil {
		if m.startMode == "" {
			return permission.Ask
		}
		return permission.Mode(m.startMode)
	}
	return m.app.Policy.CurrentMode()
}

// cycleMode is shift+tab.
func (m *Model) cycleMode() {
	if m.app == nil || m.app.Policy == nil {
		m.flash = "the session is still opening; the mode can change once it is open"
		return
	}
	next := permission.Ask
	for i, md := range permission.Modes {
		if md == m.mode() {
			next = permission.Modes[(i+1)%len(permission.Modes)]
		}
	}
	if next == permission.Yolo {
		m.yoloAsk = true
		return
	}
	m.setMode(next)
}

// setMode switches the mode and says what it means.
func (m *Model) setMode(md permission.Mode) {
	if err := m.app.Policy.SetMode(md); err != nil {
		m.flash = err.Error()
		return
	}
	m.flash = "mode " + string(md) + ": " + modeMeaning(md)
}

func modeMeaning(md permission.Mode) string {
	switch md {
	case permission.AutoEdit:
		return "edits inside the project and sandboxed commands run without asking; the rest asks"
	case permission.Yolo:
		return "everything runs without asking, except protected paths"
	}
	return "reads are free; edits and commands that are not read-only ask"
}

// modeStyle is how the status bar shows a mode: yolo red, auto-edit
// amber, ask as the bar.
func (m *Model) modeStyle(md permission.Mode) lipgloss.Style {
	st := m.th.status
	switch {
	case m.th.noColor && md != permission.Ask:
		return st.Bold(true)
	case m.th.noColor:
		return st
	case md == permission.Yolo:
		return st.Foreground(m.th.bad.GetForeground()).Bold(true)
	case md == permission.AutoEdit:
		return st.Foreground(m.th.warn.GetForeground()).Bold(true)
	}
	return st
}

package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"polly/tools/permission"
)

// key routes a key press: the quit question, then the permission dialog,
// then an open panel, then the global keys, and what is left goes to the
// input. Global keys come first so the textarea never sees them.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	if msg.String() == "alt+esc" {
		// Two fast escs arrive as one alt+esc: each closes what one would.
		msg = tea.KeyPressMsg{Code: tea.KeyEscape}
	}
	k := msg.String()
	m.flash = ""
	if m.quitAsk {
		m.quitAsk = false
		if k == "y" || k == "Y" || k == "ctrl+c" {
			return m.quit()
		}
		return nil
	}
	if m.yoloAsk {
		m.yoloAsk = false
		if k == "y" || k == "Y" {
			m.setMode(permission.Yolo)
		}
		return nil
	}
	if m.tooSmall() && !key.Matches(msg, m.keys.Quit) {
		// Nothing can be seen: no key answers a question or edits the
		// draft blind. The screen says to enlarge the terminal.
		return nil
	}
	if key.Matches(msg, m.keys.Quit) {
		if !m.perm.open() && m.clearOnCtrlC() {
			return nil
		}
		if m.anyBusy() || m.perm.open() {
			m.quitAsk = true
			return nil
		}
		return m.quit()
	}
	if m.perm.open() {
		var cmd tea.Cmd
		m.perm, cmd = m.perm.Update(msg)
		return cmd
	}
	if m.adopt != nil {
		return m.adoptKey(k)
	}
	if cmd, ok := m.panelHotkey(msg); ok {
		return cmd
	}
	if m.panel != nil {
		if !typedText(msg) || panelTakes(m.panel, msg) {
			return m.updatePanel(msg)
		}
		// Text typed over a panel that does not take it is for the input.
		m.closePanel()
		defer func() { m.flash = "the panel closed: what you type goes to the input" }()
	}

	if cmd, ok := m.compKey(k); ok {
		return cmd
	}
	p := m.current()
	w, h := m.w, m.chatHeight()
	switch {
	case key.Matches(msg, m.keys.NextPersona):
		if !m.draft().empty() {
			return m.completePath()
		}
		return m.selectPersona((m.cur + 1) % len(m.personas))
	case key.Matches(msg, m.keys.Mode):
		m.cycleMode()
		return nil
	case key.Matches(msg, m.keys.PersonaN):
		return m.selectPersona(int(k[len(k)-1] - '1'))
	case key.Matches(msg, m.keys.Cancel):
		if !m.cancelRun() && strings.HasPrefix(m.input.Value(), "/") {
			m.input.Reset()
		}
		return nil
	case key.Matches(msg, m.keys.PageUp):
		p.tr.scrollUp(m.r, w, h, max(1, h-2))
		return nil
	case key.Matches(msg, m.keys.PageDown):
		p.tr.scrollDown(m.r, w, h, max(1, h-2))
		return nil
	case key.Matches(msg, m.keys.Home) && (k != "home" || m.input.Value() == ""):
		p.tr.toTop()
		return nil
	case key.Matches(msg, m.keys.End) && (k != "end" || m.input.Value() == ""):
		p.tr.toEnd()
		return nil
	case key.Matches(msg, m.keys.Mouse):
		m.mouseOff = !m.mouseOff
		m.flash = "mouse capture on: the wheel scrolls (F7 turns it off to select text)"
		if m.mouseOff {
			m.flash = "mouse capture off: select text with the mouse (F7 turns the wheel back on)"
		}
		return nil
	case key.Matches(msg, m.keys.Expand):
		p.tr.toggle()
		return nil
	case key.Matches(msg, m.keys.SelectPrev):
		p.tr.selectTool(-1)
		return nil
	case key.Matches(msg, m.keys.SelectNext):
		p.tr.selectTool(1)
		return nil
	case k == "up" && m.recallable():
		m.recall(-1)
		return nil
	case k == "down" && m.browsing():
		m.recall(1)
		return nil
	case key.Matches(msg, m.keys.Send):
		return m.sendInput()
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return tea.Batch(cmd, m.needFiles())
}

// sendInput is Enter: the draft is sent (or run, a command) and the
// input empties.
func (m *Model) sendInput() tea.Cmd {
	d := m.draft()
	if d.empty() {
		return nil
	}
	m.clearDraft()
	m.histPos = len(m.history)
	d.text = strings.TrimRight(d.text, "\n")
	return m.submitDraft(d)
}

// wheel scrolls whatever is under the pointer: a panel or the chat.
func (m *Model) wheel(msg tea.MouseWheelMsg) tea.Cmd {
	if m.perm.open() {
		m.perm, _ = m.perm.Update(msg)
		return nil
	}
	if m.panel != nil {
		return m.updatePanel(msg)
	}
	n := 3
	up := msg.Button == tea.MouseWheelUp
	if msg.Button != tea.MouseWheelUp && msg.Button != tea.MouseWheelDown {
		return nil
	}
	p := m.current()
	if up {
		p.tr.scrollUp(m.r, m.w, m.chatHeight(), n)
	} else {
		p.tr.scrollDown(m.r, m.w, m.chatHeight(), n)
	}
	return nil
}

// typedText: a key that types a character (shift allowed).
func typedText(msg tea.KeyPressMsg) bool {
	return msg.Text != "" && msg.Mod&^tea.ModShift == 0
}

// textCapturer is a panel that takes typed text while it shows a field
// for it (a search, a filter).
type textCapturer interface{ capturing() bool }

// panelTakes: the open panel uses this key — one of its bindings, or text
// for a field it shows.
func panelTakes(p panel, msg tea.KeyPressMsg) bool {
	if c, ok := p.(textCapturer); ok && c.capturing() {
		return true
	}
	for _, group := range p.FullHelp() {
		if key.Matches(msg, group...) {
			return true
		}
	}
	return false
}

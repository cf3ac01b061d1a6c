package tui

import (
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

// announce rings the terminal's bell, or sends an OSC 9 notification, when
// the terminal is not focused: a turn that ran notifyAfter or longer
// ended, or a question waits (ran 0). tui.notify "off" never does.
func (m *Model) announce(text string, ran time.Duration) tea.Cmd {
	if !m.blurred || ran < m.notifyAfter {
		return nil
	}
	switch m.notify {
	case "bell":
		return tea.Raw("\a")
	case "osc9":
		clean := strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				return ' '
			}
			return r
		}, text)
		return tea.Raw("\x1b]9;" + clean + "\x07")
	}
	return nil
}

package tui

import "charm.land/bubbles/v2/key"

// keyMap is every key of the main screen; help lists them all. Panel keys
// are ctrl- or F-keys so that every printable character (including ?)
// stays typeable in the input.
type keyMap struct {
	Send, Newline, NextPersona, PersonaN, Mode, Cancel, Quit key.Binding
	PageUp, PageDown, Wheel, History, Home, End, Mouse       key.Binding
	Expand, SelectPrev, SelectNext                           key.Binding
	Help, Memory, Task, Team, Outputs, Sessions              key.Binding
}

func newKeyMap() keyMap {
	b := bind
	return keyMap{
		Send:        b("enter", "send (queued while the persona works)", "enter"),
		Newline:     b("shift+enter / ctrl+j", "new line", "shift+enter", "ctrl+j"),
		NextPersona: b("tab", "next persona (in a draft: completes the path or command)", "tab"),
		Mode:        b("shift+tab", "permission mode: ask → auto-edit → yolo (yolo asks first)", "shift+tab"),
		PersonaN: b("alt+1…9", "persona by number",
			"alt+1", "alt+2", "alt+3", "alt+4", "alt+5", "alt+6", "alt+7", "alt+8", "alt+9"),
		Cancel:     b("esc", "cancel the running turn / close a panel", "esc"),
		Quit:       b("ctrl+c", "quit (asks while work is running)", "ctrl+c"),
		PageUp:     b("pgup", "scroll up", "pgup"),
		PageDown:   b("pgdn", "scroll down", "pgdown"),
		Wheel:      b("wheel", "scroll", "wheel"),
		History:    b("↑ / ↓", "input history (when the input is empty)", "up", "down"),
		Home:       b("home / ctrl+home", "jump to the start (home: when the input is empty)", "home", "ctrl+home"),
		End:        b("end / ctrl+end", "jump to the end and follow (end: when the input is empty)", "end", "ctrl+end"),
		Mouse:      b("F7 / alt+m", "mouse capture on/off (off: select text with the mouse; the wheel does not scroll)", "f7", "alt+m"),
		Expand:     b("ctrl+x", "expand / collapse the selected or last tool block", "ctrl+x"),
		SelectPrev: b("alt+↑", "select the previous tool block", "alt+up"),
		SelectNext: b("alt+↓", "select the next tool block", "alt+down"),
		Help:       b("F1", "help", "f1"),
		Memory:     b("ctrl+y / F2", "memory inspector", "ctrl+y", "f2"),
		Task:       b("ctrl+t / F3", "task panel", "ctrl+t", "f3"),
		Team:       b("ctrl+g / F4", "team panel (sub-agents)", "ctrl+g", "f4"),
		Outputs:    b("ctrl+o / F5", "tool output browser", "ctrl+o", "f5"),
		Sessions:   b("ctrl+s / F6", "sessions", "ctrl+s", "f6"),
	}
}

// groups are the help panel's sections.
func (k keyMap) groups() []struct {
	title string
	keys  []key.Binding
} {
	return []struct {
		title string
		keys  []key.Binding
	}{
		{"Chat", []key.Binding{k.Send, k.Newline, k.History, k.Cancel, k.Quit}},
		{"Personas and mode", []key.Binding{k.NextPersona, k.PersonaN, k.Mode}},
		{"Transcript", []key.Binding{k.PageUp, k.PageDown, k.Home, k.End, k.Wheel, k.Mouse, k.Expand, k.SelectPrev, k.SelectNext}},
		{"Panels (esc closes)", []key.Binding{k.Help, k.Memory, k.Task, k.Team, k.Outputs, k.Sessions}},
	}
}

// ShortHelp is the hint line under the chat: the first keys, in short
// words (the keys are the bindings' own).
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{brief(k.Send, "enter", "send"), brief(k.Newline, "shift+enter", "newline"), brief(k.NextPersona, "tab", "persona"),
		brief(k.PageUp, "pgup/pgdn", "scroll"), brief(k.Expand, "ctrl+x", "expand tool"), brief(k.Help, "F1", "help")}
}

// FullHelp is every key of the main screen, by group.
func (k keyMap) FullHelp() [][]key.Binding {
	var out [][]key.Binding
	for _, g := range k.groups() {
		out = append(out, g.keys)
	}
	return out
}

// brief is b with a shorter help.
func brief(b key.Binding, k, desc string) key.Binding {
	b.SetHelp(k, desc)
	return b
}

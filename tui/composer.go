package tui

import (
	"fmt"
	"strings"

	"polly/memory/chat"
)

// The composer is the input box and what it holds: a draft, whose long
// pastes stand as short tokens in the textarea (the text itself is kept
// here and sent whole), and the drafts sent or cleared before it, which ↑
// brings back.

// A paste of more than pasteLines lines or pasteChars characters is held
// out of the textarea: it shows as a token, the transcript shows it
// collapsed, and the message carries it whole. The textarea would keep
// at most 10,000 lines of it and re-wrap all of it on every key.
const (
	pasteLines = 5
	pasteChars = 1000
)

// paste is a long pasted text and the token standing for it in the input.
type paste struct {
	token string // "[pasted 300 lines #1]"
	text  string
}

// draft is what the input holds: its text, and the pastes its tokens
// stand for.
type draft struct {
	text   string
	pastes []paste
}

func (d draft) empty() bool { return strings.TrimSpace(d.text) == "" }

// full is the draft as sent: every token replaced by its paste.
func (d draft) full() string {
	if len(d.pastes) == 0 {
		return d.text
	}
	pairs := make([]string, 0, 2*len(d.pastes))
	for _, p := range d.pastes {
		pairs = append(pairs, p.token, p.text)
	}
	return strings.NewReplacer(pairs...).Replace(d.text)
}

// draft is the input's content with the pastes whose tokens it still
// holds (a token the user deleted drops its paste).
func (m *Model) draft() draft {
	d := draft{text: m.input.Value()}
	for _, p := range m.pastes {
		if strings.Contains(d.text, p.token) {
			d.pastes = append(d.pastes, p)
		}
	}
	return d
}

// setDraft puts d in the input, the cursor at its end.
func (m *Model) setDraft(d draft) {
	m.input.SetValue(d.text)
	m.input.CursorEnd()
	m.pastes = append([]paste(nil), d.pastes...)
}

func (m *Model) clearDraft() {
	m.input.Reset()
	m.pastes = nil
}

// clearOnCtrlC is the first Ctrl+C with a draft: the draft goes to the
// history (↑ brings it back) and the input is empty; a second Ctrl+C
// quits.
func (m *Model) clearOnCtrlC() bool {
	d := m.draft()
	if d.empty() {
		return false
	}
	m.remember(d)
	m.clearDraft()
	m.flash = "draft cleared — ↑ brings it back · ctrl+c again quits"
	return true
}

// pasteText puts a paste into the input: short ones as they are, long
// ones as a token (see pasteLines).
func (m *Model) pasteText(content string) {
	content = strings.ReplaceAll(strings.ReplaceAll(content, "\r\n", "\n"), "\r", "\n")
	lines := chat.CountLines(content)
	if lines <= pasteLines && len(content) <= pasteChars {
		m.input.InsertString(content)
		return
	}
	m.pasteSeq++
	what := plural(lines, "line")
	if lines <= 1 {
		what = fmtCount(len([]rune(content))) + " chars"
	}
	p := paste{token: fmt.Sprintf("[pasted %s #%d]", what, m.pasteSeq), text: content}
	m.pastes = append(m.pastes, p)
	m.input.InsertString(p.token)
	if t := m.threshold(m.current()); t > 0 && len(content)/4 > t {
		m.flash = fmt.Sprintf("this paste (~%s tokens) is larger than the model's context (%s): it will see only part of it; the session keeps it whole",
			fmtCount(len(content)/4), fmtCount(t))
	}
}

// inputMaxHeight is the most lines the input grows to: about a third of
// the screen; beyond it the input scrolls.
func inputMaxHeight(h int) int { return max(1, h/3) }

// inputScrollNote says where the input's view is when it holds more lines
// than it shows ("" when it shows them all).
func (m *Model) inputScrollNote() string {
	in := &m.input
	n := in.LineCount()
	if n <= in.Height() && in.ScrollYOffset() == 0 {
		return ""
	}
	return fmt.Sprintf("line %d of %d · the input scrolls", in.Line()+1, n)
}

// remember adds a draft sent or cleared to the input history.
func (m *Model) remember(d draft) {
	if n := len(m.history); n == 0 || m.history[n-1].text != d.text {
		m.history = append(m.history, d)
	}
	m.histPos = len(m.history)
}

// recallable: Up recalls history when the input is empty, or still holds
// the entry recalled last (so Up walks further back).
func (m *Model) recallable() bool {
	if len(m.history) == 0 {
		return false
	}
	v := m.input.Value()
	return v == "" || m.browsing() && v == m.history[m.histPos].text
}

func (m *Model) browsing() bool {
	return m.histPos < len(m.history) && m.input.Value() == m.history[m.histPos].text
}

func (m *Model) recall(dir int) {
	pos := m.histPos + dir
	if pos < 0 {
		return
	}
	m.histPos = min(pos, len(m.history))
	if m.histPos == len(m.history) {
		m.clearDraft()
		return
	}
	m.setDraft(m.history[m.histPos])
}

// headOf is the start of s: at most n lines and about max bytes (cut at
// a character boundary), and whether anything was left out. Showing a
// 10 MB message wraps only what fits on screen.
func headOf(s string, n, maxBytes int) (string, bool) {
	cut := false
	if len(s) > maxBytes {
		s, cut = strings.ToValidUTF8(s[:maxBytes], ""), true
	}
	pos := 0
	for range n {
		i := strings.IndexByte(s[pos:], '\n')
		if i < 0 {
			return s, cut
		}
		pos += i + 1
	}
	if pos < len(s) {
		return s[:pos], true
	}
	return s, cut
}

package tui

import (
	"strings"

	"charm.land/glamour/v2"
	"github.com/charmbracelet/x/ansi"
)

// markdown renders Markdown with glamour, one TermRenderer per width. It
// belongs to the Bubble Tea loop: a TermRenderer is not safe to share
// across goroutines, so Cmds that render (the memory inspector) build
// their own with renderMarkdown.
type markdown struct {
	style   string
	byWidth map[int]*glamour.TermRenderer
}

func newMarkdown(style string) *markdown {
	return &markdown{style: style, byWidth: map[int]*glamour.TermRenderer{}}
}

// lines renders src wrapped to w columns, without the blank lines glamour
// puts around a document, every line cut to w as a safety net.
func (m *markdown) lines(src string, w int) []string {
	r := m.byWidth[w]
	if r == nil {
		if len(m.byWidth) > 8 { // a resize storm: keep the map small
			clear(m.byWidth)
		}
		var err error
		r, err = glamour.NewTermRenderer(glamour.WithStandardStyle(m.style), glamour.WithWordWrap(w))
		if err != nil {
			return plainLines(src, w)
		}
		m.byWidth[w] = r
	}
	out, err := r.Render(src)
	if err != nil {
		return plainLines(src, w)
	}
	return trimBlank(fitLines(strings.Split(out, "\n"), w))
}

// renderMarkdown is the goroutine-safe form for Cmds.
func renderMarkdown(src, style string, w int) string {
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(style), glamour.WithWordWrap(w))
	if err != nil {
		return strings.Join(plainLines(src, w), "\n")
	}
	out, err := r.Render(src)
	if err != nil {
		return strings.Join(plainLines(src, w), "\n")
	}
	return strings.Join(trimBlank(fitLines(strings.Split(out, "\n"), w)), "\n")
}

// stablePrefix returns where the settled part of a streaming Markdown
// text ends: after its last blank line outside a code fence. What comes
// before cannot change as more text arrives, so it is rendered once and
// only the tail is re-rendered per frame.
func stablePrefix(s string) int {
	cut, pos := 0, 0
	fence := false
	for pos < len(s) {
		end := strings.IndexByte(s[pos:], '\n')
		if end < 0 {
			break // the last line is still being written
		}
		line := s[pos : pos+end]
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
		}
		pos += end + 1
		if !fence && t == "" {
			cut = pos
		}
	}
	return cut
}

// plainLines wraps text without Markdown, for errors and fallbacks.
func plainLines(s string, w int) []string {
	if w < 1 {
		w = 1
	}
	s = strings.ReplaceAll(s, "\t", "    ")
	return strings.Split(ansi.Wrap(s, w, ""), "\n")
}

// fitLines cuts every line to w display columns.
func fitLines(ls []string, w int) []string {
	for i, l := range ls {
		if ansi.StringWidth(l) > w {
			ls[i] = ansi.Truncate(l, w, "")
		}
	}
	return ls
}

// trimBlank drops blank lines (spaces and escape codes only) at both ends.
func trimBlank(ls []string) []string {
	blank := func(l string) bool { return strings.TrimSpace(ansi.Strip(l)) == "" }
	for len(ls) > 0 && blank(ls[0]) {
		ls = ls[1:]
	}
	for len(ls) > 0 && blank(ls[len(ls)-1]) {
		ls = ls[:len(ls)-1]
	}
	return ls
}

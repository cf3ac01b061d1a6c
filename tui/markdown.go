package tui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// markdown renders Markdown for one theme (markdown_render.go). It keeps
// no state between calls, so Cmds may build their own with
// renderMarkdown.
type markdown struct {
	th *mdTheme
}

// newMarkdown takes the theme's Markdown style: "dark" or "light".
func newMarkdown(style string) *markdown {
	return &markdown{th: newMDTheme(style)}
}

// lines renders src wrapped to w columns, without blank lines at either
// end, every line cut to w as a safety net. Tables are cut out first and
// drawn at their content's width.
func (m *markdown) lines(src string, w int) []string {
	var out []string
	for _, seg := range splitTables(cleanText(src)) {
		var ls []string
		if seg.table {
			ls = renderTable(strings.Split(seg.text, "\n"), m.th, w)
		} else {
			ls = trimBlank(renderMD(seg.text, m.th, w))
		}
		if len(out) > 0 && len(ls) > 0 {
			out = append(out, "")
		}
		out = append(out, ls...)
	}
	return fitLines(out, w)
}

// renderMarkdown is the goroutine-safe form for Cmds.
func renderMarkdown(src, style string, w int) string {
	return strings.Join(newMarkdown(style).lines(src, w), "\n")
}

// mdSegment is a run of Markdown, or a table.
type mdSegment struct {
	text  string
	table bool
}

// splitTables cuts src into tables (outside code fences) and the rest.
func splitTables(src string) []mdSegment {
	if !strings.Contains(src, "|") {
		return []mdSegment{{text: src}}
	}
	var segs []mdSegment
	var cur, table []string
	flush := func() {
		if len(table) > 0 {
			if len(table) >= 2 && isTableRule(table[1]) {
				if len(cur) > 0 {
					segs = append(segs, mdSegment{text: strings.Join(cur, "\n")})
					cur = nil
				}
				segs = append(segs, mdSegment{text: strings.Join(table, "\n"), table: true})
			} else {
				cur = append(cur, table...)
			}
			table = nil
		}
	}
	fence := ""
	for _, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
			flush()
			fence = t[:3]
		} else if fence != "" && strings.HasPrefix(t, fence) {
			fence = ""
		} else if fence == "" && strings.HasPrefix(t, "|") {
			table = append(table, l)
			continue
		}
		flush()
		cur = append(cur, l)
	}
	flush()
	if len(cur) > 0 {
		segs = append(segs, mdSegment{text: strings.Join(cur, "\n")})
	}
	return segs
}

func isTableRule(l string) bool {
	t := strings.Trim(strings.TrimSpace(l), "|")
	return t != "" && strings.Trim(t, "-:| ") == ""
}

// cleanText makes model or tool text safe to draw: invalid UTF-8 becomes
// U+FFFD, escape sequences and control characters (which would move the
// cursor or clear the screen) are dropped, and tabs are expanded — the
// terminal cell renderer does not draw them.
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.ContainsRune(s, '\x1b') {
		s = ansi.Strip(s)
	}
	if strings.IndexFunc(s, isControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if isControl(r) {
				return -1
			}
			return r
		}, s)
	}
	if strings.IndexByte(s, '\t') >= 0 {
		s = expandMarkdownTabs(s)
	}
	return s
}

// isControl: a C0/C1 control character other than newline and tab.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0)
}

// expandMarkdownTabs expands tabs line by line: to the tab width of a
// fenced code block's language, else to 4 columns (CommonMark's tab stop,
// so indentation keeps its meaning).
func expandMarkdownTabs(s string) string {
	lines := strings.Split(s, "\n")
	fence, tab := "", 4
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence, tab = t[:3], tabWidth(strings.TrimSpace(strings.TrimLeft(t, "`~")))
		case fence != "" && strings.HasPrefix(t, fence):
			fence, tab = "", 4
		}
		lines[i] = expandTabs(l, tab)
	}
	return strings.Join(lines, "\n")
}

// tabWidth is a language's customary tab width: 8 for Makefiles (tabs are
// syntax there and were always drawn at 8), 4 for everything else.
func tabWidth(lang string) int {
	lang, _, _ = strings.Cut(strings.ToLower(lang), " ")
	switch lang {
	case "make", "makefile", "mk":
		return 8
	}
	return 4
}

// expandTabs replaces tabs by spaces up to the next multiple of tab
// columns (one line, no escape codes).
func expandTabs(s string, tab int) string {
	if strings.IndexByte(s, '\t') < 0 {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch {
		case r == '\t':
			n := tab - col%tab
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case r == '\n':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			if r < utf8.RuneSelf {
				col++
			} else {
				col += ansi.StringWidth(string(r))
			}
		}
	}
	return b.String()
}

// stablePrefix returns where the settled part of a streaming Markdown
// text ends: after its last blank line outside a code fence, looking only
// at what follows from, a settled point found before (a settled point is
// outside any fence, so the scan starts there with no fence open). What
// comes before cannot change as more text arrives, so it is rendered once
// and only the tail is re-rendered per frame.
func stablePrefix(s string, from int) int {
	cut, pos := from, from
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
	s = cleanText(s)
	return fitLines(strings.Split(ansi.Wrap(s, w, ""), "\n"), w)
}

// fitLines cuts every line to w display columns.
func fitLines(ls []string, w int) []string {
	for i, l := range ls {
		if len(l) > w && ansi.StringWidth(l) > w { // a column takes at least a byte
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

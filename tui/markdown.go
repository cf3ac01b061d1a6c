package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"charm.land/glamour/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/dustin/go-humanize"
)

// Markdown is drawn by glamour, with chroma's highlighting in its code
// blocks (styles in markdown_style.go). Around it Polly keeps what a chat
// needs: text made harmless before glamour sees it (escape codes, control
// characters, invalid UTF-8) with its tabs kept as indentation, tables
// drawn at their content's width, replies rendered chunk by chunk so that
// a streamed token costs the open chunk only (markdown_chunks.go), and
// plain text for a reply too long to lay out.

// markdownMax is the longest text drawn as Markdown: glamour takes about
// 3 ms per KB, so a 10 MB reply would hold the screen for half a minute.
// Longer text is wrapped as plain text, with a line that says so.
const markdownMax = 256 << 10

// markdown renders Markdown for one theme with one glamour renderer per
// width, each built on first use (not for the first frame). A glamour
// renderer is not safe for concurrent use: a markdown belongs to the
// Bubble Tea loop, and Cmds build their own (renderMarkdown).
type markdown struct {
	style   string
	byWidth map[int]*glamour.TermRenderer
	fed     int // bytes given to glamour so far: what rendering cost (tests and benchmarks read it)
}

// newMarkdown takes the theme's Markdown style: "dark", "light" or "none".
func newMarkdown(style string) *markdown {
	return &markdown{style: style}
}

// renderMarkdown is the goroutine-safe form for Cmds.
func renderMarkdown(src, style string, w int) string {
	return strings.Join(newMarkdown(style).lines(src, w), "\n")
}

// lines renders a whole text at width w, cut into the chunks a stream of
// it would have settled into.
func (m *markdown) lines(src string, w int) []string {
	var r mdRendering
	return r.render(m, src, w, false, true)
}

// mdRendering is a text rendered up to a chunk boundary, kept while more
// text streams in: what it covers is never rendered again by the same
// markdown at the same width.
type mdRendering struct {
	m     *markdown
	src   string // the text rendered (a prefix of what comes next)
	at    mdCursor
	w     int
	gap   bool
	plain bool     // the text is over markdownMax: plain text
	lines []string // a blank line if gap, the settled chunks' lines, a blank line between chunks
	body  bool     // lines has a chunk
}

// render returns the lines of src at width w, after a blank line if gap.
// What settled since the last call is rendered and kept; the rest (the
// open chunk) is rendered for this call only, as Markdown when final or
// not too long, else as plain text until it settles. The result may use
// the spare capacity of the kept lines: it is valid until the next call.
func (r *mdRendering) render(m *markdown, src string, w int, gap, final bool) []string {
	plain := len(src) > markdownMax
	if r.m != m || r.w != w || r.gap != gap || r.plain != plain || !strings.HasPrefix(src, r.src) {
		*r = mdRendering{m: m, w: w, gap: gap, plain: plain}
		if gap {
			r.lines = append(r.lines, "")
		}
		if plain {
			r.lines = append(r.lines, mdNote(fmt.Sprintf("over %s: shown as plain text, not as Markdown", humanize.IBytes(markdownMax)), w)...)
		}
	}
	if plain {
		for {
			end, ok := nextPlainChunk(src, r.at.pos)
			if !ok {
				break
			}
			r.lines = append(r.lines, plainLines(src[r.at.pos:end], w)...)
			r.at.pos = end
		}
		r.src = src[:r.at.pos]
		return append(r.lines, plainLines(strings.TrimRight(src[r.at.pos:], "\n"), w)...)
	}
	for {
		next, ok := nextChunk(src, r.at)
		if !ok {
			break
		}
		r.add(m.chunk(chunkSource(src, r.at, next.pos), w))
		r.at = next
	}
	r.src = src[:r.at.pos]
	if strings.TrimSpace(src[r.at.pos:]) == "" {
		return r.lines
	}
	tail := chunkSource(src, r.at, len(src))
	var ls []string
	if final || len(tail) <= 4*bigChunk {
		ls = m.chunk(tail, w)
	} else {
		ls = plainLines(tail, w) // a huge paragraph still streaming
	}
	// The open chunk goes into the spare capacity of lines, which itself
	// is untouched: the next call appends over it.
	out := r.lines
	if r.body && len(ls) > 0 {
		out = append(out, "")
	}
	return append(out, ls...)
}

func (r *mdRendering) add(ls []string) {
	if len(ls) == 0 {
		return
	}
	if r.body {
		r.lines = append(r.lines, "")
	}
	r.lines = append(r.lines, ls...)
	r.body = true
}

// mdNote is a faint line of Polly's own among rendered Markdown, cut to
// the width.
func mdNote(s string, w int) []string {
	return fitLines([]string{ansi.NewStyle().Faint().Styled("  · " + s)}, w)
}

// chunk renders one chunk: cleaned, its tables cut out and drawn at their
// content's width (glamour stretches a table to the whole width), without
// the blank lines glamour puts around a document or the spaces it pads
// lines with, every line cut to w as a safety net.
func (m *markdown) chunk(src string, w int) []string {
	src = cleanText(src)
	if tooDeep(src) {
		return append(mdNote("nested too deep to lay out: shown as plain text", w), plainLines(src, w)...)
	}
	var out []string
	for _, seg := range splitTables(src) {
		ww := w
		if seg.width > 0 {
			ww = min(w, seg.width)
		}
		ls := m.document(seg.text, ww)
		if len(out) > 0 && len(ls) > 0 {
			out = append(out, "")
		}
		out = append(out, ls...)
	}
	return fitLines(out, w)
}

// document is one glamour document at width w, or the text as plain
// lines if glamour fails (or panics: a reply must not take the screen
// down; the renderer, perhaps left half-way, is dropped).
func (m *markdown) document(src string, w int) (out []string) {
	defer func() {
		if recover() != nil {
			delete(m.byWidth, w)
			out = plainLines(src, w)
		}
	}()
	r := m.byWidth[w]
	if r == nil {
		if m.byWidth == nil || len(m.byWidth) > 8 { // a resize storm: keep the map small
			m.byWidth = map[int]*glamour.TermRenderer{}
		}
		registerCodeStyles()
		var err error
		r, err = glamour.NewTermRenderer(
			glamour.WithStyles(mdStyleConfig(m.style, w)),
			glamour.WithWordWrap(w),
			glamour.WithChromaFormatter("terminal16m"), // the theme's exact colours; Bubble Tea downsamples
		)
		if err != nil {
			return plainLines(src, w)
		}
		m.byWidth[w] = r
	}
	m.fed += len(src)
	s, err := r.Render(src)
	if err != nil {
		return plainLines(src, w)
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = trimPadding(l)
	}
	return trimBlank(ls)
}

// trimPadding drops the spaces glamour pads a line to the width with,
// plain or styled (in a quote, each in its own SGR): they cost bytes and
// cell updates, and show nothing unless they have a background.
func trimPadding(l string) string {
	for {
		l = strings.TrimRight(l, " ")
		var reset string
		switch {
		case strings.HasSuffix(l, "\x1b[m"):
			reset = "\x1b[m"
		case strings.HasSuffix(l, "\x1b[0m"):
			reset = "\x1b[0m"
		default:
			return l
		}
		body := l[:len(l)-len(reset)]
		open := strings.LastIndex(body, "\x1b[")
		if open < 0 {
			return l
		}
		sgr, text, ok := strings.Cut(body[open+2:], "m")
		if !ok || strings.Trim(text, " ") != "" || setsBackground(sgr) {
			return l
		}
		l = body[:open]
	}
}

// setsBackground: SGR parameters that set a background colour.
func setsBackground(sgr string) bool {
	ps := strings.Split(sgr, ";")
	for i := 0; i < len(ps); i++ {
		switch p := ps[i]; {
		case p == "38" || p == "58":
			if i+1 < len(ps) && ps[i+1] == "2" {
				i += 4
			} else {
				i += 2
			}
		case p == "48" || len(p) == 2 && p[0] == '4' && p[1] <= '7' || len(p) == 3 && strings.HasPrefix(p, "10") && p[2] <= '7':
			return true
		}
	}
	return false
}

// Nesting glamour lays out in time: its cost grows exponentially with
// the depth of nested quotes (60 levels of ">" take seconds) and fast
// with lists inside them ("> - " 12 times: half a second).
const (
	maxQuotes  = 6
	maxNesting = 10 // quotes, list markers, and 4 columns of indentation each count one
)

// tooDeep: a line outside code fences starts nested deeper than that.
func tooDeep(src string) bool {
	fence := ""
	for l := range strings.SplitSeq(src, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case fence == "" && isFence(t):
			fence = t[:3]
			continue
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if quotes, depth := nesting(l); quotes > maxQuotes || depth > maxNesting {
			return true
		}
	}
	return false
}

// nesting counts the containers a line opens at its start: quote marks,
// list markers ("-", "*", "+", "1.", "1)") and indentation.
func nesting(l string) (quotes, depth int) {
	cols := 0
	for i := 0; i < len(l); {
		c := l[i]
		spaceAfter := func(j int) bool { return j < len(l) && (l[j] == ' ' || l[j] == '\t') }
		switch {
		case c == ' ':
			cols++
			i++
		case c == '\t':
			cols += 4
			i++
		case c == '>':
			quotes++
			depth++
			i++
		case (c == '-' || c == '*' || c == '+') && spaceAfter(i+1):
			depth++
			i += 2
		case c >= '0' && c <= '9':
			j := i
			for j < len(l) && j-i < 9 && l[j] >= '0' && l[j] <= '9' {
				j++
			}
			if j < len(l) && (l[j] == '.' || l[j] == ')') && spaceAfter(j+1) {
				depth++
				i = j + 2
				continue
			}
			return quotes, depth + cols/4
		default:
			return quotes, depth + cols/4
		}
	}
	return quotes, depth + cols/4
}

// mdSegment is a run of Markdown; width > 0 marks a table and the width
// its content needs.
type mdSegment struct {
	text  string
	width int
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
				segs = append(segs, mdSegment{text: strings.Join(table, "\n"), width: tableWidth(table)})
			} else {
				cur = append(cur, table...)
			}
			table = nil
		}
	}
	fence := ""
	for _, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if fence == "" && isFence(t) {
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

// tableWidth is what glamour needs to draw the table without wrapping:
// every column as wide as its widest cell plus a space each side, the
// separators between columns, and the document's margins.
func tableWidth(rows []string) int {
	var cols []int
	for i, r := range rows {
		if i == 1 {
			continue // the |---|---| rule
		}
		for j, c := range splitRow(r) {
			c = strings.NewReplacer("`", "", "**", "", "__", "").Replace(strings.TrimSpace(c))
			if j >= len(cols) {
				cols = append(cols, 0)
			}
			cols[j] = max(cols[j], ansi.StringWidth(c))
		}
	}
	w := 4 + max(0, len(cols)-1) // margins, separators
	for _, c := range cols {
		w += c + 2
	}
	return w
}

// splitRow cuts a table row into its cells; "\|" is a pipe inside a cell.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, "\\|") {
		row = row[:len(row)-1]
	}
	var cells []string
	start := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			cells = append(cells, strings.ReplaceAll(row[start:i], "\\|", "|"))
			start = i + 1
		}
	}
	return append(cells, strings.ReplaceAll(row[start:], "\\|", "|"))
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
		case fence == "" && isFence(t):
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

package tui

import (
	"bytes"
	"image/color"
	"strconv"
	"strings"
	"sync"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Polly draws Markdown itself: goldmark parses (CommonMark, plus task
// boxes and ~~strike~~ from markdown_inline.go, and tables from
// markdown_table.go) and this file lays the tree out as terminal lines.
// A general renderer (glamour) linked a syntax highlighter, a CSS parser
// and an HTML sanitiser whose package inits cost ~40 ms on every start,
// --version and headless runs included.

// mdParser is built on first use, not at start-up, and shared: a goldmark
// parser holds no per-parse state, so concurrent Parse calls are safe.
var mdParser = sync.OnceValue(func() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(append(parser.DefaultInlineParsers(),
			util.Prioritized(taskBoxParser{}, 0),
			util.Prioritized(strikeParser{}, 500))...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	)
})

// mdTheme is the SGR sequence of each Markdown element, for a dark or a
// light background, or ("none") without colour for NO_COLOR: bold,
// italics and underline remain, so **bold** still shows as bold, without
// stars.
type mdTheme struct {
	h1, heading, code, linkText, link, quote, rule, marker, html string
	emph, strong, strike                                         string
	syntax                                                       [tkCount]string
}

func sgrOf(s ansi.Style) string { return s.String() }

func newMDTheme(style string) *mdTheme {
	st := ansi.NewStyle
	if style == "none" {
		t := &mdTheme{
			h1: sgrOf(st().Bold().Underline(true)), heading: sgrOf(st().Bold()),
			linkText: sgrOf(st().Bold()), link: sgrOf(st().Underline(true)),
			quote: sgrOf(st().Italic(true)),
			emph:  sgrOf(st().Italic(true)), strong: sgrOf(st().Bold()), strike: sgrOf(st().Strikethrough(true)),
		}
		t.syntax[tkComment] = sgrOf(st().Italic(true))
		t.syntax[tkHunk] = sgrOf(st().Bold())
		return t
	}
	dark := style != "light"
	c := func(light, darkc string) color.Color {
		if dark {
			return lipgloss.Color(darkc)
		}
		return lipgloss.Color(light)
	}
	t := &mdTheme{
		h1:       sgrOf(st().Bold().ForegroundColor(lipgloss.Color("#FFFF87")).BackgroundColor(lipgloss.Color("#5F5FFF"))),
		heading:  sgrOf(st().Bold().ForegroundColor(c("#005FFF", "#00AFFF"))),
		code:     sgrOf(st().ForegroundColor(c("#D7005F", "#FF5F87")).BackgroundColor(c("#EEEEEE", "#303030"))),
		linkText: sgrOf(st().Bold().ForegroundColor(c("#00875F", "#00AF5F"))),
		link:     sgrOf(st().Underline(true).ForegroundColor(c("#00878F", "#00AFAF"))),
		quote:    sgrOf(st().ForegroundColor(c("#8A8A8A", "#7A7A7A"))),
		rule:     sgrOf(st().ForegroundColor(c("#BCBCBC", "#585858"))),
		marker:   sgrOf(st().ForegroundColor(c("#5A3FC0", "#B8A4FF"))),
		html:     sgrOf(st().ForegroundColor(c("#8A8A8A", "#7A7A7A"))),
		emph:     sgrOf(st().Italic(true)),
		strong:   sgrOf(st().Bold()),
		strike:   sgrOf(st().Strikethrough(true)),
	}
	t.syntax = [tkCount]string{
		tkComment: sgrOf(st().Italic(true).ForegroundColor(c("#6E7781", "#7F848E"))),
		tkString:  sgrOf(st().ForegroundColor(c("#0A3069", "#98C379"))),
		tkNumber:  sgrOf(st().ForegroundColor(c("#953800", "#D19A66"))),
		tkKeyword: sgrOf(st().ForegroundColor(c("#8250DF", "#C678DD"))),
		tkType:    sgrOf(st().ForegroundColor(c("#0550AE", "#56B6C2"))),
		tkKey:     sgrOf(st().ForegroundColor(c("#0969DA", "#61AFEF"))),
		tkAdd:     sgrOf(st().ForegroundColor(c("#1A7F37", "#5FD787"))),
		tkDel:     sgrOf(st().ForegroundColor(c("#C62828", "#FF6B6B"))),
		tkHunk:    sgrOf(st().ForegroundColor(c("#0E7490", "#56B6C2"))),
	}
	return t
}

// mdRenderer lays out one parsed document.
type mdRenderer struct {
	src []byte
	th  *mdTheme
}

// renderMD renders Markdown src (already cleaned) as lines of at most w
// columns: a two-column margin each side, blocks separated by one blank
// line.
func renderMD(src string, th *mdTheme, w int) []string {
	b := []byte(src)
	doc := mdParser().Parse(text.NewReader(b))
	r := mdRenderer{src: b, th: th}
	inner := max(w-4, 1)
	ls := r.blocks(doc, inner)
	for i, l := range ls {
		if l != "" {
			ls[i] = "  " + l
		}
	}
	return ls
}

// blocks renders a container's children, a blank line between them
// unless the container is a tight list item.
func (r *mdRenderer) blocks(n ast.Node, w int) []string {
	tight := false
	if li, ok := n.(*ast.ListItem); ok {
		if l, ok := li.Parent().(*ast.List); ok {
			tight = l.IsTight
		}
	}
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		ls := r.block(c, w)
		if len(ls) == 0 {
			continue
		}
		if len(out) > 0 && !tight {
			out = append(out, "")
		}
		out = append(out, ls...)
	}
	return out
}

func (r *mdRenderer) block(n ast.Node, w int) []string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return r.wrapInline(n, "", w)
	case *ast.Heading:
		return r.heading(n, w)
	case *ast.ThematicBreak:
		return []string{r.th.rule + strings.Repeat("─", min(w, 60)) + sgrReset}
	case *ast.FencedCodeBlock:
		return r.code(n, string(n.Language(r.src)), w)
	case *ast.CodeBlock:
		return r.code(n, "", w)
	case *ast.Blockquote:
		bar := r.th.quote + "│" + sgrReset + " "
		ls := r.blocks(n, max(w-2, 1))
		for i, l := range ls {
			ls[i] = bar + l
		}
		return ls
	case *ast.List:
		return r.list(n, w)
	case *ast.HTMLBlock:
		var ss []span
		for i := range n.Lines().Len() {
			seg := n.Lines().At(i)
			ss = append(ss, span{string(seg.Value(r.src)), r.th.html})
		}
		if n.HasClosure() {
			ss = append(ss, span{string(n.ClosureLine.Value(r.src)), r.th.html})
		}
		return r.codeLines(ss, w)
	}
	if n.HasChildren() {
		return r.blocks(n, w)
	}
	return nil
}

func (r *mdRenderer) heading(n *ast.Heading, w int) []string {
	if n.Level == 1 {
		ls := wrapSpans(r.inline(n, r.th.h1, nil), max(w-2, 1))
		for i, l := range ls { // a bar: one space of background each side
			ls[i] = append(append([]span{{" ", r.th.h1}}, l...), span{" ", r.th.h1})
		}
		return joinAll(ls)
	}
	pre := strings.Repeat("#", n.Level) + " "
	return joinAll(wrapSpans(r.inline(n, r.th.heading, []span{{pre, r.th.heading}}), w))
}

// code draws a code block indented by two columns, highlighted when its
// language is known, long lines cut (not word-wrapped) at the width.
func (r *mdRenderer) code(n ast.Node, lang string, w int) []string {
	lines := n.Lines()
	src := make([]string, lines.Len())
	for i := range lines.Len() {
		seg := lines.At(i)
		src[i] = strings.TrimRight(string(seg.Value(r.src)), "\n")
	}
	var out []string
	for _, ss := range highlight(lang, src, &r.th.syntax) {
		for _, l := range hardWrapSpans(ss, max(w-2, 1)) {
			out = append(out, "  "+joinSpans(l))
		}
	}
	return out
}

// codeLines draws raw lines (an HTML block) cut at the width.
func (r *mdRenderer) codeLines(ss []span, w int) []string {
	var out []string
	for _, s := range ss {
		for _, l := range strings.Split(strings.TrimRight(s.text, "\n"), "\n") {
			for _, wl := range hardWrapSpans([]span{{l, s.sgr}}, w) {
				out = append(out, joinSpans(wl))
			}
		}
	}
	return out
}

func (r *mdRenderer) list(n *ast.List, w int) []string {
	num := n.Start
	count := n.ChildCount()
	markW := 2 // "• "
	if n.IsOrdered() {
		markW = len(strconv.Itoa(num+count-1)) + 2 // "10. "
	}
	bullet := "•"
	for p := n.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*ast.List); ok {
			bullet = "◦"
			break
		}
	}
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		mark := bullet + " "
		if n.IsOrdered() { // numbers right-aligned: " 9." over "10."
			mark = strconv.Itoa(num) + string(n.Marker)
			mark = strings.Repeat(" ", max(markW-1-len(mark), 0)) + mark + " "
			num++
		}
		ls := r.blocks(c, max(w-markW, 1))
		if len(ls) == 0 {
			ls = []string{""}
		}
		if len(out) > 0 && !n.IsTight {
			out = append(out, "")
		}
		pad := strings.Repeat(" ", markW)
		for i, l := range ls {
			switch {
			case i == 0:
				out = append(out, r.th.marker+mark+sgrReset+l)
			case l == "":
				out = append(out, "")
			default:
				out = append(out, pad+l)
			}
		}
	}
	return out
}

// wrapInline word-wraps a block's inline content.
func (r *mdRenderer) wrapInline(n ast.Node, sgr string, w int) []string {
	return joinAll(wrapSpans(r.inline(n, sgr, nil), w))
}

func joinAll(ls [][]span) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = joinSpans(l)
	}
	return out
}

// inline appends the spans of n's inline children, drawn with sgr plus
// their own styles.
func (r *mdRenderer) inline(n ast.Node, sgr string, ss []span) []span {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Segment.Value(r.src)
			if !c.IsRaw() {
				v = unescapeMD(v)
			}
			ss = append(ss, span{string(v), sgr})
			switch {
			case c.HardLineBreak():
				ss = append(ss, span{"\n", sgr})
			case c.SoftLineBreak():
				ss = append(ss, span{" ", sgr})
			}
		case *ast.String:
			ss = append(ss, span{string(c.Value), sgr})
		case *ast.CodeSpan:
			var b strings.Builder
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				switch t := t.(type) {
				case *ast.Text:
					b.Write(t.Segment.Value(r.src))
				case *ast.String:
					b.Write(t.Value)
				}
			}
			ss = append(ss, span{strings.ReplaceAll(b.String(), "\n", " "), sgr + r.th.code})
		case *ast.Emphasis:
			st := r.th.emph
			if c.Level >= 2 {
				st = r.th.strong
			}
			ss = r.inline(c, sgr+st, ss)
		case *ast.Link:
			before := len(ss)
			ss = r.inline(c, sgr+r.th.linkText, ss)
			if dest := string(c.Destination); dest != "" && dest != spansText(ss[before:]) {
				ss = append(ss, span{" ", sgr}, span{dest, sgr + r.th.link})
			}
		case *ast.AutoLink:
			ss = append(ss, span{string(c.URL(r.src)), sgr + r.th.link})
		case *ast.Image:
			ss = append(ss, span{"image: ", sgr + r.th.html})
			ss = r.inline(c, sgr+r.th.linkText, ss)
			ss = append(ss, span{" ", sgr}, span{string(c.Destination), sgr + r.th.link})
		case *ast.RawHTML:
			for i := range c.Segments.Len() {
				seg := c.Segments.At(i)
				ss = append(ss, span{strings.ReplaceAll(string(seg.Value(r.src)), "\n", " "), sgr + r.th.html})
			}
		case *taskBox:
			box := "[ ] "
			if c.checked {
				box = "[✓] "
			}
			ss = append(ss, span{box, sgr + r.th.marker})
		case *strike:
			ss = r.inline(c, sgr+r.th.strike, ss)
		default:
			ss = r.inline(c, sgr, ss)
		}
	}
	return ss
}

func spansText(ss []span) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.text)
	}
	return b.String()
}

// unescapeMD resolves backslash escapes and character references, as an
// HTML renderer would when it writes the text.
func unescapeMD(v []byte) []byte {
	if bytes.IndexByte(v, '\\') >= 0 {
		v = util.UnescapePunctuations(v)
	}
	if bytes.IndexByte(v, '&') >= 0 {
		v = util.ResolveEntityNames(util.ResolveNumericReferences(v))
	}
	return v
}

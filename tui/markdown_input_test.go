package tui

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"polly/agent"
	"polly/memory/chat"
)

// ownCodes are the escape codes Polly's rendering writes itself: SGR
// styles and glamour's OSC 8 hyperlinks (whose URL cannot hold a control
// character: cleanText removed them all).
var ownCodes = regexp.MustCompile(`\x1b\[[0-9;:]*m|\x1b\]8;[^\x07\x1b]*\x07`)

// harmful is the first thing in rendered lines that a terminal would act
// on beyond styling: an escape sequence the renderer did not write, a
// control character, invalid UTF-8.
func harmful(ls []string) string {
	for _, l := range ls {
		rest := ownCodes.ReplaceAllString(l, "")
		if !utf8.ValidString(rest) {
			return "invalid UTF-8 in " + strconvQuote(l)
		}
		for _, r := range rest {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				return "control " + strconvQuote(string(r)) + " in " + strconvQuote(l)
			}
		}
	}
	return ""
}

func strconvQuote(s string) string { return `"` + strings.ReplaceAll(ansi.Strip(s), `"`, `\"`) + `"` }

// badInputs are model replies a renderer must survive: broken Markdown,
// nesting glamour cannot lay out in time, escape codes and control
// characters, invalid UTF-8.
var badInputs = map[string]string{
	"unclosed fence":     "```go\nfunc f() {\n\n# not a heading\n",
	"unclosed emphasis":  "**bold and _emph and `code and [link(",
	"ragged table":       "| a | b |\n|---|\n| 1 | 2 | 3 | 4 |\n| x |",
	"table of 3000 cols": strings.Repeat("| c ", 3000) + "|\n" + strings.Repeat("|---", 3000) + "|\n" + strings.Repeat("| 1 ", 3000) + "|",
	"html":               "<div onclick=x>text</div>\n\n<script>alert(1)</script> and <b>inline</b>",
	"odd links":          "[x](javascript:alert(1)) ![img]( [a]: <> <http://> [](#)",
	"quotes 1000 deep":   strings.Repeat(">", 1000) + " deep\n",
	"list 200 deep": func() string {
		var b strings.Builder
		for i := range 200 {
			b.WriteString(strings.Repeat("  ", i) + "- x\n")
		}
		return b.String()
	}(),
	"escape codes": "clear \x1b[2J\x1b[H home, clipboard \x1b]52;c;ZXZpbA==\x07, title \x1b]0;owned\x1b\\, " +
		"link \x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\, C1 \u009b2J, DCS \x1bPq#0\x1b\\, bell \a, back\bspace\n\n" +
		"```sh\necho \x1b[31mred\x1b[0m \x1b]52;c;eA==\x07\n```\n\n[x](http://a\x1b[31m.b/\x07c) `\x1b[5mblink`",
	"control characters": "nul \x00 cr \r lf\r\nvt \v ff \f del \x7f esc alone \x1b",
	"invalid UTF-8":      "broken \xff\xfe utf8, a cut rune \xe6\x97 and `\xc3` in code\n\n```\n\xff\xff\n```",
	"empty":              "",
	"only blanks":        "\n\n   \n\t\n",
}

// Every bad input renders at any width in every theme: no panic, no line
// past the width, nothing a terminal would act on, and what glamour
// cannot lay out in time (deep nesting) said in one line and shown as
// plain text.
func TestBadMarkdownInput(t *testing.T) {
	for name, src := range badInputs {
		for _, style := range []string{"dark", "none"} {
			for _, w := range []int{1, 20, 80} {
				ls := newMarkdown(style).lines(src, w)
				for _, l := range ls {
					if lw := ansi.StringWidth(l); lw > w {
						t.Errorf("%s (%s, %d): line %q is %d wide", name, style, w, ansi.Strip(l), lw)
					}
				}
				if h := harmful(ls); h != "" {
					t.Errorf("%s (%s, %d): %s", name, style, w, h)
				}
			}
		}
	}
	for _, name := range []string{"quotes 1000 deep", "list 200 deep"} {
		text := ansi.Strip(strings.Join(newMarkdown("dark").lines(badInputs[name], 80), "\n"))
		if !strings.Contains(text, "nested too deep to lay out: shown as plain text") || !strings.Contains(text, "deep") {
			t.Errorf("%s: not reported, or not shown:\n%s", name, text)
		}
	}
	text := ansi.Strip(strings.Join(newMarkdown("dark").lines(badInputs["invalid UTF-8"], 80), "\n"))
	if !strings.Contains(text, "broken \uFFFD utf8, a cut rune \uFFFD and \uFFFD in code") {
		t.Errorf("invalid UTF-8 not shown as U+FFFD:\n%s", text)
	}
	text = ansi.Strip(strings.Join(newMarkdown("dark").lines(badInputs["escape codes"], 200), "\n"))
	for _, want := range []string{"clear  home", "echo red"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text around escape codes is lost (no %q):\n%s", want, text)
		}
	}
}

// A 10 MB reply, streamed and finished, is drawn as plain text with a
// line that says why, whole (its last words on the last line), every
// line inside the screen.
func TestTenMegabyteReply(t *testing.T) {
	var b strings.Builder
	for b.Len() < 10<<20 {
		b.WriteString("A line of a **very** long reply, with `code` and \x1b[31mescapes\x1b[0m.\n\n")
	}
	b.WriteString("the last words")
	big := b.String()
	h := newHarness(t, harnessOpts{w: 100, h: 30})
	d := hdr("default")
	for i := 0; i < len(big); i += 1 << 20 {
		h.send(eventsMsg{items: []any{agent.TextDelta{Header: d, Text: big[i:min(len(big), i+1<<20)]}}})
		h.send(frameMsg{})
		checkScreen(t, "streaming", h.m.View().Content, 100, 30)
	}
	h.send(eventsMsg{items: []any{agent.MessageDone{Header: d, Message: chat.Message{Role: chat.Assistant, Content: big}}}})
	view := h.m.View().Content
	checkScreen(t, "finished", view, 100, 30)
	if !strings.Contains(ansi.Strip(view), "the last words") {
		t.Errorf("the end of the reply is not on the screen:\n%s", ansi.Strip(view))
	}
	tr := h.m.current().tr
	ls := h.m.r.lines(tr.items[len(tr.items)-1], 100)
	if !strings.Contains(ansi.Strip(strings.Join(ls[:3], "\n")), "over 256 KiB: shown as plain text, not as Markdown") {
		t.Errorf("no line says why the reply is plain text: %q", ls[:3])
	}
	if h := harmful(ls); h != "" {
		t.Error(h)
	}
	if n := len(ls); n < 200_000 {
		t.Errorf("%d lines for 10 MB of two-line paragraphs: text is missing", n)
	}
}

// FuzzMarkdown: any text, whole or streamed in two parts, renders inside
// the width and harmless, and the stream looks like the whole.
func FuzzMarkdown(f *testing.F) {
	f.Add(mdSample, uint8(60), uint16(100))
	for _, s := range badInputs {
		if len(s) < 4<<10 {
			f.Add(s, uint8(30), uint16(7))
		}
	}
	for _, c := range mdCases {
		f.Add(c.src, uint8(c.w), uint16(len(c.src)/2))
	}
	f.Fuzz(func(t *testing.T, src string, w uint8, cut uint16) {
		width := int(w%120) + 1
		m := newMarkdown("dark")
		whole := m.lines(src, width)
		for _, l := range whole {
			if lw := ansi.StringWidth(l); lw > width {
				t.Fatalf("line %q is %d wide, over %d", ansi.Strip(l), lw, width)
			}
		}
		if h := harmful(whole); h != "" {
			t.Fatal(h)
		}
		var r mdRendering
		r.render(m, src[:int(cut)%(len(src)+1)], width, false, false)
		if got := r.render(m, src, width, false, true); strings.Join(got, "\n") != strings.Join(whole, "\n") {
			t.Fatalf("streamed:\n%q\nwhole:\n%q", got, whole)
		}
	})
}

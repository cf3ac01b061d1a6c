package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// mdSample has every element the renderer draws.
const mdSample = "# Title here\n\n## Step 2\n\n" +
	"I read `parser.go`. The **bug** is in *parse* and ~~old~~ \\*not emph\\* &amp; [the docs](https://go.dev/doc) or <https://x.y/z>.\n" +
	"A soft break and a very long line that should wrap around at sixty columns because it is long.\n\n" +
	"```go\n// parse parses\nfunc parse(s string) *Node {\n\tif s == \"\" { return nil } // 0x1F\n\tx := `raw\nstring`\n}\n```\n\n" +
	"- it returns nil\n- callers expect a node\n  - nested one\n  - nested two\n- [ ] todo\n- [x] done\n\n" +
	"9. ninth\n10. tenth\n\n" +
	"> quoted **text** here\n> more\n\n---\n\n" +
	"| file | lines |\n|---|--:|\n| `a.go` | 12 |\n| **b.go** | 3 |\n\n" +
	"```diff\n@@ -1,3 +1,3 @@\n-old\n+new\n```\n"

// Every element, as text on the screen (the golden) and with its styles.
func TestMarkdownElements(t *testing.T) {
	ls := newMarkdown("dark").lines(mdSample, 60)
	plain := make([]string, len(ls))
	for i, l := range ls {
		plain[i] = ansi.Strip(l)
		if w := ansi.StringWidth(l); w > 60 {
			t.Errorf("line %q is %d wide", plain[i], w)
		}
	}
	text := strings.Join(plain, "\n")
	for _, want := range []string{
		"  Title here",                 // H1: a bar, no hashes
		"  ## Step 2",                  // other headings keep their level
		"I read parser.go. The bug is", // code, strong, emphasis: no markers, no padding
		"old *not emph*\n  & the docs https://go.dev/doc or", // escapes, entities, link text and URL
		"    func parse(s string) *Node {",                   // code indented, tab expanded
		"        if s == \"\" { return nil } // 0x1F",
		"  • it returns nil\n  • callers expect a node\n    ◦ nested one\n    ◦ nested two\n  • [ ] todo\n  • [✓] done",
		"   9. ninth\n  10. tenth", // numbers right-aligned to the widest
		"  │ quoted text here more",
		"  " + strings.Repeat("─", 56),
		"   file │ lines \n  ──────┼───────\n   a.go │    12 \n   b.go │     3 ", // sized to content, right-aligned column
		"    @@ -1,3 +1,3 @@\n    -old\n    +new",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	raw := strings.Join(ls, "\n")
	th := newMDTheme("dark")
	for what, want := range map[string]string{
		"strong":      th.strong + "bug" + sgrReset,
		"emphasis":    th.emph + "parse" + sgrReset,
		"strike":      th.strike + "old" + sgrReset,
		"inline code": th.code + "parser.go" + sgrReset,
		"link text":   th.linkText + "the docs" + sgrReset,
		"link":        th.link + "https://go.dev/doc" + sgrReset,
		"keyword":     th.syntax[tkKeyword] + "func" + sgrReset,
		"comment":     th.syntax[tkComment] + "// parse parses" + sgrReset,
		"diff add":    th.syntax[tkAdd] + "+new" + sgrReset,
		"table head":  th.strong + "file" + sgrReset,
		"quote bold":  th.strong + "text" + sgrReset,
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("%s not drawn as %q", what, want)
		}
	}
	golden.RequireEqual(t, []byte(text))
}

// Wrapping: words move to the next line whole, a word wider than the line
// is cut, styles are closed at every line end, and no width (down to 1)
// lets a line out.
func TestMarkdownWrap(t *testing.T) {
	ls := newMarkdown("dark").lines("alpha **beta gamma** delta "+strings.Repeat("x", 30), 20)
	got := make([]string, len(ls))
	for i, l := range ls {
		got[i] = ansi.Strip(l)
		if i := strings.LastIndex(l, "\x1b[1m"); i >= 0 && strings.LastIndex(l, sgrReset) < i {
			t.Errorf("bold left open at the end of line %q", l)
		}
	}
	want := []string{"  alpha beta gamma", "  delta", "  xxxxxxxxxxxxxxxx", "  xxxxxxxxxxxxxx"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrapped = %q, want %q", got, want)
	}
	for w := 1; w <= 70; w++ {
		for _, l := range newMarkdown("light").lines(mdSample+"\n\n日本語のテキスト "+strings.Repeat("語", 40), w) {
			if lw := ansi.StringWidth(l); lw > w {
				t.Fatalf("width %d: line %q is %d wide", w, ansi.Strip(l), lw)
			}
		}
	}
}

// A table wider than the screen shares the room: narrow columns keep
// their width, the wide one wraps its cell.
func TestTableWrapsWideColumn(t *testing.T) {
	ls := newMarkdown("dark").lines("| id | text |\n|---|---|\n| 1 | "+strings.Repeat("word ", 20)+"|", 40)
	if len(ls) < 4 {
		t.Fatalf("table lines = %q", ls)
	}
	for _, l := range ls {
		s := ansi.Strip(l)
		if w := ansi.StringWidth(s); w > 40 {
			t.Errorf("line %q is %d wide", s, w)
		}
		if !strings.HasPrefix(s, "  ") || !strings.Contains(s, "│") && !strings.Contains(s, "┼") {
			t.Errorf("line %q is not a table row", s)
		}
	}
	if got := ansi.Strip(ls[2]); !strings.HasPrefix(got, "   1  │ word word") {
		t.Errorf("first row = %q", got)
	}
}

// Under NO_COLOR the theme keeps bold and italics (the renderer drops only
// colours): **bold** is drawn bold, never with its stars.
func TestNoColorBoldWithoutStars(t *testing.T) {
	th := newTheme(true, true)
	ls := newMarkdown(th.mdStyle).lines("a **bold** word", 40)
	if got := ansi.Strip(ls[0]); got != "  a bold word" {
		t.Errorf("line = %q", got)
	}
	if !strings.Contains(ls[0], "\x1b[1mbold\x1b[m") {
		t.Errorf("bold not drawn bold: %q", ls[0])
	}
}

// Rendering the same text twice gives the same lines (the streaming path
// renders settled paragraphs once and relies on that).
func TestMarkdownDeterministic(t *testing.T) {
	md := newMarkdown("dark")
	a := strings.Join(md.lines(mdSample, 72), "\n")
	b := strings.Join(md.lines(mdSample, 72), "\n")
	if a != b {
		t.Error("two renders differ")
	}
}

func BenchmarkMarkdownReply(b *testing.B) {
	md := newMarkdown("dark")
	src := replyOf(4 << 10)
	b.ReportAllocs()
	for b.Loop() {
		md.lines(src, 100)
	}
}

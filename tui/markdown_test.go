package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// mdSample has every element a reply has.
const mdSample = "# Title here\n\n## Step 2\n\n" +
	"I read `parser.go`. The **bug** is in *parse* and ~~old~~ \\*not emph\\* &amp; [the docs](https://go.dev/doc) or <https://x.y/z>.\n" +
	"A soft break and a very long line that should wrap around at sixty columns because it is long.\n\n" +
	"```go\n// parse parses\nfunc parse(s string) *Node {\n\tif s == \"\" { return nil } // 0x1F\n\tx := `raw\nstring`\n}\n```\n\n" +
	"- it returns nil\n- callers expect a node\n  - nested one\n  - nested two\n- [ ] todo\n- [x] done\n\n" +
	"9. ninth\n10. tenth\n\n" +
	"> quoted **text** here\n> more\n\n---\n\n" +
	"| file | lines |\n|---|--:|\n| `a.go` | 12 |\n| **b.go** | 3 |\n\n" +
	"```diff\n@@ -1,3 +1,3 @@\n-old\n+new\n```\n"

// mdCases are the golden screens: one kind of element each, at a width.
var mdCases = []struct {
	name, src string
	w         int
}{
	{"headings", "# Title\n\n## Section\n\n### Sub section\n\nSetext heading\n==============\n\nText under it.", 60},
	{"lists", "- one\n- two\n  - nested\n    - deeper\n- three\n\n1. first\n2. second\n\n9. ninth\n10. tenth", 60},
	{"tasks", "- [ ] todo\n- [x] done\n- [ ] another one with a text long enough to wrap at the width", 40},
	{"quotes", "> quoted **text** and `code`\n> more of it\n>\n> > a nested quote", 60},
	{"links", "See [the docs](https://go.dev/doc), <https://x.y/z> and https://bare.example/path.\n\n![a diagram](https://x.y/d.png)", 60},
	{"table-wide", "| file | lines | note |\n|---|--:|:-:|\n| `a.go` | 12 | ok |\n| **b.go** | 3 | new |", 100},
	{"table-narrow", "| id | text |\n|---|---|\n| 1 | " + strings.Repeat("word ", 16) + "|\n| 2 | short |", 40},
	{"go-tabs", "```go\n// parse parses s.\nfunc parse(s string) *Node {\n\tif s == \"\" {\n\t\treturn nil // nothing\n\t}\n\treturn &Node{n: 0x1F}\n}\n```", 60},
	{"python", "```python\n@cache\ndef fib(n: int) -> int:\n    \"\"\"Fibonacci.\"\"\"\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # slow\n```", 80},
	{"shell", "```sh\n#!/bin/sh\nfor f in *.go; do\n  echo \"$f\" | grep -q _test && continue\n  go vet \"$f\"  # one by one\ndone\n```", 60},
	{"json", "```json\n{\n  \"name\": \"polly\",\n  \"count\": 3,\n  \"ok\": true,\n  \"tags\": [\"a\", null]\n}\n```", 60},
	{"diff", "```diff\n--- a/parse.go\n+++ b/parse.go\n@@ -1,3 +1,3 @@\n func parse(s string) *Node {\n-\treturn nil\n+\treturn &Node{}\n }\n```", 60},
}

// Every kind of element through glamour, in the dark, the light and the
// NO_COLOR theme: the golden files hold the escape codes (cat one in a
// terminal to see it).
func TestMarkdownGoldens(t *testing.T) {
	for _, style := range []string{"dark", "light", "none"} {
		for _, c := range mdCases {
			t.Run(style+"/"+c.name, func(t *testing.T) {
				ls := newMarkdown(style).lines(c.src, c.w)
				for _, l := range ls {
					if lw := ansi.StringWidth(l); lw > c.w {
						t.Errorf("line %q is %d wide, over %d", ansi.Strip(l), lw, c.w)
					}
				}
				out := strings.Join(ls, "\n")
				if col := colourSGR(out); style == "none" && col != "" {
					t.Errorf("colour %q under NO_COLOR", col)
				}
				golden.RequireEqual(t, out)
			})
		}
	}
}

// fg is the SGR parameters of a "#RRGGBB" foreground, as glamour and
// chroma's true-colour formatter write them.
func fg(hex string) string {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	return fmt.Sprintf("38;2;%d;%d;%d", v>>16, v>>8&0xff, v&0xff)
}

// The screen text of each golden case: what glamour lays out, and what
// Polly keeps around it (tabs as indentation, tables at their content's
// width, wrapped cells in a narrow one).
func TestMarkdownLayout(t *testing.T) {
	text := map[string]string{}
	for _, c := range mdCases {
		ls := newMarkdown("dark").lines(c.src, c.w)
		for i, l := range ls {
			ls[i] = ansi.Strip(l)
		}
		text[c.name] = strings.Join(ls, "\n")
	}
	for name, wants := range map[string][]string{
		"headings":     {"  Title ", "  ## Section", "  ### Sub section", "   Setext heading \n\n  Text under it."},
		"lists":        {"  • one\n  • two\n    • nested\n      • deeper\n\n  • three", "  1. first\n  2. second", "  9. ninth\n  10. tenth"},
		"tasks":        {"  [ ] todo\n  [✓] done\n  [ ] another one with a text long", "\n  enough to wrap at the width"},
		"quotes":       {"  │ quoted text and code more of it", "│ │ a nested quote"},
		"links":        {"See the docs https://go.dev/doc, https://x.y/z and", "https://bare.example/path.", "Image: a diagram → https://x.y/d.png"},
		"table-wide":   {"   file │ lines │ note\n  ──────┼───────┼──────\n   a.go │    12 │  ok\n   b.go │     3 │ new"},
		"table-narrow": {"   1  │ word word word word word", "   2  │ short"},
		"go-tabs":      {"    func parse(s string) *Node {\n        if s == \"\" {\n            return nil // nothing\n        }\n        return &Node{n: 0x1F}\n    }"},
		"python":       {"    def fib(n: int) -> int:\n        \"\"\"Fibonacci.\"\"\""},
		"shell":        {"    for f in *.go; do\n      echo \"$f\" | grep -q _test && continue"},
		"json":         {"      \"name\": \"polly\","},
		"diff":         {"    @@ -1,3 +1,3 @@\n     func parse(s string) *Node {\n    -   return nil\n    +   return &Node{}"},
	} {
		for _, want := range wants {
			if !strings.Contains(text[name], want) {
				t.Errorf("%s: missing %q in:\n%s", name, want, text[name])
			}
		}
	}
	if strings.Contains(text["go-tabs"], "\t") {
		t.Error("a tab reached the screen")
	}
	for _, l := range strings.Split(text["table-wide"], "\n") {
		if w := ansi.StringWidth(l); w > 24 {
			t.Errorf("table line %q is %d wide: stretched, not sized to its content", l, w)
		}
	}
	if n := strings.Count(text["table-narrow"], "│ word"); n < 3 {
		t.Errorf("the wide cell is not wrapped in its column (%d lines):\n%s", n, text["table-narrow"])
	}
}

// Code blocks are highlighted by chroma in the theme's colours: the
// palette's keyword, string, comment, JSON key and diff colours are on
// the screen, different between dark and light, and none under NO_COLOR
// (italic comments and bold hunks remain).
func TestCodeHighlightColours(t *testing.T) {
	src := map[string]string{}
	for _, c := range mdCases {
		src[c.name] = c.src
	}
	for _, dark := range []bool{true, false} {
		style := map[bool]string{true: "dark", false: "light"}[dark]
		p := markdownPalette(dark)
		m := newMarkdown(style)
		for _, want := range []struct{ name, token, colour string }{
			{"go-tabs", "func", p.keyword},
			{"go-tabs", "// parse parses s.", p.comment},
			{"python", `"""Fibonacci."""`, p.str},
			{"json", `"name"`, p.key},
			{"diff", "+   return &Node{}", p.add},
			{"diff", "-   return nil", p.del},
			{"diff", "@@ -1,3 +1,3 @@", p.hunk},
		} {
			out := strings.Join(m.lines(src[want.name], 80), "\n")
			if !regexp.MustCompile(`\x1b\[[0-9;]*` + fg(want.colour) + `m` + regexp.QuoteMeta(want.token)).MatchString(out) {
				t.Errorf("%s %s: %q not drawn in %s:\n%q", style, want.name, want.token, want.colour, out)
			}
		}
	}
	none := strings.Join(newMarkdown("none").lines(src["go-tabs"]+"\n\n"+src["diff"], 80), "\n")
	if c := colourSGR(none); c != "" {
		t.Errorf("NO_COLOR code has colour %q", c)
	}
	if !strings.Contains(none, "\x1b[3m// parse parses s.") || !strings.Contains(none, "\x1b[1m@@ -1,3 +1,3 @@") {
		t.Errorf("NO_COLOR code lost its italic comment or bold hunk:\n%q", none)
	}
}

// A theme switched in the same process changes the code colours too
// (glamour's own route registers its code style once, under one name).
func TestThemeSwitchRecoloursCode(t *testing.T) {
	code := "```go\nfunc f() {}\n```"
	dark := strings.Join(newMarkdown("dark").lines(code, 40), "\n")
	light := strings.Join(newMarkdown("light").lines(code, 40), "\n")
	if !strings.Contains(dark, fg(markdownPalette(true).keyword)) || !strings.Contains(light, fg(markdownPalette(false).keyword)) {
		t.Errorf("keyword colours: dark %q, light %q", dark, light)
	}
}

// Lines never pass the width, down to 1 column, wide characters
// included; padding spaces are not kept.
func TestMarkdownWrap(t *testing.T) {
	ls := newMarkdown("dark").lines("alpha **beta gamma** delta "+strings.Repeat("x", 30), 20)
	got := make([]string, len(ls))
	for i, l := range ls {
		got[i] = ansi.Strip(l)
		if strings.HasSuffix(got[i], " ") {
			t.Errorf("line %q keeps its padding", got[i])
		}
	}
	if want := "  alpha beta gamma|  delta|  xxxxxxxxxxxxxxxx|  xxxxxxxxxxxxxx"; strings.Join(got, "|") != want {
		t.Errorf("wrapped = %q, want %q", strings.Join(got, "|"), want)
	}
	src := mdSample + "\n\n日本語のテキスト " + strings.Repeat("語", 40)
	for w := 1; w <= 70; w++ {
		for _, l := range newMarkdown("light").lines(src, w) {
			if lw := ansi.StringWidth(l); lw > w {
				t.Fatalf("width %d: line %q is %d wide", w, ansi.Strip(l), lw)
			}
		}
	}
}

// Under NO_COLOR **bold** is drawn bold, never with its stars.
func TestNoColorBoldWithoutStars(t *testing.T) {
	ls := newMarkdown(newTheme(true, true).mdStyle).lines("a **bold** word", 40)
	if got := ansi.Strip(ls[0]); got != "  a bold word" {
		t.Errorf("line = %q", got)
	}
	if !strings.Contains(ls[0], "\x1b[1mbold\x1b[m") {
		t.Errorf("bold not drawn bold: %q", ls[0])
	}
}

// Rendering the same text twice gives the same lines (settled chunks are
// rendered once and kept on that ground).
func TestMarkdownDeterministic(t *testing.T) {
	md := newMarkdown("dark")
	if a, b := strings.Join(md.lines(mdSample, 72), "\n"), strings.Join(md.lines(mdSample, 72), "\n"); a != b {
		t.Error("two renders differ")
	}
}

func TestTrimPadding(t *testing.T) {
	for in, want := range map[string]string{
		"  text   ": "  text",
		"  \x1b[38;5;1mquote\x1b[m\x1b[38;5;1m \x1b[m\x1b[38;5;1m \x1b[m": "  \x1b[38;5;1mquote\x1b[m",
		"  \x1b[38;5;1m\x1b[m":                 "",
		"\x1b[48;5;63m \x1b[m":                 "\x1b[48;5;63m \x1b[m", // a background shows
		"\x1b[38;2;1;2;3;48;2;4;5;6m  \x1b[0m": "\x1b[38;2;1;2;3;48;2;4;5;6m  \x1b[0m",
		"\x1b[38;2;40;41;42m  \x1b[0m":         "", // 40-42 are colour values here, not backgrounds
		"x \x1b[1mbold\x1b[m ":                 "x \x1b[1mbold\x1b[m",
	} {
		if got := trimPadding(in); got != want {
			t.Errorf("trimPadding(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkMarkdownReply(b *testing.B) {
	src := replyOf(4 << 10)
	b.ReportAllocs()
	for b.Loop() {
		newMarkdown("dark").lines(src, 100)
	}
}

// Renders in several goroutines at once (the memory inspector renders in
// a Cmd while the loop draws replies) share only chroma's registries,
// which are read once the code styles are in: run under -race.
func TestConcurrentRenders(t *testing.T) {
	want := renderMarkdown(mdSample, "dark", 70)
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Go(func() { got[i] = renderMarkdown(mdSample, []string{"dark", "light", "none", "dark"}[i], 70) })
	}
	wg.Wait()
	if got[0] != want || got[3] != want {
		t.Error("a render in a goroutine differs")
	}
}

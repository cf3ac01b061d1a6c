package tui

import (
	"maps"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"polly/agent"
	"polly/memory/chat"
)

const goWithTabs = "Here is the fix:\n\n```go\nfunc parse(s string) *Node {\n\tif s == \"\" {\n\t\treturn nil\n\t}\n\treturn &Node{}\n}\n```\n\nA Makefile:\n\n```make\nbuild:\n\tgo build ./...\n```\n"

// A Go code block indented with tabs keeps its indentation on screen (the
// terminal renderer drops raw tabs): 4 columns per level, 8 in a Makefile.
func TestCodeBlockTabsGolden(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	d := hdr("default")
	h.send(eventsMsg{items: []any{agent.MessageDone{Header: d, Message: chat.Message{Role: chat.Assistant, Content: goWithTabs}}}})
	view := ansi.Strip(h.m.View().Content)
	if strings.Contains(view, "\t") {
		t.Fatalf("a raw tab reached the screen:\n%s", view)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(view, "\n") {
		lines[strings.TrimRight(l, " ")] = true
	}
	for _, want := range []string{"    func parse(s string) *Node {", "        if s == \"\" {", "            return nil", "    build:", "            go build ./..."} {
		if !lines[want] {
			t.Errorf("missing the line %q:\n%s", want, view)
		}
	}
	golden.RequireEqual(t, []byte(view))
}

// Tabs in plain text (a tool output, a user message) go to the next
// multiple of 4 columns.
func TestTabsExpandedInPlainText(t *testing.T) {
	got := strings.Join(plainLines("a\tb\n\tc\nabcd\te", 40), "|")
	if want := "a   b|    c|abcd    e"; got != want {
		t.Errorf("plainLines = %q, want %q", got, want)
	}
}

// Tables take the width their content needs, not the whole screen.
func TestTableSizedToContent(t *testing.T) {
	md := newMarkdown("dark")
	ls := md.lines("Sizes:\n\n| file | lines |\n|---|---|\n| a.go | 12 |\n\nDone.", 120)
	var table []string
	for _, l := range ls {
		if s := ansi.Strip(l); strings.Contains(s, "│") || strings.Contains(s, "┼") {
			table = append(table, strings.TrimRight(s, " "))
		}
	}
	if len(table) != 3 {
		t.Fatalf("table lines = %q", table)
	}
	for _, l := range table {
		if w := ansi.StringWidth(l); w > 20 {
			t.Errorf("table line %q is %d wide; the content needs about 16", l, w)
		}
	}
}

// Inline code is drawn without padding spaces (its background marks it).
func TestInlineCodeUnpadded(t *testing.T) {
	ls := newMarkdown("dark").lines("run `go test` now", 60)
	if got := strings.TrimSpace(ansi.Strip(ls[0])); got != "run go test now" {
		t.Errorf("inline code line = %q", got)
	}
}

// A 20×8 terminal shows one readable line saying so; growing it brings the
// chat back.
func TestTerminalTooSmall(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	h.send(tea.WindowSizeMsg{Width: 20, Height: 8})
	v := h.m.View()
	lines := strings.Split(ansi.Strip(v.Content), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d lines, want 8", len(lines))
	}
	for _, l := range lines {
		if ansi.StringWidth(l) > 20 {
			t.Errorf("line %q wider than 20", l)
		}
	}
	if s := strings.Join(strings.Fields(ansi.Strip(v.Content)), " "); !strings.Contains(s, "terminal too small (20×8)") {
		t.Errorf("no 'terminal too small' message:\n%s", v.Content)
	}
	if v.Cursor != nil {
		t.Error("the input cursor is placed on the too-small screen")
	}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	checkScreen(t, "grown", h.m.View().Content, 80, 24)
}

// A reply with a 10,000-column line, invalid UTF-8 and escape sequences is
// drawn inside the screen: every line at most the width, no escape code
// from the reply reaching the terminal.
func TestBadReplyKeepsLayout(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := newHarness(t, harnessOpts{w: 80, h: 24})
		h.m.noColor = false
		h.send(tea.BackgroundColorMsg{})
		d := hdr("default")
		bad := "start\n\n" + strings.Repeat("x", 10000) + "\n\nbroken \xff\xfe utf8 and \x1b[2J\x1b[H a screen clear and a bell\a\n\n" +
			"| " + strings.Repeat("wide ", 3000) + " | b |\n|---|---|\n| 1 | 2 |\n\nend"
		if stream {
			h.send(eventsMsg{items: []any{agent.TextDelta{Header: d, Text: bad}}})
			h.send(frameMsg{})
		} else {
			h.send(eventsMsg{items: []any{agent.MessageDone{Header: d, Message: chat.Message{Role: chat.Assistant, Content: bad}}}})
		}
		h.m.current().tr.add(&item{kind: kUser, text: "tool said \xff\x1b[31mred\t" + strings.Repeat("y", 10000)})
		view := h.m.View().Content
		checkScreen(t, "bad reply", view, 80, 24)
		if strings.Contains(view, "\x1b[2J") || strings.Contains(view, "\a") {
			t.Error("an escape sequence of the reply reached the screen")
		}
		var all []string
		for _, it := range h.m.current().tr.items {
			all = append(all, h.m.r.lines(it, 80)...)
		}
		for _, l := range all {
			if w := ansi.StringWidth(l); w > 80 {
				t.Errorf("a line is %d wide", w)
			}
		}
		if s := ansi.Strip(strings.Join(all, "\n")); !strings.Contains(s, "broken \uFFFD utf8") || !strings.Contains(s, "a screen clear") {
			t.Errorf("invalid UTF-8 not shown as U+FFFD:\n%s", s)
		}
		for range 5 {
			h.key("pgup")
			checkScreen(t, "bad reply scrolled", h.m.View().Content, 80, 24)
		}
	}
}

// The first frame builds no glamour renderer (nor chroma's code styles):
// that waits for the first Markdown to draw.
func TestFirstFrameBuildsNoGlamour(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	checkScreen(t, "first frame", h.m.View().Content, 80, 24)
	if h.m.r.md.byWidth != nil {
		t.Fatalf("the first frame built glamour renderers for widths %v", slices.Collect(maps.Keys(h.m.r.md.byWidth)))
	}
	h.send(eventsMsg{items: []any{agent.MessageDone{Header: hdr("default"), Message: chat.Message{Role: chat.Assistant, Content: "**bold**"}}}})
	h.m.View()
	if len(h.m.r.md.byWidth) != 1 {
		t.Errorf("the first reply built %d glamour renderers, want 1", len(h.m.r.md.byWidth))
	}
}

package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"polly/agent/llmtest"
)

// Text typed over a panel that does not take it goes to the input (the
// panel closes and says so); a panel with a field takes it.
func TestTypingOverAPanelGoesToTheInput(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 100, h: 30})
	h.key("ctrl+g") // the team panel
	if h.m.panel == nil {
		t.Fatal("no team panel")
	}
	h.typeText("just keep typing")
	if h.m.panel != nil || h.m.input.Value() != "just keep typing" {
		t.Fatalf("panel %v, input %q", h.m.panel != nil, h.m.input.Value())
	}
	h.m.clearDraft()
	h.key("f1")
	h.typeText("quick question")
	if h.m.panel != nil || h.m.input.Value() != "quick question" {
		t.Fatalf("help: panel %v, input %q", h.m.panel != nil, h.m.input.Value())
	}
	h.m.clearDraft()
	h.prompt("/model") // the model picker filters as you type
	h.until("the picker", func() bool { return h.m.kind == pModels })
	h.typeText("mini")
	if h.m.kind != pModels || h.m.input.Value() != "" {
		t.Fatalf("the picker lost the filter: panel %d, input %q", h.m.kind, h.m.input.Value())
	}
}

// Two escs that arrive together as alt+esc close a panel, and the dialog
// sees esc.
func TestAltEscClosesAPanel(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, k := range []string{"f1", "ctrl+g", "ctrl+t"} {
		h.key(k)
		if h.m.panel == nil {
			t.Fatalf("%s opened nothing", k)
		}
		h.key("alt+esc")
		if h.m.panel != nil {
			t.Fatalf("alt+esc left the panel of %s open", k)
		}
	}
}

// The outputs list keeps its columns aligned whatever the sizes and names;
// an opened output is searched with /, n and N.
func TestOutputsColumnsAndFind(t *testing.T) {
	p := newOutputsPanel(look{th: newTheme(true, true), r: newRenderer(newTheme(true, true), 1, nil)}, 1, outputSource{})
	p.SetSize(120, 20)
	p.Update(outListMsg{seq: 1, rows: []outRow{
		{id: 7, tool: "run_command", persona: "Polly", size: "3 lines, 40 chars", what: "ls"},
		{id: 12345, tool: "mcp__github__search_issues", persona: "web scraper persona", size: "1200000 lines, 9.8M chars", what: "big", offloaded: true},
		{id: 99, tool: "read_file", persona: "coder", size: "1 line, 5 chars", what: "x.go"},
	}})
	rows := strings.Split(ansi.Strip(p.View()), "\n")[2:]
	at := func(l, s string) int { return ansi.StringWidth(l[:strings.Index(l, s)]) }
	if at(rows[0], "3 lines") != at(rows[1], "1200000") || at(rows[1], "1200000") != at(rows[2], "1 line,") {
		t.Fatalf("size columns misaligned:\n%s", strings.Join(rows, "\n"))
	}
	if at(rows[0], " ls") != at(rows[1], " big") || at(rows[1], " big") != at(rows[2], " x.go") {
		t.Fatalf("argument columns misaligned:\n%s", strings.Join(rows, "\n"))
	}

	h := newHarness(t, harnessOpts{w: 100, h: 30}, llmtest.Call("run_command", `{"command":"seq 1 3000"}`), llmtest.Text("counted"))
	h.prompt("count")
	h.until("idle", h.idle)
	h.key("ctrl+o")
	h.until("the list", func() bool { return len(outs(h).rows) == 1 })
	h.key("enter")
	h.until("the output", func() bool { return outs(h).showing })
	h.key("/")
	h.typeText("2999")
	h.key("enter")
	if s := h.screen(); !strings.Contains(s, `match 1 of 1 lines holding "2999"`) || !strings.Contains(s, "\n2999") {
		t.Fatalf("find:\n%s", s)
	}
	h.key("/")
	h.typeText("123")
	h.key("enter")
	first := outs(h).found[0]
	h.key("n")
	if got := outs(h).found[outs(h).at]; got <= first || !strings.Contains(h.screen(), "match 2 of") {
		t.Fatalf("n went to line %d (first %d):\n%s", got, first, h.screen())
	}
	h.key("N")
	if outs(h).at != 0 {
		t.Fatalf("N: at %d", outs(h).at)
	}
	h.key("/")
	h.typeText("nowhere")
	h.key("enter")
	if !strings.Contains(h.screen(), `"nowhere" is not in this output`) {
		t.Fatalf("no-match:\n%s", h.screen())
	}
}

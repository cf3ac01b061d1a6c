package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"polly/agent/llmtest"
	"polly/tools/permission"
)

// The status bar shows the mode; shift+tab cycles ask → auto-edit →
// yolo (after a y) → ask, and the policy decides by it.
func TestModeSegmentAndCycle(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: "ask", w: 100, h: 24})
	status := func() string { ls := strings.Split(h.screen(), "\n"); return ls[len(ls)-1] }
	var bars []string
	if !strings.Contains(status(), " Polly • mode ask • ") {
		t.Fatalf("status bar: %q", status())
	}
	bars = append(bars, status())
	h.key("shift+tab")
	if h.app.Policy.CurrentMode() != permission.AutoEdit || !strings.Contains(status(), "mode auto-edit") {
		t.Fatalf("shift+tab: %s, %q", h.app.Policy.CurrentMode(), status())
	}
	bars = append(bars, status())
	h.key("shift+tab")
	if h.app.Policy.CurrentMode() != permission.AutoEdit || !strings.Contains(h.screen(), "switch to yolo?") {
		t.Fatalf("yolo without asking: %s\n%s", h.app.Policy.CurrentMode(), h.screen())
	}
	h.key("n")
	if h.app.Policy.CurrentMode() != permission.AutoEdit {
		t.Fatal("n switched to yolo")
	}
	h.key("shift+tab")
	h.key("y")
	if h.app.Policy.CurrentMode() != permission.Yolo || !strings.Contains(status(), "mode yolo") {
		t.Fatalf("y: %s, %q", h.app.Policy.CurrentMode(), status())
	}
	bars = append(bars, status())
	// yolo is red on the bar (the theme's "bad" colour), the others are not.
	h.m.noColor = false
	h.send(tea.BackgroundColorMsg{})
	red := h.m.th.bad.GetForeground()
	line := h.m.statusLine()
	if seg := h.m.modeStyle(permission.Yolo).Render("mode yolo"); !strings.Contains(line, seg) || h.m.modeStyle(permission.Yolo).GetForeground() != red {
		t.Fatalf("yolo is not red on the bar: %q", line)
	}
	if h.m.modeStyle(permission.Ask).GetForeground() == red {
		t.Fatal("ask is red")
	}
	h.key("shift+tab")
	if h.app.Policy.CurrentMode() != permission.Ask {
		t.Fatalf("from yolo: %s", h.app.Policy.CurrentMode())
	}
	golden.RequireEqual(t, stableText(h, ansi.Strip(strings.Join(bars, "\n"))))
}

// "Allow all edits this session" (e) allows the edit and switches ask to
// auto-edit: the next edit does not ask.
func TestDialogAllowAllEdits(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: "ask", w: 100, h: 30},
		llmtest.Call("write_file", `{"path":"one.txt","content":"1\n"}`),
		llmtest.Call("write_file", `{"path":"two.txt","content":"2\n"}`),
		llmtest.Text("both written"))
	h.prompt("write two files")
	h.until("the dialog", func() bool { return h.m.perm.open() })
	h.answerable()
	if s := h.screen(); !strings.Contains(s, "e allow all edits this session (auto-edit)") {
		t.Fatalf("the dialog does not offer e:\n%s", s)
	}
	h.key("e")
	h.until("the run", h.idle)
	for _, f := range []string{"one.txt", "two.txt"} {
		if _, err := os.Stat(filepath.Join(h.dir, f)); err != nil {
			t.Fatalf("%s not written: %v", f, err)
		}
	}
	if h.app.Policy.CurrentMode() != permission.AutoEdit || !strings.Contains(h.screen(), "mode auto-edit") {
		t.Fatalf("mode %s after e:\n%s", h.app.Policy.CurrentMode(), h.screen())
	}
}

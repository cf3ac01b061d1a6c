package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"polly/agent/llmtest"
)

// Typing / shows the commands as a vertical list with their descriptions,
// filtered as more is typed; ↑↓ choose, Tab inserts, Enter runs; Tab
// never switches persona while a draft is typed.
func TestSlashList(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 100, h: 30})
	h.typeText("/")
	s := h.screen()
	for _, want := range []string{"▸ /help", "every key and command", "  /model [--default] [NAME]", "pick this persona's model", "↑↓ choose · tab inserts · enter runs · esc hides"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the list lacks %q:\n%s", want, s)
		}
	}
	h.typeText("r")
	s = h.screen()
	for _, want := range []string{"/redo", "/rewind"} {
		if !strings.Contains(s, want) {
			t.Fatalf("/r lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "/help") {
		t.Fatalf("/r still lists /help:\n%s", s)
	}
	golden.RequireEqual(t, stableText(h, strings.Join(strings.Split(s, "\n")[20:], "\n")))
	h.key("down") // /redo → /rewind
	h.key("tab")
	if v := h.m.input.Value(); v != "/rewind " {
		t.Fatalf("tab after ↓ gave %q, want /rewind", v)
	}
	h.m.clearDraft()
	h.typeText("/mem")
	h.key("enter")
	if h.m.kind != pMemory {
		t.Fatalf("enter on /mem did not run /memory (panel %d)", h.m.kind)
	}
	h.key("esc")
	h.typeText("/persona co")
	h.key("tab")
	if v := h.m.input.Value(); v != "/persona coder " {
		t.Fatalf("persona completion: %q", v)
	}
	h.key("enter")
	if h.m.current().p.ID != "coder" {
		t.Fatalf("/persona coder: on %s", h.m.current().p.ID)
	}
	h.typeText("/he")
	h.key("esc")
	if strings.Contains(h.screen(), "every key and command") {
		t.Fatalf("esc did not hide the list:\n%s", h.screen())
	}
	h.m.clearDraft()
	h.prompt("/nosuch")
	if !strings.Contains(h.screen(), "unknown command /nosuch") {
		t.Errorf("screen:\n%s", h.screen())
	}
}

// Tab in a draft completes a path, never switching persona; on an empty
// input it switches.
func TestTabInDraft(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 100, h: 30})
	if err := os.MkdirAll(filepath.Join(h.dir, "internal", "server"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(h.dir, "internal", "server", "handler.go"), "package server")
	h.typeText("look at inter")
	h.key("tab")
	h.until("the files", func() bool { return !h.m.comp.reading })
	if h.m.current().p.ID != "default" {
		t.Fatal("tab switched persona with a draft")
	}
	if v := h.m.input.Value(); v != "look at internal/" {
		t.Fatalf("tab: %q", v)
	}
	h.key("tab")
	if v := h.m.input.Value(); v != "look at internal/server/" {
		t.Fatalf("second tab: %q", v)
	}
	h.key("tab")
	if v := h.m.input.Value(); v != "look at internal/server/handler.go " {
		t.Fatalf("third tab: %q", v)
	}
	h.key("shift+tab")
	if h.m.current().p.ID != "default" {
		t.Fatal("shift+tab switched persona with a draft")
	}
	h.m.clearDraft()
	h.key("tab")
	if h.m.current().p.ID == "default" {
		t.Fatal("tab on an empty input did not switch persona")
	}
}

// @ lists the project's files, fuzzy and gitignore-aware; Enter inserts
// the path. Names with newlines and escapes are quoted in the list and in
// the input; nothing raw reaches the terminal.
func TestAtFileCompletion(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 100, h: 30}, llmtest.Text("ok"))
	for _, f := range []string{"src/main.go", "src/mainline_test.go", "docs/manual.md", "build/out/main.bin", "weird/a\nb.txt", "weird/esc\x1b[31mred.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(h.dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(h.dir, f), "x")
	}
	write(t, filepath.Join(h.dir, ".gitignore"), "build/\n")
	h.typeText("explain @smain")
	h.until("the files", func() bool { return !h.m.comp.reading && h.m.comp.files != nil })
	s := h.screen()
	if !strings.Contains(s, "@src/main.go") {
		t.Fatalf("no @src/main.go for @smain:\n%s", s)
	}
	if strings.Contains(s, "build/out") {
		t.Fatalf("a gitignored file is offered:\n%s", s)
	}
	golden.RequireEqual(t, stableText(h, strings.Join(strings.Split(s, "\n")[18:], "\n")))
	h.key("enter")
	if v := h.m.input.Value(); v != "explain @src/main.go " {
		t.Fatalf("enter inserted: %q", v)
	}
	h.m.clearDraft()
	h.typeText("@weird")
	view := h.m.View().Content
	if strings.Contains(view, "\x1b[31mred") || strings.Contains(view, "a\nb.txt") {
		t.Fatal("a raw newline or escape from a file name reached the screen")
	}
	s = h.screen()
	if !strings.Contains(s, `@"weird/a\nb.txt"`) || !strings.Contains(s, `@"weird/esc\x1b[31mred.txt"`) {
		t.Fatalf("odd names are not shown quoted:\n%s", s)
	}
	for h.m.comp.items[h.m.comp.sel].value != `@"weird/a\nb.txt"` {
		h.key("down")
	}
	h.key("tab")
	if v := h.m.input.Value(); v != `@"weird/a\nb.txt" ` || h.m.input.LineCount() != 1 {
		t.Fatalf("inserted %q (%d lines)", v, h.m.input.LineCount())
	}
	h.key("enter")
	h.until("the reply", h.idle)
	if got := strings.TrimSpace(h.srv.Last().LastTurn().Content); got != `@"weird/a\nb.txt"` {
		t.Fatalf("the model got %q", got)
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"polly/agent/llmtest"
)

// !ls runs through run_command's policy and sandbox (read-only: no
// question in ask mode), shows its output as a block, and the model
// receives the command and its output with the next message.
func TestShellModeRunsAndTellsTheModel(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: "ask", w: 80, h: 24}, llmtest.Text("I see the files"))
	write(t, filepath.Join(h.dir, "alpha.txt"), "a")
	write(t, filepath.Join(h.dir, "beta.txt"), "b")
	h.typeText("!ls")
	if !strings.Contains(h.screen(), "shell mode: enter runs this command") {
		t.Fatalf("no shell-mode hint:\n%s", h.screen())
	}
	h.key("enter")
	h.until("the command", func() bool { return h.idle() && len(h.m.current().tr.items) > 0 })
	s := h.screen()
	for _, want := range []string{"▾ ! ls", "✓", "alpha.txt", "beta.txt"} {
		if !strings.Contains(s, want) {
			t.Fatalf("screen lacks %q:\n%s", want, s)
		}
	}
	if h.srv.Calls() != 0 {
		t.Fatal("! called the model")
	}
	golden.RequireEqual(t, stableScreen(h))
	h.prompt("what did you see?")
	h.until("the reply", h.idle)
	var got []string
	for _, m := range h.srv.Last().Messages {
		if m.Role == "user" {
			got = append(got, m.Content)
		}
	}
	joined := strings.Join(got, "\n---\n")
	if !strings.Contains(joined, "! ls") || !strings.Contains(joined, "Output of the command I ran myself (`ls`, exit 0):") ||
		!strings.Contains(joined, "alpha.txt\nbeta.txt") || !strings.HasSuffix(joined, "what did you see?") {
		t.Fatalf("the model got:\n%s", joined)
	}
}

// A ! command that writes asks in ask mode like the model's would; a
// denial runs nothing.
func TestShellModeAsksLikeTheModel(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: "ask", w: 100, h: 30})
	h.prompt("!touch made-by-shell")
	h.until("the dialog", func() bool { return h.m.perm.open() })
	h.answerable()
	if s := h.screen(); !strings.Contains(s, "touch made-by-shell") {
		t.Fatalf("dialog:\n%s", s)
	}
	h.key("esc")
	h.until("the command", h.idle)
	if _, err := os.Stat(filepath.Join(h.dir, "made-by-shell")); err == nil {
		t.Fatal("a denied ! command ran")
	}
	if s := h.screen(); !strings.Contains(s, "! touch made-by-shell") || !strings.Contains(s, "✗") {
		t.Fatalf("the denial is not shown:\n%s", s)
	}
	h.prompt("!touch made-by-shell")
	h.until("the dialog", func() bool { return h.m.perm.open() })
	h.answerable()
	h.key("y")
	h.until("the command", h.idle)
	if _, err := os.Stat(filepath.Join(h.dir, "made-by-shell")); err != nil {
		t.Fatal("an allowed ! command did not run")
	}
}

package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"polly/agent/llmtest"
)

// Must show (issue 29 #4): a 120-line edit is shown whole in the dialog —
// scrolled with its keys, its long line wrapped, not cut — and survives a
// resize while it waits; too small a terminal takes no key blind.
func TestDialogScrollsABigDiff(t *testing.T) {
	var before, after strings.Builder
	for i := 1; i <= 120; i++ {
		fmt.Fprintf(&before, "line %d\n", i)
		if i == 60 {
			fmt.Fprintf(&after, "line 60 %s END-OF-LONG-LINE\n", strings.Repeat("long ", 40))
			continue
		}
		fmt.Fprintf(&after, "changed line %d\n", i)
	}
	h := newHarness(t, harnessOpts{mode: "ask", w: 100, h: 30},
		llmtest.Call("write_file", `{"path":"big.txt","content":`+quoteJSON(after.String())+`}`), llmtest.Text("rewrote it"))
	write(t, filepath.Join(h.dir, "big.txt"), before.String())
	h.prompt("rewrite big.txt")
	h.until("the dialog", func() bool { return h.m.perm.open() })
	h.answerable()
	s := h.screen()
	checkScreen(t, "dialog", h.m.View().Content, 100, 30)
	for _, want := range []string{"Allow Polly to write big.txt?", "more lines below: read them before you answer", "↑↓ pgup/pgdn home/end scroll", "e allow all edits this session", "esc deny"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the dialog lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "+changed line 120") {
		t.Fatalf("the whole diff fits? the test needs a longer one:\n%s", s)
	}
	var seen strings.Builder
	for range 40 {
		seen.WriteString(h.screen())
		h.key("pgdown")
	}
	all := seen.String()
	if !strings.Contains(all, "+changed line 120") || !strings.Contains(all, "(end)") {
		t.Fatalf("pgdown never reached the end of the diff:\n%s", h.screen())
	}
	if !strings.Contains(all, "END-OF-LONG-LINE") {
		t.Fatal("the long line was cut, not wrapped")
	}
	for h.m.perm.body.YOffset() > 0 && !strings.Contains(h.screen(), "+line 60 long long") {
		h.key("up")
	}
	golden.RequireEqual(t, stableScreen(h)) // the long line wrapped, scrolled to
	h.key("home")
	if !strings.Contains(h.screen(), "lines 1–") {
		t.Fatalf("home did not go back to the top:\n%s", h.screen())
	}
	// A resize while it waits: laid out again, still asking.
	h.send(tea.WindowSizeMsg{Width: 60, Height: 18})
	checkScreen(t, "resized dialog", h.m.View().Content, 60, 18)
	if !h.m.perm.open() || !strings.Contains(h.screen(), "big.txt") {
		t.Fatalf("the question was lost in the resize:\n%s", h.screen())
	}
	// Too small to show it: keys are not answers.
	h.send(tea.WindowSizeMsg{Width: 20, Height: 5})
	if s := h.screen(); !strings.Contains(s, "permission") {
		t.Fatalf("20×5 does not say a question waits:\n%s", s)
	}
	h.key("y")
	if !h.m.perm.open() {
		t.Fatal("y answered a question the 20×5 screen could not show")
	}
	h.send(tea.WindowSizeMsg{Width: 100, Height: 30})
	h.key("y")
	h.until("the run", h.idle)
	if b, _ := os.ReadFile(filepath.Join(h.dir, "big.txt")); string(b) != after.String() {
		t.Fatal("the edit was not made after y")
	}
}

package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"polly/agent/llmtest"
)

// The tool-output browser lists the session's big outputs, / searches
// them, and Enter shows one whole.
func TestOutputsBrowser(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Call("run_command", `{"command":"seq 1 5000"}`), llmtest.Text("counted"))
	h.prompt("count to 5000")
	h.until("idle", h.idle)
	if !strings.Contains(h.screen(), "offloaded") {
		t.Fatalf("the big output is not marked offloaded:\n%s", h.screen())
	}
	h.key("ctrl+o")
	h.until("the list", func() bool { return len(outs(h).rows) == 1 })
	if !outs(h).rows[0].offloaded || outs(h).rows[0].persona != "Polly" {
		t.Errorf("row = %+v", outs(h).rows[0])
	}
	if scr := h.screen(); !strings.Contains(scr, "run_command") || !strings.Contains(scr, "seq 1 5000") || !strings.Contains(scr, "offloaded") {
		t.Fatalf("list:\n%s", scr)
	}
	h.key("enter")
	h.until("the output", func() bool { return outs(h).showing })
	h.key("G")
	if scr := h.screen(); !strings.Contains(scr, "4999") || !strings.Contains(scr, "5000") {
		t.Errorf("the end of the whole output is not shown:\n%s", scr)
	}
	h.key("esc")
	h.key("/")
	h.typeText("4321")
	h.key("enter")
	h.until("the search", func() bool { return outs(h).results })
	if scr := h.screen(); !strings.Contains(scr, "1 output matches \"4321\"") || !strings.Contains(scr, "[4321]") {
		t.Errorf("search:\n%s", scr)
	}
	// The hit opens at the match, highlighted.
	h.key("enter")
	h.until("the hit", func() bool { return outs(h).showing })
	scr := h.screen()
	if !strings.Contains(scr, "4321") || strings.Contains(scr, "\n1\n") || outs(h).vp.YOffset() < 4000 {
		t.Errorf("the hit is not opened at the match (offset %d):\n%s", outs(h).vp.YOffset(), scr)
	}
	h.m.noColor = false
	h.send(tea.BackgroundColorMsg{})
	if v := h.m.View().Content; !strings.Contains(v, outs(h).th.hl().Render("4321")) {
		t.Error("the match is not highlighted")
	}
	h.key("esc")
	h.key("esc") // back to all outputs
	h.until("the list again", func() bool { return !outs(h).results })
	h.key("esc")
	if h.m.panel != nil {
		t.Error("esc did not close the browser")
	}
}

// PgUp/PgDn and the wheel scroll the chat; back at the end it follows new
// text again.
func TestScrolling(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	tr := h.m.current().tr
	for i := range 60 {
		tr.add(&item{kind: kUser, text: "line " + string(rune('A'+i%26))})
	}
	tr.add(&item{kind: kSystem, text: "THE END"})
	if !strings.Contains(h.screen(), "THE END") {
		t.Fatal("the end is not shown")
	}
	h.key("pgup")
	if tr.follow || strings.Contains(h.screen(), "THE END") {
		t.Fatalf("pgup did not scroll:\n%s", h.screen())
	}
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	top := tr.top
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if tr.top <= top && tr.off == 0 {
		t.Errorf("wheel down did not move (top %d→%d)", top, tr.top)
	}
	for range 10 {
		h.key("pgdown")
	}
	if !tr.follow || !strings.Contains(h.screen(), "THE END") {
		t.Fatalf("pgdown did not come back to the end:\n%s", h.screen())
	}
	for range 50 {
		h.key("pgup")
	}
	if !strings.Contains(h.screen(), "line A") {
		t.Errorf("pgup does not reach the top:\n%s", h.screen())
	}
}

// Shift+Enter and Ctrl+J insert a newline; Enter sends both lines.
func TestMultilineInput(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Text("ok"))
	h.typeText("one")
	h.key("ctrl+j")
	h.typeText("two")
	h.key("shift+enter")
	h.typeText("three")
	if v := h.m.input.Value(); v != "one\ntwo\nthree" {
		t.Fatalf("input %q", v)
	}
	h.key("enter")
	h.until("idle", func() bool { return h.srv.Calls() == 1 && h.idle() })
	if got := h.srv.Last().LastTurn().Content; got != "one\ntwo\nthree" {
		t.Errorf("sent %q", got)
	}
}

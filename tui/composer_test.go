package tui

import (
	"context"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"polly/agent/llmtest"
)

// Ctrl+C with a draft clears it (↑ brings it back) and does not quit; a
// second Ctrl+C quits.
func TestCtrlCClearsDraftThenQuits(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	h.typeText("a careful draft")
	h.key("ctrl+c")
	if h.quit {
		t.Fatal("the first ctrl+c quit with a draft in the input")
	}
	if v := h.m.input.Value(); v != "" {
		t.Fatalf("the draft stayed: %q", v)
	}
	if s := h.screen(); !strings.Contains(s, "draft cleared — ↑ brings it back · ctrl+c again quits") {
		t.Fatalf("no word about the cleared draft:\n%s", s)
	}
	golden.RequireEqual(t, stableScreen(h))
	h.key("up")
	if v := h.m.input.Value(); v != "a careful draft" {
		t.Fatalf("↑ after ctrl+c: %q", v)
	}
	h.key("ctrl+c")
	h.key("ctrl+c")
	h.until("quit", func() bool { return h.quit })
}

// While work runs, ctrl+c with a draft still only clears it; the next one
// asks before quitting.
func TestCtrlCWhileBusyAsks(t *testing.T) {
	release, asked := make(chan struct{}), make(chan struct{})
	h := newHarness(t, harnessOpts{w: 80, h: 24}, llmtest.Func(func(llmtest.Request) llmtest.Step {
		close(asked)
		<-release
		return llmtest.Text("done")
	}))
	defer close(release)
	h.prompt("work")
	h.until("the request", func() bool {
		select {
		case <-asked:
			return true
		default:
			return false
		}
	})
	h.typeText("next")
	h.key("ctrl+c")
	if h.m.quitAsk || h.m.input.Value() != "" {
		t.Fatalf("first ctrl+c: ask %v, input %q", h.m.quitAsk, h.m.input.Value())
	}
	h.key("ctrl+c")
	if !h.m.quitAsk || !strings.Contains(h.screen(), "quit? running work will be cancelled") {
		t.Fatalf("second ctrl+c did not ask:\n%s", h.screen())
	}
	h.key("n")
	if h.quit || h.m.quitAsk {
		t.Fatal("n quit")
	}
}

// The input grows with its lines up to a third of the screen, then
// scrolls and says where it is; the chat gives up the rows.
func TestInputGrowsThenScrolls(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 30}, llmtest.Text("ok"))
	if got := h.m.input.Height(); got != 1 {
		t.Fatalf("empty input is %d lines, want 1", got)
	}
	chat := h.m.chatHeight()
	for i := range 6 {
		if i > 0 {
			h.key("ctrl+j")
		}
		h.typeText("line " + string(rune('1'+i)))
	}
	if got := h.m.input.Height(); got != 6 {
		t.Fatalf("6-line draft shows %d lines", got)
	}
	if got := h.m.chatHeight(); got != chat-5 {
		t.Fatalf("chat %d rows, want %d", got, chat-5)
	}
	s := h.screen()
	for i := range 6 {
		if !strings.Contains(s, "line "+string(rune('1'+i))) {
			t.Fatalf("line %d hidden:\n%s", i+1, s)
		}
	}
	if strings.Contains(s, "the input scrolls") {
		t.Fatalf("a note while every line shows:\n%s", s)
	}
	golden.RequireEqual(t, stableScreen(h))
	for i := 6; i < 14; i++ {
		h.key("ctrl+j")
		h.typeText("more " + string(rune('a'+i)))
	}
	if got := h.m.input.Height(); got != 10 {
		t.Fatalf("14-line draft shows %d lines, want 30/3 = 10", got)
	}
	if s := h.screen(); !strings.Contains(s, "line 14 of 14 · the input scrolls") {
		t.Fatalf("no line count while the input scrolls:\n%s", s)
	}
	checkScreen(t, "14-line input", h.m.View().Content, 80, 30)
	h.key("enter")
	h.until("idle", h.idle)
	if got := h.m.input.Height(); got != 1 {
		t.Fatalf("after sending the input is %d lines", got)
	}
}

// A long paste shows as a token in the input and collapsed in the
// transcript; the model receives it whole; ctrl+x expands it.
func TestLongPasteCollapsedSentWhole(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24}, llmtest.Text("got it"))
	var b strings.Builder
	for i := range 300 {
		b.WriteString("pasted line ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\n")
	}
	pasted := b.String()
	h.typeText("look at this: ")
	h.send(tea.PasteMsg{Content: pasted})
	h.typeText(" thanks")
	if v := h.m.input.Value(); v != "look at this: [pasted 300 lines #1] thanks" {
		t.Fatalf("input: %q", v)
	}
	if h.m.input.Height() != 1 {
		t.Fatalf("the paste grew the input to %d lines", h.m.input.Height())
	}
	h.key("enter")
	h.until("the reply", h.idle)
	got := h.srv.Last().LastTurn().Content
	if want := "look at this: " + pasted + " thanks"; !strings.Contains(got, want) {
		t.Fatalf("the model got %d chars, not the whole paste (%d)", len(got), len(want))
	}
	s := h.screen()
	if !strings.Contains(s, "┃ look at this: [pasted 300 lines #1] thanks") || strings.Contains(s, "pasted line xxx") {
		t.Fatalf("transcript does not show the paste collapsed:\n%s", s)
	}
	golden.RequireEqual(t, stableScreen(h))
	h.key("alt+up") // select it, as a tool block is
	h.key("ctrl+x")
	if s := h.screen(); !strings.Contains(s, "pasted line xxxxxx") || !strings.Contains(s, "ctrl+x collapses") {
		t.Fatalf("ctrl+x did not expand the paste:\n%s", s)
	}
	// ↑ brings the draft back with its paste: sent again, whole again.
	h.key("ctrl+x")
	h.key("up")
	if v := h.m.input.Value(); v != "look at this: [pasted 300 lines #1] thanks" {
		t.Fatalf("recalled: %q", v)
	}
	if d := h.m.draft(); d.full() != "look at this: "+pasted+" thanks" {
		t.Fatal("the recalled draft lost its paste")
	}
}

// A short paste goes into the input as it is; deleting a token drops its
// paste.
func TestShortPasteAndDeletedToken(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	h.send(tea.PasteMsg{Content: "one\r\ntwo"})
	if v := h.m.input.Value(); v != "one\ntwo" {
		t.Fatalf("short paste: %q", v)
	}
	h.m.clearDraft()
	h.send(tea.PasteMsg{Content: strings.Repeat("y", 5000)})
	if v := h.m.input.Value(); v != "[pasted 5.0k chars #1]" {
		t.Fatalf("one long line: %q", v)
	}
	for range len("[pasted 5.0k chars #1]") {
		h.key("backspace")
	}
	h.typeText("plain")
	if d := h.m.draft(); len(d.pastes) != 0 || d.full() != "plain" {
		t.Fatalf("a deleted token kept its paste: %+v", d)
	}
}

// Bad input: a 10 MB paste is held whole, stored whole and drawn without
// wrapping all of it; the user is told the model will see only part of
// it, and the model's copy says it was cut.
func TestTenMegabytePaste(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24}, llmtest.Text("ok"))
	big := strings.Repeat("0123456789abcdef ", 10<<20/17) + "THE END"
	h.send(tea.PasteMsg{Content: big})
	if v := h.m.input.Value(); v != "[pasted 10.5M chars #1]" {
		t.Fatalf("input: %.80q", v)
	}
	if s := h.screen(); !strings.Contains(s, "larger than the model's context") {
		t.Fatalf("no warning about the paste's size:\n%s", s)
	}
	h.key("enter")
	h.until("the reply", h.idle)
	got := h.srv.Last().LastTurn().Content
	if !strings.HasPrefix(got, "0123456789abcdef 0123") || !strings.HasSuffix(got, "[cut by the hard context limit]") {
		t.Fatalf("the model's copy: %d bytes, not the marked head of the paste", len(got))
	}
	msgs, err := h.app.Store.AllMessages(context.Background(), h.m.sessID, "default")
	if err != nil || len(msgs) == 0 || msgs[0].Content != big {
		t.Fatalf("the store does not hold the whole paste (%v)", err)
	}
	h.key("alt+up")
	h.key("ctrl+x")
	checkScreen(t, "expanded 10 MB paste", h.m.View().Content, 80, 24)
	if s := h.screen(); !strings.Contains(s, "sent whole") {
		t.Fatalf("the expanded paste does not say it is cut here:\n%s", s)
	}
}

// stableScreen is the screen with what changes from run to run (the
// session id, durations) replaced, for golden files.
func stableScreen(h *harness) []byte { return stableText(h, h.screen()) }

// stableText is s with what changes from run to run replaced (see
// stableScreen).
func stableText(h *harness, s string) []byte {
	if h.m.sessID != "" {
		s = strings.ReplaceAll(s, h.m.sessID, "SESSION1")
	}
	s = strings.ReplaceAll(s, h.srv.URL(), "http://127.0.0.1:PORT/v1")
	for _, f := range spinnerFrames {
		s = strings.ReplaceAll(s, f, "⠿")
	}
	// The context meter and token counts depend on the temp dir's name
	// (in the system prompt): not part of what these goldens show.
	s = meterText.ReplaceAllString(s, "▰▱ CTX")
	s = tokensInOut.ReplaceAllString(s, "↑N ↓N")
	return durations.ReplaceAll([]byte(s), []byte("DUR"))
}

var (
	meterText   = regexp.MustCompile(`[▰▱]{5} [\d.]+k?/[\d.]+k?`)
	tokensInOut = regexp.MustCompile(`↑[\d.]+[kM]? ↓[\d.]+[kM]?`)
)

var durations = regexp.MustCompile(`<1ms|\b(\d+ms|\d+\.\d+s|\d+m\d\ds)\b`)

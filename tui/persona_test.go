package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"polly/agent/app"
	"polly/agent/cli"
	"polly/agent/llmtest"
)

// The empty input names the persona on screen.
func TestPlaceholderNamesPersona(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	if !strings.Contains(h.screen(), "› Message Polly…") {
		t.Fatalf("screen:\n%s", h.screen())
	}
	h.key("alt+3")
	if s := h.screen(); !strings.Contains(s, "› Message coder…") || strings.Contains(s, "Message Polly") {
		t.Errorf("after alt+3:\n%s", s)
	}
}

func handoffItems(p *personaState) []*item {
	var out []*item
	for _, it := range p.tr.items {
		if it.kind == kHandoff {
			out = append(out, it)
		}
	}
	return out
}

// A switch shows one handoff card in the receiving persona's transcript,
// saying what it carries; switching away and back again replaces it (no
// duplicates); once the message it went with is sent it no longer says
// "next message" — and the model did receive it.
func TestHandoffCardOncePerSwitch(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Text("I looked at the parser."), llmtest.Text("coder here"))
	h.prompt("refactor the parser")
	h.until("the run to end", h.idle)
	polly, coder := h.m.personas[0], h.m.personas[2]
	for range 3 { // Polly → coder → Polly → coder …
		h.key("alt+3")
		h.until("the switch", h.idle)
		h.key("alt+1")
		h.until("the switch back", h.idle)
	}
	h.key("alt+3")
	h.until("the switch", h.idle)
	cards := handoffItems(coder)
	if len(cards) != 1 {
		t.Fatalf("coder shows %d handoff cards: %q", len(cards), texts(coder.tr))
	}
	if len(handoffItems(polly)) != 0 {
		t.Errorf("Polly shows a card from itself: %q", texts(polly.tr))
	}
	c := cards[0].text
	for _, want := range []string{"handoff card from Polly", handoffPending, "task “refactor the parser”", "the last result"} {
		if !strings.Contains(c, want) {
			t.Errorf("card line %q lacks %q", c, want)
		}
	}
	if n := strings.Count(h.screen(), "handoff card from"); n != 1 {
		t.Errorf("%d card lines on screen:\n%s", n, h.screen())
	}
	h.prompt("take over")
	h.until("coder's run", func() bool { return h.idle() && h.srv.Calls() == 2 })
	if s := h.screen(); strings.Contains(s, handoffPending) || !strings.Contains(s, handoffSent) {
		t.Errorf("stale card after sending:\n%s", s)
	}
	var sent int
	for _, msg := range h.srv.Last().Messages {
		if strings.Contains(msg.Content, "[HANDOFF from Polly") {
			sent++
		}
	}
	if sent != 1 {
		t.Errorf("the model got %d handoff cards", sent)
	}
}

// Esc cancels the turn and puts the queued text back into the input: it
// is not sent.
func TestEscPutsQueuedTextBack(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Reply{Text: "a reply that never finishes", ChunkSize: 4, Gate: make(chan struct{})})
	h.prompt("start")
	h.until("streaming", func() bool { return strings.Contains(h.screen(), "a re") })
	h.prompt("second thought")
	h.typeText("draft")
	h.key("esc")
	h.until("the run to end", h.idle)
	h.settle(100 * time.Millisecond)
	if h.srv.Calls() != 1 {
		t.Errorf("the queued message was sent: %d calls", h.srv.Calls())
	}
	if got := h.m.input.Value(); got != "second thought\ndraft" {
		t.Errorf("input = %q", got)
	}
	if hasItem(h.m.current().tr, kUser, "second thought") {
		t.Error("the queued message is still in the transcript")
	}
}

// polly "PROMPT" sends PROMPT once the TUI is up.
func TestPromptFromCommandLine(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Text("on it"))
	h.m.prompt = "fix the failing test"
	h.run(h.m.Init())
	h.until("the reply", func() bool { return h.idle() && strings.Contains(h.screen(), "on it") })
	if got := h.srv.Last().LastMessage().Content; got != "fix the failing test" {
		t.Errorf("server got %q", got)
	}
	if !strings.Contains(h.screen(), "┃ fix the failing test") {
		t.Errorf("screen:\n%s", h.screen())
	}
}

// --continue with nothing to continue, or an unknown --session, ends Run
// with a NoSessionError before any screen (the command line exits 2).
func TestRunWithoutSessionToResume(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, id := range []string{"latest", "zzzz"} {
		dir := t.TempDir()
		opts := app.Options{Config: h.app.Config, ProjectDir: dir}
		err := Run(context.Background(), cli.TUIStart{App: opts, ResumeID: id})
		var ns *app.NoSessionError
		if !errors.As(err, &ns) {
			t.Errorf("ResumeID %q: err = %v, want a NoSessionError", id, err)
		}
	}
}

// /sessions ID resumes a session by a prefix of its id.
func TestSessionsByPrefix(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Text("first answer"))
	h.prompt("remember this")
	h.until("idle", h.idle)
	id := h.m.sessID
	h.prompt("/clear")
	h.until("the new session", h.idle)
	h.prompt("/sessions zzzz")
	h.until("the error", func() bool { return strings.Contains(h.screen(), `no session "zzzz"`) })
	h.prompt("/sessions " + id[:3])
	h.until("the resume", func() bool { return h.idle() && h.m.sessID == id && hasItem(h.m.current().tr, kUser, "remember this") })
}

package tui

import (
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llmtest"
)

// The first screen says who is on screen, the model, and the keys for
// help and personas; a message replaces it.
func TestFirstScreen(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 100, h: 30}, llmtest.Text("hello"))
	s := h.screen()
	for _, want := range []string{"You are talking to Polly", "model gpt-4.1 · " + h.srv.URL(), "F1 help", "Alt+1…4 switch personas"} {
		if !strings.Contains(s, want) {
			t.Errorf("first screen lacks %q:\n%s", want, s)
		}
	}
	h.key("alt+3")
	if !strings.Contains(h.screen(), "You are talking to coder — Reads, writes and debugs code") {
		t.Errorf("coder's first screen:\n%s", h.screen())
	}
	h.key("alt+1")
	h.prompt("hi")
	h.until("the reply", h.idle)
	if strings.Contains(h.screen(), "You are talking to") {
		t.Errorf("the welcome stays after a message:\n%s", h.screen())
	}
}

// Without a key the screen fits 80×24 with its headline and the first
// ways to configure a model visible.
func TestNoKeyScreen80x24(t *testing.T) {
	err := (&config.MissingModelError{Provider: "openai", BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY"})
	h := newHarness(t, harnessOpts{w: 80, h: 24, modelErr: err})
	view := h.m.View().Content
	checkScreen(t, "no key", view, 80, 24)
	s := h.screen()
	for _, want := range []string{"No model configured — sending is disabled", "export OPENAI_API_KEY=sk-...", "OPENAI_BASE_URL=http://localhost:11434/v1"} {
		if !strings.Contains(s, want) {
			t.Errorf("no-key screen lacks %q:\n%s", want, s)
		}
	}
	golden.RequireEqual(t, []byte(s))
}

// Scrolled up while text streams: a "↓ new output" marker; End jumps back
// and follows, Home goes to the top.
func TestNewOutputMarkerAndEndHome(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	d := hdr("default")
	for i := range 30 {
		h.m.current().tr.add(&item{kind: kUser, text: "message " + strings.Repeat("x", i)})
	}
	h.key("pgup")
	if strings.Contains(h.screen(), "new output") {
		t.Fatal("marker before anything new arrived")
	}
	h.send(eventsMsg{items: []any{agent.TextDelta{Header: d, Text: "fresh text"}}})
	h.send(frameMsg{})
	if !strings.Contains(h.screen(), "↓ new output below") || strings.Contains(h.screen(), "fresh text") {
		t.Fatalf("no marker while scrolled up:\n%s", h.screen())
	}
	h.key("end")
	if s := h.screen(); strings.Contains(s, "new output below") || !strings.Contains(s, "fresh text") {
		t.Fatalf("end did not jump to the end:\n%s", s)
	}
	h.key("home")
	if s := h.screen(); !strings.Contains(s, "┃ message \n") && !strings.Contains(s, "┃ message") {
		t.Fatalf("home did not go to the top:\n%s", s)
	}
	if !strings.Contains(strings.Split(h.screen(), "\n")[1], "┃ message") {
		t.Errorf("home: first chat line is %q", strings.Split(h.screen(), "\n")[1])
	}
	// With text in the input, end and home edit it; ctrl+end still jumps.
	h.typeText("abc")
	h.key("end")
	if h.m.current().tr.follow {
		t.Error("end with text in the input scrolled the chat")
	}
	h.send(tea.KeyPressMsg{Code: tea.KeyEnd, Mod: tea.ModCtrl})
	if !h.m.current().tr.follow {
		t.Error("ctrl+end did not jump to the end")
	}
}

// F7 turns mouse capture off (the terminal selects text) and on again.
func TestMouseCaptureToggle(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	if h.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Fatal("mouse capture is not on at start")
	}
	h.send(tea.KeyPressMsg{Code: tea.KeyF7})
	if h.m.View().MouseMode != tea.MouseModeNone || !strings.Contains(h.screen(), "mouse capture off") {
		t.Fatalf("F7 did not turn capture off:\n%s", h.screen())
	}
	h.send(tea.KeyPressMsg{Code: tea.KeyF7})
	if h.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Error("F7 did not turn capture back on")
	}
	h.key("f1")
	if !strings.Contains(h.screen(), "mouse capture on/off") {
		t.Errorf("help does not list the key:\n%s", h.screen())
	}
}

// Retry notes go once the retry succeeds; they stay when it fails.
func TestRetryNotesGoOnSuccess(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Text("made it"))
	h.prompt("hi")
	h.until("the reply", func() bool { return h.idle() && strings.Contains(h.screen(), "made it") })
	if s := h.screen(); strings.Contains(s, "retrying") {
		t.Errorf("retry note left after success:\n%s", s)
	}
	tr := h.m.current().tr
	tr.apply(agent.Retrying{Header: hdr("default"), Attempt: 0, Wait: time.Second, Reason: "503"})
	tr.apply(agent.ErrorEvent{Header: hdr("default"), Kind: "server", Message: "503 after retries"})
	if !hasItem(tr, kNotice, "retrying") {
		t.Error("retry note removed although the retries failed")
	}
}

// /init shows one line in the transcript; the model gets the whole prompt.
func TestInitShowsOneLine(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Text("AGENTS.md written"))
	h.prompt("/init")
	h.until("the reply", h.idle)
	s := h.screen()
	if !strings.Contains(s, "┃ /init — write or improve this project's AGENTS.md") || strings.Contains(s, "Read the repository") {
		t.Errorf("screen:\n%s", s)
	}
	// What the fake server received is the text file, as it is on disk.
	file, err := os.ReadFile("prompts/init.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.srv.Last().LastMessage().Content; got != string(file) {
		t.Errorf("the model got %q, want prompts/init.md", got)
	}
}

// The task panel (F3) renders Markdown: the request's **bold** is bold,
// not asterisks.
func TestTaskPanelRendersMarkdown(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.m.current().status = agent.Status{Persona: "default", OriginalRequest: "fix **the parser** in `parse.go`", Anchor: "# Anchor\n\n- step *one*", Threshold: 40000}
	h.m.current().hasStatus = true
	h.key("f3")
	s := h.screen()
	if !strings.Contains(s, "fix the parser in parse.go") || strings.Contains(s, "**") || strings.Contains(s, "`") {
		t.Errorf("task panel:\n%s", s)
	}
}

// The selected tool block is one solid bar with a pointer.
func TestSelectedToolBlockHighlight(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	d := hdr("default")
	h.send(eventsMsg{items: []any{
		agent.ToolStarted{Header: d, CallID: "a", Tool: "read_file", Brief: "path=a.go"},
		agent.ToolFinished{Header: d, CallID: "a", Tool: "read_file", Brief: "path=a.go", OutputChars: 10, OutputLines: 1, Status: "ok"},
		agent.ToolStarted{Header: d, CallID: "b", Tool: "read_file", Brief: "path=b.go"},
		agent.ToolFinished{Header: d, CallID: "b", Tool: "read_file", Brief: "path=b.go", OutputChars: 10, OutputLines: 1, Status: "ok"},
	}})
	h.send(tea.KeyPressMsg{Code: tea.KeyUp, Mod: tea.ModAlt})
	h.send(tea.KeyPressMsg{Code: tea.KeyUp, Mod: tea.ModAlt})
	var sel string
	for _, l := range strings.Split(h.screen(), "\n") {
		if strings.HasPrefix(l, "▶ ") {
			sel = l
		}
	}
	if !strings.Contains(sel, "read_file path=a.go") || len([]rune(sel)) != 80 {
		t.Errorf("selected line = %q (want a.go's block, padded to 80)", sel)
	}
}

package tui

import (
	"strings"
	"testing"
	"time"

	"polly/agent"
	"polly/agent/llmtest"
)

// run_command's output appears in its block while it runs (through the
// real agent, the real shell and the bridge), and the block settles to
// ✓ with the live lines gone once it ends.
func TestLiveCommandBlock(t *testing.T) {
	h := newHarness(t, harnessOpts{},
		llmtest.Call("run_command", `{"command":"echo compiling parser; echo compiling lexer; sleep 1.5; echo all done"}`),
		llmtest.Text("finished"))
	h.prompt("build it")
	h.until("live output in the running block", func() bool {
		s := h.screen()
		return strings.Contains(s, "running…") && strings.Contains(s, "│ compiling parser") && strings.Contains(s, "│ compiling lexer")
	})
	if strings.Contains(h.screen(), "│ all done") {
		t.Fatal("output from after the sleep is already shown")
	}
	h.until("the run to end", h.idle)
	s := h.screen()
	if strings.Contains(s, "│ compiling") || !strings.Contains(s, "run_command") || !strings.Contains(s, "✓") {
		t.Errorf("finished block:\n%s", s)
	}
}

// Only the last lines show, cut to the width, a carriage return starting
// the line over (progress bars).
func TestLiveLinesKeepTheEnd(t *testing.T) {
	ti := &toolInfo{}
	for i := range 2000 {
		ti.addLive(strings.Repeat("x", i%50)+"\n", 0)
	}
	if len(ti.live) > liveMax {
		t.Errorf("live keeps %d bytes", len(ti.live))
	}
	ti.addLive("progress 10%\rprogress 90%\n", 0)
	ls := liveLines(ti.live, 4)
	if len(ls) != 4 || ls[3] != "progress 90%" {
		t.Errorf("live lines = %q", ls)
	}
}

// A failed block shows the first error line, not "exit code: 1"; a
// cancelled one says cancelled; task_plan shows its checklist.
func TestToolBlockPreviews(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	exit, killed := 1, 137
	d := hdr("default")
	h.send(eventsMsg{items: []any{
		agent.ToolStarted{Header: d, CallID: "a", Tool: "run_command", Brief: "command=go build"},
		agent.ToolOutput{Header: d, CallID: "a", Tool: "run_command", Text: "building\n"},
	}})
	if !strings.Contains(h.screen(), "│ building") {
		t.Fatalf("no live line:\n%s", h.screen())
	}
	h.send(eventsMsg{items: []any{
		agent.ToolFinished{Header: d, CallID: "a", Tool: "run_command", IsError: true, ExitCode: &exit, Status: "error",
			Preview: "exit code: 1\n# polly/parser\nparser/parse.go:12:2: undefined: Node\n"},
		agent.ToolStarted{Header: d, CallID: "b", Tool: "run_command", Brief: "command=sleep 100"},
		agent.ToolFinished{Header: d, CallID: "b", Tool: "run_command", IsError: true, ExitCode: &killed, Status: "interrupted", Duration: time.Second,
			Preview: "exit code: 137\ncancelled; process group killed\n(no output)\n"},
		agent.ToolStarted{Header: d, CallID: "c", Tool: "task_plan", Brief: ""},
		agent.ToolFinished{Header: d, CallID: "c", Tool: "task_plan", Status: "ok",
			Preview: "Plan stored:\n1. [DONE] read the parser\n2. [IN PROGRESS] fix Node\n3. [TODO] run the tests\n"},
	}})
	s := h.screen()
	for _, want := range []string{"parser/parse.go:12:2: undefined: Node", "sleep 100 · cancelled", "✓ read the parser", "▸ fix Node", "○ run the tests"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"    exit code: 1", "✗ exit 137", "│ building"} {
		if strings.Contains(s, bad) {
			t.Errorf("screen shows %q:\n%s", bad, s)
		}
	}
}

package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"polly/agent/llmtest"
	"polly/tools"
)

// run_command's output reaches the event stream while the command runs,
// in order and whole, before its ToolFinished.
func TestRunCommandStreamsOutput(t *testing.T) {
	h := newHarness(t,
		llmtest.Call("run_command", `{"command":"echo one; sleep 0.4; echo two >&2; sleep 0.4; printf three"}`),
		llmtest.Text("done"))
	if _, err := h.send(context.Background(), "run it"); err != nil {
		t.Fatal(err)
	}
	var outs []ToolOutput
	var fin *ToolFinished
	for _, e := range h.Events() {
		switch e := e.(type) {
		case ToolOutput:
			if fin != nil {
				t.Errorf("tool_output %q after tool_finished", e.Text)
			}
			outs = append(outs, e)
		case ToolFinished:
			fin = &e
		}
	}
	if fin == nil {
		t.Fatal("no tool_finished")
	}
	var all strings.Builder
	for _, o := range outs {
		all.WriteString(o.Text)
		if o.CallID != fin.CallID || o.Tool != "run_command" {
			t.Errorf("tool_output for %s/%s, want %s/run_command", o.CallID, o.Tool, fin.CallID)
		}
	}
	if all.String() != "one\ntwo\nthree" {
		t.Errorf("streamed output = %q", all.String())
	}
	if len(outs) < 3 {
		t.Fatalf("%d tool_output events; want the three pieces sent as they came", len(outs))
	}
	if gap := fin.Time.Sub(outs[0].Time); gap < 600*time.Millisecond {
		t.Errorf("the first output came %s before the end; it should come while the command runs", gap)
	}
	if fin.Status != "ok" {
		t.Errorf("status = %q", fin.Status)
	}
}

// slowGate is a permission gate that takes a while to answer, as a person does.
type slowGate struct{ d time.Duration }

func (g slowGate) Allow(ctx context.Context, tool string, a tools.Access) error {
	time.Sleep(g.d)
	return nil
}

// A tool call's duration counts from when it was allowed: the time the
// user took to approve is not the command's.
func TestToolDurationExcludesApproval(t *testing.T) {
	h := newHarness(t, llmtest.Call("run_command", `{"command":"true"}`), llmtest.Text("done"))
	// The wait is long next to the command: a sandboxed `true` can take
	// over a second on a loaded machine or under -race.
	h.deps.Gate = slowGate{d: 3 * time.Second}
	if _, err := h.send(context.Background(), "run it"); err != nil {
		t.Fatal(err)
	}
	fins := eventsOf[ToolFinished](h)
	if len(fins) != 1 {
		t.Fatalf("%d tool_finished", len(fins))
	}
	if d := fins[0].Duration; d >= 2500*time.Millisecond || d <= 0 {
		t.Errorf("duration = %s; the 3s approval wait must not count", d)
	}
}

// A cancelled command's ToolFinished says so.
func TestCancelledToolStatus(t *testing.T) {
	h := newHarness(t, llmtest.Call("run_command", `{"command":"sleep 5"}`))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(eventsOf[ToolStarted](h)) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	h.send(ctx, "run it")
	fins := eventsOf[ToolFinished](h)
	if len(fins) != 1 || fins[0].Status != "interrupted" || !fins[0].IsError {
		t.Fatalf("tool_finished = %+v", fins)
	}
}

package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// Issue 12 #5: a model repeating one identical call gets a harness note
// with the third identical result, and the run stops with the reason at
// the eighth — no turn cap needed.
func TestRepeatingModelIsStopped(t *testing.T) {
	h := newHarness(t)
	h.deps.MaxTurns = 0
	os.WriteFile(filepath.Join(h.dir, "a.txt"), []byte("same\n"), 0o644)
	for i := 0; i < 8; i++ {
		h.srv.Push(llmtest.Reply{Text: "Let me read it again.", ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: `{"path":"a.txt"}`}}})
	}
	out, err := h.send(context.Background(), "what is in a.txt?")
	if !errors.Is(err, ErrLoop) || out.Reason != "loop" || !strings.Contains(err.Error(), "read_file path=a.txt was called 8 times in a row with the same arguments and got the same result") {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 8 {
		t.Fatalf("%d requests: the run did not stop at the eighth identical call", len(reqs))
	}
	// The wire: results 1–2 plain, 3–7 carry the note.
	for i := 1; i < 8; i++ {
		got := reqs[i].LastTurn().Content
		noted := strings.Contains(got, "[harness: you made this exact call")
		if noted != (i >= 3) {
			t.Fatalf("request %d: noted=%v: %q", i, noted, got)
		}
	}
	stored, _ := h.store.Session(context.Background(), h.session.ID())
	if stored.Status != "failed" {
		t.Fatalf("session status %q", stored.Status)
	}
}

// A changing result is not a loop: the same command whose output differs
// each time runs on.
func TestChangingResultIsNotALoop(t *testing.T) {
	h := newHarness(t)
	h.deps.MaxTurns = 0
	for i := 0; i < 10; i++ {
		h.srv.Push(llmtest.Call("run_command", `{"command":"date +%N"}`))
	}
	h.srv.Push(llmtest.Text("done polling"))
	if out, err := h.send(context.Background(), "poll the clock ten times"); err != nil || out.Final != "done polling" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
}

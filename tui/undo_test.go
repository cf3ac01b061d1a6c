package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// /undo shows what it did as one block; /rewind lists the turns with the
// files they changed, and c on a turn puts the files back to before it and
// continues in a forked session whose next request carries no later turn.
func TestUndoAndRewindInTheTUI(t *testing.T) {
	h := newHarness(t, harnessOpts{},
		llmtest.Call("write_file", `{"path":"a.txt","content":"one\n"}`), llmtest.Text("wrote a"),
		llmtest.Call("edit_file", `{"path":"a.txt","old_string":"one","new_string":"two"}`), llmtest.Text("edited a"),
	)
	read := func() string {
		b, err := os.ReadFile(filepath.Join(h.dir, "a.txt"))
		if err != nil {
			return "<missing>"
		}
		return string(b)
	}
	h.prompt("write a")
	h.until("idle", h.idle)
	h.prompt("edit a")
	h.until("idle", h.idle)
	if read() != "two\n" {
		t.Fatalf("a.txt = %q", read())
	}
	h.prompt("/undo")
	h.until("the undo block", func() bool { return strings.Contains(h.screen(), "restored  a.txt") })
	if scr := h.screen(); !strings.Contains(scr, `undid turn 2 "edit a"`) || read() != "one\n" {
		t.Fatalf("a.txt = %q, screen:\n%s", read(), scr)
	}
	h.prompt("/redo")
	h.until("the redo block", func() bool { return strings.Contains(h.screen(), "redid turn 2") })
	if read() != "two\n" {
		t.Fatalf("after redo a.txt = %q", read())
	}

	old := h.m.sessID
	h.prompt("/rewind")
	h.until("the turns", func() bool { return rewP(h).done })
	scr := h.screen()
	if !strings.Contains(scr, "write a") || !strings.Contains(scr, "edit a") || !strings.Contains(scr, "a.txt") {
		t.Fatalf("rewind panel:\n%s", scr)
	}
	h.key("up") // turn 1
	h.key("c")
	h.until("the fork", func() bool { return h.m.sessID != old && h.idle() })
	if read() != "<missing>" {
		t.Fatalf("a.txt after rewinding to before turn 1: %q", read())
	}
	if !strings.Contains(h.screen(), "rewound session "+old) || !strings.Contains(h.screen(), "removed   a.txt") {
		t.Fatalf("screen after rewind:\n%s", h.screen())
	}
	h.srv.Push(llmtest.Text("fresh start"))
	h.prompt("again")
	h.until("idle", h.idle)
	for _, m := range h.srv.Last().Messages[1:] { // the system prompt's daily log may mention them: that is memory, not the conversation
		for _, earlier := range []string{"write a", "edit a", "wrote a", "a.txt"} {
			if strings.Contains(m.Content, earlier) {
				t.Fatalf("the forked conversation still carries %q: %s message %q", earlier, m.Role, m.Content)
			}
		}
	}
	if last := h.srv.Last().Messages; len(last) < 2 || last[1].Role != "user" || last[1].Content != "again" {
		t.Fatalf("the forked conversation sent %+v", last)
	}
}

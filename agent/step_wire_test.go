package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/window"
)

// Issue 18: requests reuse the encoded JSON of messages the previous
// request carried (llm.WireCache). What changes in place must still reach
// the wire changed: an output that goes stale and shrinks to its stub at
// the same position, and a conversation replaced by its summary
// (/compact). Asserted on what the fake server received.
func TestChangedMessagesReachTheWire(t *testing.T) {
	h := newHarness(t)
	h.deps.Context = window.Settings{StaleAfter: 4, KeepRecent: 2}
	marker := "WHOLE-OUTPUT-MARKER"
	if err := os.WriteFile(filepath.Join(h.dir, "notes.txt"), []byte(strings.Repeat(marker+" a line of notes\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []llmtest.Step{llmtest.Call("read_file", `{"path":"notes.txt"}`)}
	for i := range 5 {
		name := fmt.Sprintf("small%d.txt", i)
		if err := os.WriteFile(filepath.Join(h.dir, name), []byte("short\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Prose that the summary later replaces.
		steps = append(steps, llmtest.Reply{Text: strings.Repeat("Thinking about what the small files say. ", 40),
			ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":%q}`, name)}}})
	}
	h.srv.Push(append(steps, llmtest.Text("read them all"))...)
	if _, err := h.send(context.Background(), "read notes.txt, then the small files"); err != nil {
		t.Fatal(err)
	}

	// The notes' result: whole in the early requests, its stub later —
	// at the same position, after the same messages.
	var whole, shrunk int
	pos := -1
	for i, r := range h.srv.Requests() {
		for j, m := range r.Messages {
			if m.Role != "tool" || m.ToolCallID != "call_1" {
				continue
			}
			if pos >= 0 && j != pos {
				t.Fatalf("request %d: the notes' result moved from %d to %d; the test wants it in place", i, pos, j)
			}
			pos = j
			switch {
			case strings.Contains(m.Content, marker):
				whole++
				if shrunk > 0 {
					t.Fatalf("request %d: the notes' result is whole again after it had shrunk", i)
				}
			default:
				shrunk++
				if !strings.Contains(m.Content, "read_tool_output") {
					t.Fatalf("request %d: the notes' result is neither whole nor the stub:\n%s", i, m.Content)
				}
			}
		}
	}
	if whole == 0 || shrunk == 0 {
		t.Fatalf("the notes' result went out whole %d times and shrunk %d times; want both", whole, shrunk)
	}

	// /compact replaces the conversation by its summary: the next request
	// carries the summary, not the messages it replaced.
	h.srv.Push(llmtest.Func(func(r llmtest.Request) llmtest.Step {
		if !isSummarizer(r) {
			t.Errorf("want the summarizer's request, got one ending in %q", r.LastMessage().Content)
		}
		return llmtest.Text(boldSummary("COMPACT-MARKER"))
	}), llmtest.Text("carrying on"))
	if ok, err := h.session.Compact(context.Background(), "default"); err != nil || !ok {
		for _, n := range eventsOf[Notice](h) {
			t.Log(n.Text)
		}
		t.Fatalf("Compact = %v, %v", ok, err)
	}
	if _, err := h.send(context.Background(), "continue"); err != nil {
		t.Fatal(err)
	}
	last := h.srv.Last()
	var summary bool
	for _, m := range last.Messages {
		if strings.Contains(m.Content, "COMPACT-MARKER") {
			summary = true
		}
		if m.ToolCallID == "call_1" || m.Content == "read notes.txt, then the small files" {
			t.Fatalf("after /compact the request still carries a replaced message: %+v", m)
		}
	}
	if !summary {
		t.Fatalf("after /compact the request carries no summary: %+v", last.Messages)
	}
}

package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/memory/chat"
)

// The streams in testdata/streams are written after what real
// OpenAI-compatible servers send (routers, vLLM, llama.cpp, Ollama,
// OpenRouter, Azure). Each runs through the whole loop: the real client
// reads it from the fake server as raw bytes, the tools run, the result
// goes back on the next request, the usage lands in SQLite.

func rawStream(t *testing.T, name string) llmtest.Raw {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	return llmtest.Raw{Body: string(b)}
}

// fixtureUsage is what every fixture that reports usage says.
var fixtureUsage = chat.Usage{PromptTokens: 120, CompletionTokens: 30}

// doneReply answers the request after the tool results with usage 1/1, so
// stored totals tell the fixture's usage apart.
var doneReply = llmtest.Reply{Text: "done", Usage: &llmtest.Usage{Prompt: 1, Completion: 1}}

// runQuirkTools runs a fixture whose reply is tool calls writing files,
// and checks the files, the tool results the model got back, and the
// usage stored.
func runQuirkTools(t *testing.T, fixture string, files map[string]string, wantIDs ...string) {
	t.Helper()
	h := newHarness(t, rawStream(t, fixture), doneReply)
	out, err := h.send(context.Background(), "write the files")
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if out.Reason != "completed" || out.Final != "done" || out.ToolCalls != len(files) {
		t.Fatalf("outcome = %+v", out)
	}
	for name, want := range files {
		b, err := os.ReadFile(filepath.Join(h.dir, name))
		if err != nil || string(b) != want {
			t.Fatalf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	// The second request carries the assistant's calls and one result per
	// call (the fake server rejects unpaired ones with a 400).
	reqs := h.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var calls []llmtest.ToolCall
	results := 0
	for _, m := range reqs[1].Messages {
		calls = append(calls, m.ToolCalls...)
		if m.Role == "tool" {
			results++
			if strings.Contains(m.Content, "error") {
				t.Errorf("tool result is an error: %q", m.Content)
			}
		}
	}
	if len(calls) != len(files) || results != len(files) {
		t.Fatalf("second request has %d calls and %d results, want %d: %+v", len(calls), results, len(files), reqs[1].Messages)
	}
	for i, id := range wantIDs {
		if calls[i].ID != id || calls[i].Name != "write_file" {
			t.Errorf("call %d = %+v, want id %s", i, calls[i], id)
		}
	}
	assertStoredUsage(t, h, fixtureUsage.Add(chat.Usage{PromptTokens: 1, CompletionTokens: 1}), 2)
}

// runQuirkText runs a fixture whose reply is text.
func runQuirkText(t *testing.T, fixture, wantText string, wantUsage chat.Usage) *harness {
	t.Helper()
	h := newHarness(t, rawStream(t, fixture))
	out, err := h.send(context.Background(), "finish up")
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if out.Reason != "completed" || out.Final != wantText {
		t.Fatalf("outcome = %+v, want final %q", out, wantText)
	}
	msgs, err := h.store.Messages(context.Background(), h.session.ID(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if last := msgs[len(msgs)-1]; last.Role != chat.Assistant || last.Content != wantText {
		t.Fatalf("stored reply = %+v", last)
	}
	assertStoredUsage(t, h, wantUsage, 1)
	return h
}

func assertStoredUsage(t *testing.T, h *harness, want chat.Usage, calls int) {
	t.Helper()
	totals, err := h.store.Usage(context.Background(), h.session.ID(), false)
	if err != nil {
		t.Fatal(err)
	}
	got := totals.Total
	if got.Usage.PromptTokens != want.PromptTokens || got.Usage.CompletionTokens != want.CompletionTokens || got.Calls != calls || got.Errors != 0 {
		t.Fatalf("stored usage = %+v, want %+v over %d calls", got, want, calls)
	}
}

func TestStreamQuirkChunkIDChanges(t *testing.T) {
	runQuirkTools(t, "id_changes.sse", map[string]string{"a.txt": "A"}, "call_a")
}

func TestStreamQuirkIDAndIndexOnlyInFirstChunk(t *testing.T) {
	runQuirkTools(t, "id_index_first_only.sse", map[string]string{"a.txt": "A"}, "call_a")
}

func TestStreamQuirkWholeToolCallInOneChunk(t *testing.T) {
	runQuirkTools(t, "whole_call_one_chunk.sse", map[string]string{"a.txt": "A"}, "call_a")
}

func TestStreamQuirkInterleavedToolCalls(t *testing.T) {
	runQuirkTools(t, "interleaved_calls.sse", map[string]string{"a.txt": "A", "b.txt": "B"}, "call_a", "call_b")
}

func TestStreamQuirkFinishStopWithToolCalls(t *testing.T) {
	runQuirkTools(t, "stop_with_tool_calls.sse", map[string]string{"a.txt": "A"}, "call_a")
}

func TestStreamQuirkUsageInChunkWithChoices(t *testing.T) {
	runQuirkText(t, "usage_with_choices.sse", "All done.", fixtureUsage)
}

func TestStreamQuirkNoUsageAtAll(t *testing.T) {
	runQuirkText(t, "usage_none.sse", "All done.", chat.Usage{})
}

func TestStreamQuirkSSECommentsAndKeepAlives(t *testing.T) {
	runQuirkText(t, "comments_keepalive.sse", "All done.", fixtureUsage)
}

func TestStreamQuirkDataWithoutSpace(t *testing.T) {
	runQuirkText(t, "data_without_space.sse", "All done.", fixtureUsage)
}

func TestStreamQuirkEmptyChoices(t *testing.T) {
	runQuirkText(t, "empty_choices.sse", "All done.", fixtureUsage)
}

func TestStreamQuirkReasoningFields(t *testing.T) {
	for _, fixture := range []string{"reasoning_content.sse", "reasoning.sse", "reasoning_details.sse"} {
		t.Run(fixture, func(t *testing.T) {
			h := runQuirkText(t, fixture, "All done.", fixtureUsage)
			var reasoning strings.Builder
			for _, e := range eventsOf[ReasoningDelta](h) {
				reasoning.WriteString(e.Text)
			}
			if reasoning.String() != "Weigh the options." {
				t.Fatalf("reasoning shown = %q", reasoning.String())
			}
			// Reasoning is shown, never sent back as the reply: a follow-up
			// request carries only the text.
			h.srv.Push(llmtest.Text("ok"))
			if _, err := h.send(context.Background(), "thanks"); err != nil {
				t.Fatal(err)
			}
			for _, m := range h.srv.Last().Messages {
				if strings.Contains(m.Content, "Weigh") {
					t.Fatalf("reasoning went back to the model: %+v", m)
				}
			}
		})
	}
}

// Really broken streams still fail, with the errors the user knows; the
// loop's one retry of a broken stream gets the same bytes again.
func TestStreamQuirkBrokenStreamsStillFail(t *testing.T) {
	for fixture, want := range map[string]string{
		"broken_json.sse": "malformed stream data",
		"no_finish.sse":   "stream ended before the reply finished (no finish_reason)",
	} {
		t.Run(fixture, func(t *testing.T) {
			h := newHarness(t, rawStream(t, fixture), rawStream(t, fixture))
			out, err := h.send(context.Background(), "finish up")
			if err == nil || llm.KindOf(err) != llm.KindStream || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want a stream error saying %q", err, want)
			}
			if out.Reason != "error" || h.srv.Calls() != 2 {
				t.Fatalf("outcome %+v after %d requests", out, h.srv.Calls())
			}
		})
	}
}

package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"polly/agent"

	"polly/agent/llmtest"
)

// meter is the context count the status bar shows for the current persona.
func meter(h *harness) int {
	p := h.m.current()
	if !p.hasStatus {
		return -1
	}
	return p.status.ContextTokens
}

// The context meter is right before the first turn, after a resume, after
// /clear, after /compact and after /model — not 0, not the old value.
func TestContextMeterIsTrue(t *testing.T) {
	big := strings.Repeat("the parser fails on nested lists and the lexer drops tabs; ", 300) // ~18 KB
	h := newHarness(t, harnessOpts{config: `{"context":{"keep_recent_messages":2}}`},
		llmtest.Text("answer one"), llmtest.Text("answer two"), llmtest.Text("answer three"),
		llmtest.Func(func(llmtest.Request) llmtest.Step {
			return llmtest.Text("## Original request\nthree questions\n## Progress\nanswered\n")
		}),
	)
	h.until("the first status", func() bool { return h.idle() && h.m.current().hasStatus })
	base := meter(h)
	if base <= 0 {
		t.Fatalf("meter before the first turn = %d; the system prompt and tools alone cost tokens", base)
	}
	if !strings.Contains(h.screen(), fmtCount(base)+"/") {
		t.Errorf("status bar does not show %s:\n%s", fmtCount(base), h.screen())
	}
	h.send(tea.PasteMsg{Content: "question one " + big})
	h.key("enter")
	h.until("idle", h.idle)
	for _, q := range []string{"question two", "question three"} {
		h.prompt(q)
		h.until("idle", h.idle)
	}
	full := meter(h)
	if full < base+1000 {
		t.Fatalf("meter after an 18 KB message = %d (base %d)", full, base)
	}

	// Resume (as --continue does): the stored conversation is counted.
	id := h.m.sessID
	h.run(h.m.openSession(id))
	h.until("the resume", func() bool { return h.idle() && h.m.current().hasStatus })
	// The live meter shows the provider's count (the fake server's), the
	// resumed one the tokenizer's estimate: close, not equal.
	if got := meter(h); got < full*7/10 || got > full*14/10 {
		t.Errorf("meter after resume = %d, before it %d", got, full)
	}

	// /compact: the meter shows the compacted context at once.
	h.prompt("/compact")
	h.until("the compaction", func() bool { return h.idle() && h.m.current().hasStatus && h.srv.Calls() == 4 })
	var after int
	for _, it := range h.m.current().tr.items {
		if it.kind == kSummary && it.sum.finished != nil {
			after = it.sum.finished.TokensAfter
		}
	}
	if after == 0 || meter(h) != after {
		t.Errorf("meter after /compact = %d, the receipt says %d", meter(h), after)
	}

	// /model: refreshed for the new model.
	h.prompt("/model gpt-4.1-mini")
	h.until("the status", func() bool { return h.idle() && h.m.current().hasStatus })
	if got := meter(h); got <= 0 || got >= full {
		t.Errorf("meter after /model = %d (compacted %d, full %d)", got, after, full)
	}

	// /clear: a new session's meter, not the old value.
	h.prompt("/clear")
	h.until("the new session", func() bool { return h.idle() && h.m.current().hasStatus })
	if got := meter(h); got <= 0 || got > base*11/10 {
		t.Errorf("meter after /clear = %d, want about the empty context's %d", got, base)
	}
}

// Counts read right in the singular.
func TestPlurals(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	d := hdr("default")
	h.send(eventsMsg{items: []any{
		agent.AnchorInjected{Header: d, Number: 1, ToolCalls: 1, Text: "Current step: 1. read"},
		agent.SummaryFinished{Header: d, TokensBefore: 100, TokensAfter: 50, Replaced: 1, Kept: 2, Accepted: true},
		agent.StatusUpdate{Header: d, Status: agent.Status{Persona: "default", ToolCalls: 1, Compactions: 1, Threshold: 40000}},
	}})
	s := h.screen()
	for _, want := range []string{"after 1 tool call:", "1 message replaced", "• 1 tool call •", "1 compaction"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"1 tool calls", "1 messages", "1 compactions"} {
		if strings.Contains(s, bad) {
			t.Errorf("screen shows %q", bad)
		}
	}
}

package agent

import (
	"context"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/tokens"
)

// The context meter before the first request is an estimate that leaves
// the tokenizer's vocabulary unopened (a few MB of the binary an idle
// session would otherwise keep resident); the first request opens it, and
// the meter counts with it from then on.
func TestStatusBeforeTheFirstRequestLeavesTheTokenizerClosed(t *testing.T) {
	h := newHarness(t, llmtest.Text("done"))
	a, err := h.session.Agent(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.counter.(*tokens.BPE); !ok {
		t.Fatalf("gpt-4.1 counts with %T, want a BPE", a.counter)
	}
	before := a.Status()
	if before.ContextTokens <= 0 {
		t.Fatalf("meter before the first request = %d", before.ContextTokens)
	}
	if _, approx := tokens.Unopened(a.counter).(tokens.Approx); !approx {
		t.Fatal("Status opened the tokenizer before any request")
	}
	if _, err := h.send(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	if _, approx := tokens.Unopened(a.counter).(tokens.Approx); approx {
		t.Fatal("a request did not open the tokenizer")
	}
	// Counted by the tokenizer now, the system prompt and tools alone: the
	// estimate was near it.
	sys := a.systemTokens(a.systemPrompt()) + a.toolTokens()
	if before.ContextTokens < sys*8/10 || before.ContextTokens > sys*14/10 {
		t.Fatalf("estimate before the first request %d, the tokenizer's count %d", before.ContextTokens, sys)
	}
}

package agent

import (
	"slices"
	"testing"
	"time"

	"polly/memory/tokens"
)

// TestStepCostFlat guards issue 18's flatness: the harness cost of a step
// (BenchmarkStepPerContext's harness-cpu-µs/step: this process's CPU from
// a reply's first byte to the next request written, the tools' own time
// left out) with 40k tokens of context stays within twice its cost in a
// fresh conversation, both measured in this run, rounds interleaved so a
// change in the machine's load hits both alike; medians of five rounds.
// Re-encoding the whole history for every request, as before issue 18,
// or anything else that grows with it, breaks it. Messages are counted at
// four characters a token, so the tokenizer's own (flat) cost does not
// dilute the ratio.
func TestStepCostFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 40k-token history and benchmarks for about 15 s")
	}
	url := startStepServer(t)
	small := newStepRig(t, url, "qwen3-coder", 0, stepsPerRun)
	large := newStepRig(t, url, "qwen3-coder", 40_000, stepsPerRun)
	measure := func(r *stepRig) time.Duration {
		r.run(t) // back in the caches after the other rig's round
		r.clock.reset()
		res := testing.Benchmark(func(b *testing.B) {
			for range b.N {
				r.run(b)
			}
		})
		if res.N == 0 {
			t.Fatal("the benchmark failed")
		}
		_, cpu, built, _ := r.clock.perStep()
		t.Logf("%6d tokens: %v a step (%v of it to the request built)", r.ctx, cpu, built)
		return cpu
	}
	var smallCPU, largeCPU []time.Duration
	for range 5 {
		smallCPU = append(smallCPU, measure(small))
		largeCPU = append(largeCPU, measure(large))
	}
	s, l := median(smallCPU), median(largeCPU)
	t.Logf("harness CPU per step, medians: %v with %d tokens of context, %v with %d", s, small.ctx, l, large.ctx)
	if large.ctx < 35_000 {
		t.Fatalf("the large context has %d tokens, want about 40k", large.ctx)
	}
	if l > 2*s {
		t.Errorf("a step with %d tokens of context costs %v, more than twice the %v of a fresh one: something grows with the history", large.ctx, l, s)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// countingCounter records how much text a counter was given.
type countingCounter struct {
	tokens.Counter
	bytes int
}

func (c *countingCounter) Count(s string) int {
	c.bytes += len(s)
	return c.Counter.Count(s)
}

// TestStepCountsOnlyNewText: a step gives the tokenizer only the text it
// adds — the reply (its prose and calls) and the tool's output — never the
// history, the system prompt or the tool schemas again: the bytes counted
// in a run of the step benchmark are exactly those of its new messages.
func TestStepCountsOnlyNewText(t *testing.T) {
	url := startStepServer(t)
	rig := newStepRig(t, url, "gpt-4.1", 5_000, stepsPerRun)
	rig.run(t) // the first request of a rig counts the prompt and schemas once
	counter := &countingCounter{Counter: rig.agent.counter}
	rig.agent.counter = counter
	rig.run(t)
	added := 0
	for _, m := range rig.agent.history[rig.base:] {
		added += len(m.Content)
		for _, c := range m.ToolCalls {
			added += len(c.Name) + len(c.Arguments)
		}
	}
	if counter.bytes != added {
		t.Errorf("a run counted %d bytes of text; its %d new messages have %d", counter.bytes, len(rig.agent.history)-rig.base, added)
	}
	if added < 10_000 {
		t.Errorf("the run added only %d bytes: the benchmark's model did not read files", added)
	}
}

package agent

import (
	"slices"
	"testing"
	"time"
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
	small := newStepRig(t, url, "qwen3-coder", 0)
	large := newStepRig(t, url, "qwen3-coder", 40_000)
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
		_, cpu, built := r.clock.perStep()
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

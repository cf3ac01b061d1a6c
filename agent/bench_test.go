package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"polly/agent/llm"
	"polly/memory/chat"
	"polly/memory/store"
	"polly/personas"
	"polly/tools"
)

// scripted is an in-process model that answers instantly: n tool calls of
// noop, then a final text. Its own time is (nearly) zero, so a benchmark
// through it measures the harness: context policy, tool registry, SQLite
// writes, events.
type scripted struct {
	left int
	seq  int
}

func (s *scripted) Stream(ctx context.Context, req llm.Request, obs llm.Observer) (llm.Response, error) {
	if s.left == 0 {
		return llm.Response{Message: chat.AssistantText("done"), Usage: chat.Usage{PromptTokens: 1000, CompletionTokens: 5}, Attempts: 1}, nil
	}
	s.left--
	s.seq++
	// A different argument each time: the same call with the same result
	// in a row is what the loop detector stops.
	call := chat.ToolCall{ID: fmt.Sprintf("c%d", s.seq), Name: "noop", Arguments: fmt.Sprintf(`{"n":%d}`, s.seq)}
	return llm.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{call}}, Usage: chat.Usage{PromptTokens: 1000, CompletionTokens: 10}, Attempts: 1}, nil
}

type noopArgs struct {
	N int `json:"n"`
}

// BenchmarkHarnessPerToolCall is PRODUCT §11's "harness overhead per tool
// call (scripted model, trivial tool, model time excluded) ≤ 1 ms, flat as
// the history grows". Each sub-benchmark builds a history of the given
// size once; every iteration then starts again from exactly that history
// (the in-memory conversation is cut back outside the timer) and runs a
// short task of callsPerRun tool calls, so the label is the history the
// measured calls really had, whatever b.N is.
func BenchmarkHarnessPerToolCall(b *testing.B) {
	const callsPerRun = 10
	for _, prior := range []int{0, 200, 1000, 4000} {
		b.Run(fmt.Sprintf("history=%d", prior), func(b *testing.B) {
			dir := b.TempDir()
			st, err := store.Open(filepath.Join(dir, ".agent", "polly.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			set, _ := personas.Load("")
			noop := tools.New("noop", "does nothing", func(ctx context.Context, a noopArgs) (tools.Result, error) {
				return tools.Result{Output: "ok"}, nil
			}, nil)
			model := &scripted{}
			deps := &Deps{Store: st, LLM: model, Tools: tools.NewRegistry(noop), Personas: set, Gate: tools.AllowAll{},
				Model: Model{Name: "gpt-4.1", ContextWindow: 1 << 20}, StateDir: filepath.Join(dir, ".agent")}
			p, _ := set.Find("default")
			p.Tools = append(p.Tools, "noop")
			a := newAgent(deps, p, "", "", "default", func(Event) {}, nil, 0)
			sess, err := st.CreateSession(context.Background(), store.Session{Persona: "default"})
			if err != nil {
				b.Fatal(err)
			}
			a.session = sess.ID
			// A prior history of `prior` messages (tool rounds).
			model.left = prior / 2
			if _, err := a.Run(context.Background(), "warm up"); err != nil {
				b.Fatal(err)
			}
			base := len(a.history)
			b.ReportAllocs()
			b.ResetTimer()
			var spent time.Duration
			for range b.N {
				b.StopTimer()
				a.history = a.history[:base:base]
				model.left = callsPerRun
				b.StartTimer()
				start := time.Now()
				if _, err := a.Run(context.Background(), "go on"); err != nil {
					b.Fatal(err)
				}
				spent += time.Since(start)
			}
			b.StopTimer()
			b.ReportMetric(float64(spent.Microseconds())/float64(b.N*callsPerRun), "µs/toolcall")
			b.ReportMetric(float64(base), "history_msgs")
		})
	}
}

package window

import (
	"testing"

	"polly/memory/task"
	"polly/memory/tokens"
)

// BenchmarkBuild1000 is PRODUCT §11's "context policy over a 1,000-message
// history ≤ 2 ms". Token counts are cached on messages, as the loop does.
func BenchmarkBuild1000(b *testing.B) {
	c := tokens.ForModel("gpt-4.1")
	h := history(500, 3000) // 1,001 messages
	calls := callsByID(h)
	for i := range h {
		h[i].Tokens = tokens.Message(c, h[i])
		if h[i].Output != nil { // the loop stores each result with its stub
			h[i].Output.Stub = Stub(h[i], calls[h[i].ToolCallID])
		}
	}
	st := &task.State{OriginalRequest: "refactor the parser", ToolCalls: 500, LastAnchorAt: 500}
	b.ReportAllocs()
	for b.Loop() {
		Build(Input{System: "system prompt", History: h, Task: st, Counter: c, Settings: Settings{HardLimit: 1 << 30}})
	}
}

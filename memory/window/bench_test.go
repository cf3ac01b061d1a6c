package window

import (
	"fmt"
	"strings"
	"testing"

	"polly/memory/chat"
	"polly/memory/task"
	"polly/memory/tokens"
)

// BenchmarkBuild1000 is PRODUCT §11's "context policy over a 1,000-message
// history ≤ 2 ms". Token counts are cached on messages and each build
// reuses the last one's array and argument checks, as the loop does.
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
	var last []chat.Message
	var checked ArgsMemo
	b.ReportAllocs()
	for b.Loop() {
		last = Build(Input{System: "system prompt", History: h, Task: st, Counter: c, Settings: Settings{HardLimit: 1 << 30},
			Reuse: last, Checked: &checked}).Messages
	}
}

// BenchmarkTaskBlock is the price of the live task block on every request:
// render it from a state with a 5,700-character request, two follow-ups, a
// 10-step plan and 40 files, and count its tokens as Build does.
func BenchmarkTaskBlock(b *testing.B) {
	c := tokens.Approx{}
	st := &task.State{OriginalRequest: strings.Repeat("Check that each returned error is wrapped with context. ", 100), ToolCalls: 150,
		FollowUps: []string{"also note ignored errors", "write the report as a table"}, Understanding: "1. read\n2. check\n3. report"}
	for i := 0; i < 10; i++ {
		st.Plan = append(st.Plan, task.Step{Title: fmt.Sprintf("step %d of the audit", i), Status: task.Todo})
	}
	for i := 0; i < 40; i++ {
		st.FilesRead = append(st.FilesRead, fmt.Sprintf("src/f%02d.go", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		m := TaskBlock(st, Settings{})
		_ = tokens.Message(c, m)
	}
}

package window

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"polly/memory/chat"
	"polly/memory/task"
)

// Building into an earlier context's array gives the same context as a
// fresh build, in that array, and forgets what lay past its end.
func TestBuildReusesTheArray(t *testing.T) {
	st := &task.State{OriginalRequest: "refactor the parser", ToolCalls: 40}
	long := history(40, 500)
	in := Input{System: "sys", History: long, Task: st, Settings: Settings{StaleAfter: 10}}
	prev := Build(in).Messages

	short := history(20, 500)
	want := Build(Input{System: "sys", History: short, Task: st, Settings: Settings{StaleAfter: 10}})
	got := Build(Input{System: "sys", History: short, Task: st, Settings: Settings{StaleAfter: 10}, Reuse: prev})
	if !reflect.DeepEqual(got.Messages, want.Messages) || got.Tokens != want.Tokens {
		t.Fatalf("reused build differs: %d messages, %d tokens; want %d, %d",
			len(got.Messages), got.Tokens, len(want.Messages), want.Tokens)
	}
	if &got.Messages[0] != &prev[:1][0] {
		t.Fatal("Build allocated a new array although the old one had room")
	}
	for i, m := range got.Messages[len(got.Messages):cap(got.Messages)] {
		if !reflect.DeepEqual(m, chat.Message{}) {
			t.Fatalf("slot %d past the end still holds %q", len(got.Messages)+i, m.Content)
		}
	}
	// The caller's history is never written through the reused array.
	if !reflect.DeepEqual(short, history(20, 500)) {
		t.Fatal("Build changed the caller's history")
	}
}

// Remembered checks change nothing: malformed arguments are replaced on
// every build, valid ones kept, and only valid ones are remembered.
func TestArgsMemo(t *testing.T) {
	h := history(5, 100)
	h[3].ToolCalls = []chat.ToolCall{{ID: "c2", Name: "read_file", Arguments: `{"path": "f2.go"`}}
	var memo ArgsMemo
	want := Build(Input{System: "sys", History: h}).Messages
	for range 3 {
		got := Build(Input{System: "sys", History: h, Checked: &memo}).Messages
		if !reflect.DeepEqual(got, want) {
			t.Fatal("a build with the memo differs from one without")
		}
	}
	if args := want[4].ToolCalls[0].Arguments; args == h[3].ToolCalls[0].Arguments {
		t.Fatalf("malformed arguments were sent as they are: %s", args)
	}
	if _, ok := memo.valid[h[3].ToolCalls[0].Arguments]; ok || len(memo.valid) != 4 {
		t.Fatalf("memo holds %d strings (want the 4 valid ones)", len(memo.valid))
	}
	// Arguments changed where valid ones were the last time (a new
	// string, of the same length) are checked again, not taken for the
	// string that was there.
	for i := range h {
		if len(h[i].ToolCalls) == 0 || i == 3 {
			continue
		}
		old := h[i].ToolCalls[0].Arguments
		h[i].ToolCalls = []chat.ToolCall{{ID: h[i].ToolCalls[0].ID, Name: h[i].ToolCalls[0].Name, Arguments: "{" + strings.Repeat("x", len(old)-1)}}
		break
	}
	want = Build(Input{System: "sys", History: h}).Messages
	if got := Build(Input{System: "sys", History: h, Checked: &memo}).Messages; !reflect.DeepEqual(got, want) {
		t.Fatal("arguments changed in place were taken as the valid ones before them")
	}
}

// Build skips a pass when what appendLive saw says it has nothing to do:
// over random histories — failed outputs of the same tool later
// succeeding, task_plan calls, long and huge arguments, each present or
// not — every skipped pass, run anyway, leaves the history as it was.
func TestSkippedPassesHaveNothingToDo(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	s := Settings{}.WithDefaults()
	for range 300 {
		h := history(1+r.IntN(30), 10+r.IntN(400))
		failures, plans, long := r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
		for i := range h {
			switch {
			case failures && h[i].Role == chat.Tool && r.IntN(4) == 0:
				h[i].Output.Failed = true
			case plans && len(h[i].ToolCalls) > 0 && r.IntN(4) == 0:
				h[i].ToolCalls = []chat.ToolCall{{ID: h[i].ToolCalls[0].ID, Name: PlanTool, Arguments: `{"steps":[]}`}}
			case long && len(h[i].ToolCalls) > 0 && r.IntN(6) == 0:
				n := []int{s.OffloadChars, s.OffloadChars + 1, s.HugeArgs + 1}[r.IntN(3)]
				h[i].ToolCalls = []chat.ToolCall{{ID: h[i].ToolCalls[0].ID, Name: "write_file", Arguments: `{"content":"` + strings.Repeat("y", n) + `"}`}}
			}
		}
		for i := range h { // the plan results answer their calls
			if h[i].Role == chat.Tool && i > 0 && len(h[i-1].ToolCalls) > 0 {
				h[i].ToolName = h[i-1].ToolCalls[0].Name
			}
		}
		copied, live := appendLive(nil, h)
		same := func(what string, got []chat.Message) {
			t.Helper()
			if !reflect.DeepEqual(got, copied) {
				t.Fatalf("%s was skipped, but it would have changed the history", what)
			}
		}
		if !live.failed {
			got, _ := fadeFailures(append([]chat.Message(nil), copied...))
			same("fadeFailures", got)
		}
		if !live.plan {
			same("supersedePlans", supersedePlans(append([]chat.Message(nil), copied...)))
		}
		if live.longestArgs <= min(s.OffloadChars, s.HugeArgs) {
			got, _ := shrinkArgs(append([]chat.Message(nil), copied...), s.StaleAfter, s.OffloadChars, s.HugeArgs)
			same("shrinkArgs", got)
		}
	}
}

package window

import (
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

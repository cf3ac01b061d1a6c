package window

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"polly/memory/chat"
	"polly/memory/task"
	"polly/memory/tokens"
)

// history builds a conversation: a user request, then n tool rounds, each
// an assistant call and its result of size bytes.
func history(n, size int) []chat.Message {
	h := []chat.Message{chat.UserText("refactor the parser")}
	for i := 1; i <= n; i++ {
		call := chat.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, i)}
		h = append(h, chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{call}})
		out := strings.Repeat("x", size)
		h = append(h, chat.Message{Role: chat.Tool, ToolCallID: call.ID, ToolName: "read_file", Content: out,
			Output: &chat.Output{ExecID: int64(i), Chars: size, Lines: 1}})
	}
	return h
}

func state(calls, lastAnchor int) *task.State {
	return &task.State{OriginalRequest: "refactor the parser", Understanding: "1. read the parser\n2. split it", ToolCalls: calls, LastAnchorAt: lastAnchor}
}

// blocks returns the task blocks of a context.
func blocks(ms []chat.Message) []chat.Message {
	var out []chat.Message
	for _, m := range ms {
		if strings.Contains(m.Content, BlockHeader) {
			out = append(out, m)
		}
	}
	return out
}

// The live task block: one, at the end of every request once the task made
// a tool call, with its anchor number advancing every five calls.
func TestTaskBlockIsLastAndOnlyOne(t *testing.T) {
	cases := []struct {
		name       string
		calls      int
		endsInTool bool
		want       string // "" = no block
	}{
		{"no tool call yet", 0, true, ""},
		{"first call", 1, true, "[TASK — anchor #0"},
		{"at the fifth call", 5, true, "[TASK — anchor #1"},
		{"batch jumps past five", 7, true, "[TASK — anchor #1"},
		{"at the tenth call", 10, true, "[TASK — anchor #2"},
		{"after a new user message too", 10, false, "[TASK — anchor #2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := history(c.calls, 100)
			if !c.endsInTool {
				h = append(h, chat.UserText("and also this"))
			}
			st := state(c.calls, 0)
			st.SetPlan([]task.Step{{Title: "read the parser", Status: task.Done}, {Title: "split it", Status: task.InProgress}})
			st.FilesRead = []string{"f1.go"}
			st.Files = []string{"lexer.go"}
			st.Checkpoint = ".agent/default/active_task.md"
			out := Build(Input{History: h, Task: st})
			got := blocks(out.Messages)
			if c.want == "" {
				if len(got) != 0 || out.Block != nil {
					t.Fatalf("a block before the first tool call: %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d task blocks, want 1", len(got))
			}
			last := out.Messages[len(out.Messages)-1]
			if last.Kind != chat.KindTaskBlock || last.Role != chat.User {
				t.Fatalf("the block is not at the end: last message %+v", last)
			}
			for _, want := range []string{c.want + " —", "Original request:\nrefactor the parser", "Your expanded understanding:\n1. read the parser",
				"1. [DONE] read the parser\n2. [IN PROGRESS] split it", "Current step: 2. split it", "Files read: f1.go", "Files written: lexer.go",
				fmt.Sprintf("Tool calls so far: %d.", c.calls), "Latest checkpoint: .agent/default/active_task.md", "What is the NEXT step?"} {
				if !strings.Contains(last.Content, want) {
					t.Fatalf("block lacks %q:\n%s", want, last.Content)
				}
			}
			if err := Validate(out.Messages[1:]); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Copies of the task state that older versions stored in the history
// (anchors, [ACTIVE TASK] blocks) are never sent: the live block replaces
// them.
func TestStoredTaskCopiesAreNotSent(t *testing.T) {
	h := history(12, 10)
	h = append(h[:5], append([]chat.Message{{Role: chat.User, Kind: chat.KindAnchor, Content: "[TASK ANCHOR — Reminder #1] old"}}, h[5:]...)...)
	h = append(h, chat.Message{Role: chat.User, Kind: chat.KindActiveTask, Content: "[ACTIVE TASK — DO NOT FORGET] old plan"})
	h = append(h, history(1, 10)[1:]...)
	h[len(h)-2].ToolCalls[0].ID = "z1"
	h[len(h)-1].ToolCallID = "z1"

	out := Build(Input{History: h, Task: state(13, 10)})
	for _, m := range out.Messages {
		if m.Kind == chat.KindAnchor || m.Kind == chat.KindActiveTask || strings.Contains(m.Content, "old plan") || strings.Contains(m.Content, "Reminder #1") {
			t.Fatalf("a stored task copy was sent: %q", m.Content)
		}
	}
	if n := len(blocks(out.Messages)); n != 1 {
		t.Fatalf("%d blocks", n)
	}
}

// A request over RequestChars is quoted head + tail with the id that reads
// it; the marker at its very end survives.
func TestLongRequestHeadTailAndID(t *testing.T) {
	req := strings.Repeat("requirement line of the long request\n", 400) + "END-MARKER"
	st := &task.State{OriginalRequest: req, RequestID: 42, ToolCalls: 3, FollowUps: []string{"short follow-up", strings.Repeat("y", 9000) + "FU-END"}, FollowUpIDs: []int64{0, 43}}
	out := Build(Input{History: history(3, 10), Task: st})
	b := out.Messages[len(out.Messages)-1].Content
	for _, want := range []string{"[request #42: 14,810 chars", "read_tool_output(id=42)", "END-MARKER", "requirement line of the long request",
		"Follow-up 1 from the user:\nshort follow-up", "[follow-up #43: 9,006 chars", "FU-END"} {
		if !strings.Contains(b, want) {
			t.Fatalf("block lacks %q", want)
		}
	}
	if len(b) > 16000 {
		t.Fatalf("block is %d chars", len(b))
	}
	// Under the limit the request is whole.
	st.OriginalRequest = strings.Repeat("z", 6000) + "WHOLE-END"
	ms := Build(Input{History: history(3, 10), Task: st}).Messages
	if last := ms[len(ms)-1].Content; !strings.Contains(last, st.OriginalRequest) {
		t.Fatal("a 6,000-char request is not whole")
	}
}

func TestStaleOutputsShrinkToTheirPreviewLine(t *testing.T) {
	h := history(20, 3000) // 41 messages
	out := Build(Input{History: h, Settings: Settings{StaleAfter: 15}})
	msgs := out.Messages[1:]
	for i, m := range msgs {
		if m.Role != chat.Tool {
			continue
		}
		fromEnd := len(msgs) - i
		stale := fromEnd > 15
		isStub := strings.HasPrefix(m.Content, "[output #") && strings.Contains(m.Content, "read_tool_output(id=")
		if stale != isStub {
			t.Fatalf("message %d (%d from the end): stub=%v, want %v: %.80q", i, fromEnd, isStub, stale, m.Content)
		}
		if isStub && !strings.Contains(m.Content, "path=f") {
			t.Fatalf("stub does not name the call: %q", m.Content)
		}
	}
	if out.Shrunk != 12 {
		t.Fatalf("shrunk %d, want 12", out.Shrunk)
	}
	// The input is not modified.
	if h[2].Content != strings.Repeat("x", 3000) {
		t.Fatal("Build modified its input")
	}
}

func TestFailedAttemptsFade(t *testing.T) {
	fail := chat.ToolCall{ID: "f1", Name: "edit_file", Arguments: `{"path":"a.go","old_string":"` + strings.Repeat("q", 400) + `","new_string":"x"}`}
	ok := chat.ToolCall{ID: "f2", Name: "edit_file", Arguments: `{"path":"a.go","old_string":"p","new_string":"x"}`}
	h := []chat.Message{
		chat.UserText("edit a.go"),
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{fail}},
		{Role: chat.Tool, ToolCallID: "f1", ToolName: "edit_file", Content: "error: edit_file: old_string not found in a.go\nlong explanation " + strings.Repeat("z", 300), Output: &chat.Output{ExecID: 1, Failed: true}},
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{ok}},
		{Role: chat.Tool, ToolCallID: "f2", ToolName: "edit_file", Content: "--- a/a.go\n+++ b/a.go", Output: &chat.Output{ExecID: 2}},
	}
	out := Build(Input{History: h})
	if out.Faded != 1 {
		t.Fatalf("faded = %d", out.Faded)
	}
	got := out.Messages[3].Content
	if !strings.HasPrefix(got, "[faded: this edit_file call failed (error: edit_file: old_string not found in a.go)") || strings.Contains(got, "\n") {
		t.Fatalf("faded result = %q", got)
	}
	if args := out.Messages[2].ToolCalls[0].Arguments; len(args) >= len(fail.Arguments) {
		t.Fatalf("long arguments of the failed call were not compacted: %d chars", len(args))
	}
	// A failure followed by another failure does not fade.
	h[4].Output = &chat.Output{ExecID: 2, Failed: true}
	if Build(Input{History: h}).Faded != 0 {
		t.Fatal("faded although the retry failed too")
	}
}

func TestRecoveryCutKeepsTheNewestOutputs(t *testing.T) {
	h := history(6, 5000)
	out := Build(Input{History: h, Recovery: true, Settings: Settings{StaleAfter: 100}})
	var whole, cut int
	for _, m := range out.Messages {
		if m.Role != chat.Tool {
			continue
		}
		if len(m.Content) == 5000 {
			whole++
		} else if strings.Contains(m.Content, "read_tool_output(id=") && len(m.Content) < 1200 {
			cut++
		}
	}
	if whole != 3 || cut != 3 || out.Cut != 3 {
		t.Fatalf("whole=%d cut=%d Cut=%d, want 3/3/3", whole, cut, out.Cut)
	}
}

func TestSummarizeAndHardFallbackThresholds(t *testing.T) {
	c := tokens.Approx{}
	// 60 results of 4,000 chars ≈ 60k tokens with StaleAfter disabled.
	h := history(60, 4000)
	out := Build(Input{History: h, Counter: c, Settings: Settings{StaleAfter: 1000}})
	if !out.Summarize || out.Fallback {
		t.Fatalf("60k tokens: summarize=%v fallback=%v (tokens %d)", out.Summarize, out.Fallback, out.Tokens)
	}
	// Past the hard limit the fallback cuts to the last messages.
	h = history(150, 4000)
	out = Build(Input{History: h, Counter: c, Settings: Settings{StaleAfter: 1000}})
	if !out.Fallback || out.Tokens > out.Hard {
		t.Fatalf("fallback=%v tokens=%d hard=%d", out.Fallback, out.Tokens, out.Hard)
	}
	if len(out.Messages) > 22 {
		t.Fatalf("fallback kept %d messages", len(out.Messages))
	}
	if err := Validate(out.Messages[1:]); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedArgumentsAreSanitizedOnTheWire(t *testing.T) {
	h := []chat.Message{
		chat.UserText("x"),
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "a", Name: "write_file", Arguments: `{"path": "x`}}},
		{Role: chat.Tool, ToolCallID: "a", ToolName: "write_file", Content: "error: not valid JSON"},
	}
	out := Build(Input{History: h})
	if args := out.Messages[2].ToolCalls[0].Arguments; !strings.Contains(args, "_invalid_json") {
		t.Fatalf("arguments on the wire = %q", args)
	}
	if h[1].ToolCalls[0].Arguments != `{"path": "x` {
		t.Fatal("the stored history was modified")
	}
}

// randomHistory makes a history with every kind of defect a crash, a cut
// or a bug could leave: missing results, orphans, duplicates, anchors and
// summaries in odd places.
func randomHistory(r *rand.Rand, n int) []chat.Message {
	var h []chat.Message
	id := 0
	for len(h) < n {
		switch r.IntN(7) {
		case 0:
			h = append(h, chat.UserText("user"))
		case 1:
			h = append(h, chat.AssistantText("text"))
		case 2, 3:
			k := 1 + r.IntN(3)
			var calls []chat.ToolCall
			for j := 0; j < k; j++ {
				id++
				calls = append(calls, chat.ToolCall{ID: fmt.Sprint("c", id), Name: []string{"read_file", "grep", "run_command"}[r.IntN(3)], Arguments: `{"path":"p"}`})
			}
			h = append(h, chat.Message{Role: chat.Assistant, ToolCalls: calls})
			perm := r.Perm(k)
			for _, j := range perm {
				if r.IntN(8) == 0 {
					continue // missing result
				}
				size := []int{10, 3000, 9000}[r.IntN(3)]
				h = append(h, chat.Message{Role: chat.Tool, ToolCallID: calls[j].ID, ToolName: calls[j].Name, Content: strings.Repeat("o", size),
					Output: &chat.Output{ExecID: int64(id*10 + j), Chars: size, Failed: r.IntN(4) == 0}})
				if r.IntN(15) == 0 {
					h = append(h, h[len(h)-1]) // duplicate result
				}
			}
		case 4:
			h = append(h, chat.Message{Role: chat.Tool, ToolCallID: "orphan", ToolName: "grep", Content: "orphan"})
		case 5:
			h = append(h, chat.Message{Role: chat.User, Kind: chat.KindAnchor, Content: "anchor"})
		case 6:
			h = append(h, chat.Message{Role: chat.User, Kind: chat.KindSummary, Content: "summary"})
		}
	}
	return h
}

// Every rewrite yields a valid history, whatever the input: a property test
// over random histories and every mode of the policy.
func TestEveryRewriteIsValid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		h := randomHistory(r, 1+r.IntN(120))
		st := state(r.IntN(50), 0)
		in := Input{History: h, Task: st, Recovery: r.IntN(2) == 0, Counter: tokens.Approx{},
			Settings: Settings{SummarizeAt: 1000 + r.IntN(20000), HardLimit: 2000 + r.IntN(30000), StaleAfter: 1 + r.IntN(20)}}
		out := Build(in)
		if out.Messages[0].Role != chat.System {
			t.Fatal("the system prompt is not first")
		}
		if err := Validate(out.Messages[1:]); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if Validate(h) == nil && out.Repaired != 0 {
			t.Fatalf("case %d: a valid history was repaired", i)
		}
		split := SplitPoint(h, 15)
		if split > 0 && split < len(h) && h[split].Role == chat.Tool {
			t.Fatalf("case %d: split at a tool result", i)
		}
	}
}

func FuzzRepair(f *testing.F) {
	f.Add(uint64(1), 10)
	f.Add(uint64(7), 100)
	f.Fuzz(func(t *testing.T, seed uint64, n int) {
		if n < 0 || n > 400 {
			return
		}
		h := randomHistory(rand.New(rand.NewPCG(seed, seed^0x9e3779b9)), n)
		out, _ := Repair(h)
		if err := Validate(out); err != nil {
			t.Fatal(err)
		}
		again, fixes := Repair(out)
		if fixes != 0 || len(again) != len(out) {
			t.Fatal("Repair is not idempotent")
		}
	})
}

func TestPreviewShowsHeadAndLongerTail(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "line %d of the build log\n", i)
	}
	b.WriteString("FAIL: TestParser (0.01s) expected 3 got 4\n")
	out := b.String()
	p := Preview(out, 42, 500, 1500)
	if !strings.HasPrefix(p, "[output #42: ") || !strings.Contains(p, "1,001 lines") || !strings.Contains(p, "read_tool_output(id=42") {
		t.Fatalf("preview header: %.200q", p)
	}
	if !strings.Contains(p, "line 1 of the build log") || !strings.Contains(p, "FAIL: TestParser") {
		t.Fatal("preview lacks the head or the tail")
	}
	if len(p) > 2300 {
		t.Fatalf("preview is %d bytes", len(p))
	}
	head := strings.Index(p, "omitted")
	if head < 0 || strings.Count(p[:head], "\n") >= strings.Count(p[head:], "\n") {
		t.Fatal("the tail is not longer than the head")
	}
}

// Tool-call arguments shrink like outputs: long ones once stale, huge ones
// at once; the hard fallback cuts arguments too, so a 10 MB argument never
// rides along.
func TestLongArgumentsShrink(t *testing.T) {
	h := history(20, 10)
	h[1].ToolCalls[0].Arguments = `{"path":"a.txt","content":"` + strings.Repeat("s", 5000) + `"}`  // stale, over 2,000
	h[39].ToolCalls[0].Arguments = `{"path":"b.txt","content":"` + strings.Repeat("r", 5000) + `"}` // recent: kept
	out := Build(Input{History: h, Settings: Settings{StaleAfter: 15}})
	if got := out.Messages[2].ToolCalls[0].Arguments; len(got) > 400 || !strings.Contains(got, "5,000 chars in all") || !strings.Contains(got, `"path":"a.txt"`) {
		t.Fatalf("stale argument: %.300s", got)
	}
	if got := out.Messages[40].ToolCalls[0].Arguments; len(got) < 5000 {
		t.Fatal("a recent argument shrank")
	}
	if h[1].ToolCalls[0].Arguments == out.Messages[2].ToolCalls[0].Arguments {
		t.Fatal("the caller's history was rewritten")
	}

	huge := history(2, 10)
	huge[3].ToolCalls[0].Arguments = `{"path":"big.bin","content":"` + strings.Repeat("z", 10<<20) + `"}`
	out = Build(Input{History: huge, Counter: tokens.Approx{}})
	if out.Tokens > 2000 || out.Fallback {
		t.Fatalf("a 10 MB argument: %d tokens, fallback %v", out.Tokens, out.Fallback)
	}
	// With the huge rule off, the hard fallback still brings it under.
	out = Build(Input{History: huge, Counter: tokens.Approx{}, Settings: Settings{HugeArgs: 1 << 30}})
	if !out.Fallback || out.Tokens > out.Hard {
		t.Fatalf("hard fallback: %d tokens > %d", out.Tokens, out.Hard)
	}
}

// On a small window the recent outputs shrink to their stubs, oldest
// first, until they hold at most half of what the budget has beside the
// fixed cost; the newest result stays whole.
func TestRecentOutputsShrinkToFitTheRoom(t *testing.T) {
	h := history(12, 4000) // ~1,000 tokens per output
	out := Build(Input{History: h, Budget: 8000, Counter: tokens.Approx{}})
	room := 8000 - out.Fixed
	whole, outputs := 0, 0
	for _, m := range out.Messages {
		if m.Role == chat.Tool && !strings.HasPrefix(m.Content, "[output #") {
			whole++
			outputs += m.Tokens
		}
	}
	if outputs > room/2 || whole == 0 {
		t.Fatalf("%d whole outputs of %d tokens, room %d", whole, outputs, room)
	}
	last := out.Messages[len(out.Messages)-1]
	if last.Role != chat.Tool || strings.HasPrefix(last.Content, "[output #") {
		t.Fatalf("the newest result was shrunk: %.60q", last.Content)
	}
	// A big budget keeps them all (only the 15-message rule applies).
	out = Build(Input{History: h, Budget: 1_000_000, Counter: tokens.Approx{}, Settings: Settings{StaleAfter: 1000}})
	for _, m := range out.Messages {
		if m.Role == chat.Tool && strings.HasPrefix(m.Content, "[output #") {
			t.Fatal("an output shrank with room to spare")
		}
	}
}

// Only the newest task_plan call and result are sent whole: an older
// plan's statuses are stale, and the task block carries the live plan.
func TestOlderPlansAreSuperseded(t *testing.T) {
	plan := func(id, status string) []chat.Message {
		call := chat.ToolCall{ID: id, Name: PlanTool, Arguments: `{"steps":[{"title":"STEP-A","status":"` + status + `"}]}`}
		return []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{call}},
			{Role: chat.Tool, ToolCallID: id, ToolName: PlanTool, Content: "Plan stored:\n1. [" + status + "] STEP-A"}}
	}
	h := append([]chat.Message{chat.UserText("go")}, plan("p1", "in_progress")...)
	h = append(h, plan("p2", "done")...)
	out := Build(Input{History: h})
	var sent strings.Builder
	for _, m := range out.Messages {
		sent.WriteString(m.Content + "\n")
		for _, tc := range m.ToolCalls {
			sent.WriteString(tc.Arguments + "\n")
		}
	}
	if strings.Contains(sent.String(), "in_progress") || !strings.Contains(sent.String(), SupersededPlan) || !strings.Contains(sent.String(), "[done] STEP-A") {
		t.Fatalf("sent:\n%s", sent.String())
	}
	if h[2].Content != "Plan stored:\n1. [in_progress] STEP-A" {
		t.Fatal("the caller's history was changed")
	}
}

// Past the hard limit a summary is still asked for: the hard fallback's
// cut is what is sent if none can be made, not a reason to skip it.
func TestOverTheHardLimitStillSummarizes(t *testing.T) {
	out := Build(Input{History: history(40, 4000), Budget: 20000, Counter: tokens.Approx{}, Settings: Settings{StaleAfter: 1000, OutputShare: 1}})
	if !out.Fallback || !out.Summarize || out.Whole <= out.Tokens {
		t.Fatalf("fallback %v summarize %v whole %d tokens %d", out.Fallback, out.Summarize, out.Whole, out.Tokens)
	}
}

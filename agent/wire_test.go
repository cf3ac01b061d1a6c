package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/chat"
	"polly/memory/task"
	"polly/memory/window"
	"polly/tools"
)

// planWorker scripts a model that works through a task of `calls` tool
// calls: it sets a plan of `steps` steps with task_plan, advances it evenly
// (one step done, the next in progress), reads files in between, and
// answers when done. It remembers the plan it last set, so a test can
// compare every request's task block with the live plan. Summarizer
// requests go to onSummary.
type planWorker struct {
	calls, steps int
	readArgs     func(n int) string // arguments of the n-th read_file call
	text         func(n int) string // reply text of the n-th call ("" : terse)
	onSummary    func(r llmtest.Request) llmtest.Step
	pauses       []int // after this many calls, ask the user a question (ends the run)

	mu       sync.Mutex
	done     int
	plan     []tools.PlanStep
	expected map[int]string // request index → the live plan it must carry ("" before the first call)
	doneAt   map[int]int    // request index → calls (and items) the model had made when it arrived
	askedAt  map[int]int    // request index → questions asked (follow-ups answered) before it
	asked    int
	index    int // requests seen (summarizer ones included)
	final    string
}

func (w *planWorker) planText() string {
	steps := make([]task.Step, len(w.plan))
	for i, s := range w.plan {
		steps[i] = task.Step{Title: s.Title, Status: task.Status(s.Status)}
	}
	return task.PlanText(steps)
}

// stepAt is the plan step the n-th call belongs to.
func (w *planWorker) stepAt(n int) int { return min(w.steps-1, (n-1)*w.steps/w.calls) }

func (w *planWorker) step(r llmtest.Request) llmtest.Step {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := w.index
	w.index++
	if isSummarizer(r) {
		return w.onSummary(r)
	}
	if w.expected == nil {
		w.expected, w.doneAt, w.askedAt = map[int]string{}, map[int]int{}, map[int]int{}
	}
	w.doneAt[i], w.askedAt[i] = w.done, w.asked
	if w.done > 0 {
		w.expected[i] = w.planText()
	}
	if w.done >= w.calls {
		return llmtest.Text(w.final)
	}
	if len(w.pauses) > 0 && w.done == w.pauses[0] {
		w.pauses = w.pauses[1:]
		w.asked++
		return llmtest.Text(fmt.Sprintf("I have done %d calls. Should I go on the same way?", w.done))
	}
	w.done++
	n := w.done
	text := ""
	if w.text != nil {
		text = w.text(n)
	}
	// Call 1 sets the plan; the first call of each later step moves it on.
	if n == 1 || w.stepAt(n) != w.stepAt(n-1) {
		cur := w.stepAt(n)
		w.plan = make([]tools.PlanStep, w.steps)
		for k := range w.plan {
			status := "todo"
			switch {
			case k < cur:
				status = "done"
			case k == cur:
				status = "in_progress"
			}
			w.plan[k] = tools.PlanStep{Title: fmt.Sprintf("STEP-%c check part %d", 'A'+k, k+1), Status: status}
		}
		args, _ := json.Marshal(map[string]any{"steps": w.plan})
		return llmtest.Reply{Text: text, ToolCalls: []llmtest.ToolCall{{Name: "task_plan", Args: string(args)}}}
	}
	return llmtest.Reply{Text: text, ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: w.readArgs(n)}}}
}

// itemsBefore is how many calls the model had made when request i came.
func (w *planWorker) itemsBefore(i int) int { return w.doneAt[i] }

// expectedFollowUps is how many follow-ups the user had given by request i.
func (w *planWorker) expectedFollowUps(i int) int { return w.askedAt[i] }

// blockPlan is the plan a task block shows.
func blockPlan(block string) string {
	_, rest, ok := strings.Cut(block, "Plan (live statuses):\n")
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(rest, "\n") {
		if !strings.HasPrefix(l, "Current step") && !strings.HasPrefix(l, "Every step") && len(l) > 0 && l[0] >= '0' && l[0] <= '9' {
			b.WriteString(l)
			continue
		}
		break
	}
	return b.String()
}

// checkBlocks asserts what the issue asks of every request the server got
// after the first tool call: exactly one task block, last, whose plan is
// the live plan; no stale copy of the task state anywhere.
func checkBlocks(t *testing.T, reqs []llmtest.Request, w *planWorker) int {
	t.Helper()
	checked := 0
	for i, r := range reqs {
		if isSummarizer(r) {
			continue
		}
		want, after := w.expected[i]
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "[ACTIVE TASK") || strings.Contains(m.Content, "[TASK ANCHOR") {
				t.Fatalf("request %d carries a stored task copy: %.100q", i, m.Content)
			}
		}
		blocks := r.TaskBlocks()
		if !after {
			if len(blocks) != 0 {
				t.Fatalf("request %d: a task block before the first tool call", i)
			}
			continue
		}
		if len(blocks) != 1 || !llmtest.IsTaskBlock(r.LastMessage()) {
			t.Fatalf("request %d: %d task blocks (last message %.60q)", i, len(blocks), r.LastMessage().Content)
		}
		if got := blockPlan(blocks[0].Content); got != want {
			t.Fatalf("request %d: the block's plan\n%s\nis not the live plan\n%s", i, got, want)
		}
		checked++
	}
	return checked
}

// Issue 12 #1 (small): one live task block per request, rebuilt from the
// task state, with the live plan; nothing of it is stored in the history.
func TestTaskBlockOnTheWire(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.dir, "a.txt"), []byte("alpha\n"), 0o644)
	w := &planWorker{calls: 23, steps: 4, final: "all parts checked", readArgs: func(int) string { return `{"path":"a.txt"}` }}
	h.srv.Serve(w.step)
	out, err := h.send(context.Background(), "Check the four parts of a.txt.")
	if err != nil || out.ToolCalls != 23 {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if n := checkBlocks(t, h.srv.Requests(), w); n != 23 {
		t.Fatalf("%d requests checked, want 23", n)
	}
	last := h.srv.Last().LastMessage().Content
	for _, want := range []string{"[TASK — anchor #4 —", "Original request:\nCheck the four parts of a.txt.", "Files read: a.txt", "Tool calls so far: 23."} {
		if !strings.Contains(last, want) {
			t.Fatalf("the last block lacks %q:\n%s", want, last)
		}
	}
	// The anchor event still says when the number advances: every 5 calls.
	var at []int
	for _, a := range eventsOf[AnchorInjected](h) {
		at = append(at, a.ToolCalls)
	}
	if fmt.Sprint(at) != "[5 10 15 20]" {
		t.Fatalf("anchor events at %v", at)
	}
	// No copy of the task state was written into the stored history.
	stored, err := h.store.Messages(context.Background(), h.session.ID(), "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stored {
		if m.Kind != chat.KindNormal || strings.Contains(m.Content, "[TASK —") {
			t.Fatalf("stored harness message %q: %.80q", m.Kind, m.Content)
		}
	}
}

// Issue 12 #2: a new task after a finished one starts clean — none of the
// old task's block or summary is sent as current, its summary is not
// merged — and a follow-up naming the new task's file reopens it.
func TestNewTaskStartsClean(t *testing.T) {
	h := newHarness(t)
	h.deps.Context = window.Settings{SummarizeAt: 6000, KeepRecent: 4, StaleAfter: 100}
	writeBig(t, h.dir, 5000)
	os.WriteFile(filepath.Join(h.dir, "poem.txt"), []byte("leaves\n"), 0o644)
	summary := func(marker string) func() llmtest.Step {
		return func() llmtest.Step {
			return llmtest.Text("## CURRENT TASK\n" + marker + "\n## COMPLETED SO FAR\n- read parts\n## IN PROGRESS / NEXT\n- more\n## KEY FACTS\n- big.txt is big\n## BLOCKED / ISSUES\nnone")
		}
	}
	loop := readLoop(8, summary("OLD-TASK-SUMMARY"))
	h.srv.Serve(func(r llmtest.Request) llmtest.Step { return loop(r) })
	if _, err := h.send(context.Background(), "Read big.txt eight times and report its size."); err != nil {
		t.Fatal(err)
	}
	if len(eventsOf[SummaryFinished](h)) == 0 {
		t.Fatal("the first task made no summary")
	}
	first := h.srv.Calls()

	loop = readLoop(8, summary("NEW-TASK-SUMMARY"))
	if _, err := h.send(context.Background(), "Write a haiku about autumn into poem.txt."); err != nil {
		t.Fatal(err)
	}
	reqs := h.srv.Requests()[first:]
	sums := 0
	for i, r := range reqs {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "OLD-TASK-SUMMARY") {
				t.Fatalf("request %d of the new task carries the old summary", i)
			}
		}
		if isSummarizer(r) {
			sums++
			if sums == 1 && !strings.Contains(r.LastMessage().Content, "(none: this is the first summary of this task)") {
				t.Fatal("the new task's first summary merged a previous one")
			}
			continue
		}
		for _, b := range r.TaskBlocks() {
			if !strings.Contains(b.Content, "Original request:\nWrite a haiku about autumn into poem.txt.") ||
				!strings.Contains(b.Content, "Previous task: Read big.txt eight times and report its size. (done)") ||
				strings.Contains(b.Content, "Read big.txt eight times and report its size.\n") {
				t.Fatalf("request %d: block\n%s", i, b.Content)
			}
		}
	}
	if sums == 0 {
		for _, e := range eventsOf[SummaryFinished](h) {
			t.Logf("%+v", e.Why)
		}
		for _, e := range eventsOf[Usage](h) {
			t.Logf("%d", e.ContextTokens)
		}
		t.Fatal("the new task made no summary")
	}

	// A follow-up about the finished task's file reopens it.
	before := h.srv.Calls()
	h.srv.Serve(nil)
	h.srv.Push(llmtest.Call("read_file", `{"path":"poem.txt"}`), llmtest.Text("checked"))
	if _, err := h.send(context.Background(), "also check poem.txt again"); err != nil {
		t.Fatal(err)
	}
	blocks := h.srv.Requests()[before+1].TaskBlocks()
	if len(blocks) != 1 || !strings.Contains(blocks[0].Content, "Original request:\nWrite a haiku about autumn into poem.txt.") ||
		!strings.Contains(blocks[0].Content, "Follow-up 1 from the user:\nalso check poem.txt again") {
		t.Fatalf("the follow-up did not reopen the task: %+v", blocks)
	}
}

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/chat"
	"polly/memory/task"
	"polly/memory/window"
	"polly/tools"
)

const longRequest = "Audit every source file under src/ for error handling, run the build log check after every ten files, and write a report of what you found."

const longPlan = "Here is my plan:\n1. Read each file under src/ and note how errors are handled.\n2. Every ten files, run the build log check and read its result.\n3. Write the findings into a report."

// longTask scripts a model that works through `calls` tool calls: mostly
// ~6 KB file reads, and every tenth call a command printing cmdKB of log.
// Summarizer requests are answered with a structured summary that carries
// a marker, so a test can see the next summary merged it.
type longTask struct {
	calls, cmdKB int
	findings     int // characters of narration per reply (0: terse replies)
	replyChars   int // length of the last reply's text

	mu         sync.Mutex
	done       int      // tool calls issued
	summaries  []string // summaries returned
	sumPrompts []string // summarizer prompts received
	naive      int      // chars the naive full history would hold now
	naiveTotal int      // sum over model requests of naive
	sentTotal  int      // sum over model requests of chars actually sent
	peakSent   int
	requests   int
}

func (lt *longTask) setup(t *testing.T, dir string) {
	t.Helper()
	var line strings.Builder
	for i := 0; i < 40; i++ {
		line.Reset()
		for j := 0; line.Len() < 6000; j++ {
			fmt.Fprintf(&line, "func handler%d_%d(w http.ResponseWriter, r *http.Request) error { return fmt.Errorf(\"wrap: %%w\", err) }\n", i, j)
		}
		os.MkdirAll(filepath.Join(dir, "src"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, "src", fmt.Sprintf("f%02d.go", i)), []byte(line.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func chars(msgs []llmtest.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Args) + len(tc.Name)
		}
	}
	return n
}

func (lt *longTask) step(r llmtest.Request) llmtest.Step {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if strings.Contains(r.Messages[0].Content, "You are compacting") {
		lt.sumPrompts = append(lt.sumPrompts, r.Messages[len(r.Messages)-1].Content)
		n := len(lt.summaries) + 1
		s := fmt.Sprintf("## CURRENT TASK\n%s\n\n## COMPLETED SO FAR\n- SUMMARY-MARKER-%d: read files up to call %d; error handling mostly wraps with %%w.\n\n## IN PROGRESS / NEXT\n- keep reading src/ files; run the build log check every ten files.\n\n## KEY FACTS\n- files live in src/, 40 of them.\n\n## BLOCKED / ISSUES\nnone\n", longRequest, n, lt.done)
		lt.summaries = append(lt.summaries, s)
		return llmtest.Text(s)
	}
	sent := chars(r.Messages)
	lt.requests++
	lt.sentTotal += sent
	lt.peakSent = max(lt.peakSent, sent)
	if lt.naive == 0 {
		lt.naive = sent // system prompt + request
	} else {
		// The naive history grows by everything that happened since the
		// last request: the reply we gave, and the whole tool output.
		last := r.LastTurn()
		lt.naive += lt.replyChars + 100 + lt.lastOutput(last)
	}
	lt.naiveTotal += lt.naive
	if lt.done >= lt.calls {
		return llmtest.Text("Report written: every file wraps its errors.")
	}
	lt.done++
	text := fmt.Sprintf("Checking item %d.", lt.done)
	if lt.findings > 0 {
		// An auditing model narrates what it found in each file.
		var b strings.Builder
		fmt.Fprintf(&b, "Item %d: findings so far. ", lt.done)
		for b.Len() < lt.findings {
			fmt.Fprintf(&b, "handler%d wraps its error with %%w and returns it to the caller without logging; ", b.Len())
		}
		text = b.String()
	}
	lt.replyChars = len(text)
	if lt.done == 1 {
		text = longPlan
	}
	if lt.done%10 == 0 {
		cmd := fmt.Sprintf(`{"command":"yes 'build log: compiling package and checking error paths ....' | head -c %d; echo; echo BUILD-OK-%d"}`, lt.cmdKB*1024, lt.done)
		return llmtest.Reply{Text: text, ToolCalls: []llmtest.ToolCall{{Name: "run_command", Args: cmd}}}
	}
	args := fmt.Sprintf(`{"path":"src/f%02d.go"}`, lt.done%40)
	return llmtest.Reply{Text: text, ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: args}}}
}

// lastOutput estimates the whole output behind the newest tool message.
func (lt *longTask) lastOutput(m llmtest.Message) int {
	if m.Role != "tool" {
		return len(m.Content)
	}
	if (lt.done)%10 == 0 {
		return lt.cmdKB*1024 + 20
	}
	return 6500 // a ~6 KB file, numbered
}

type longStats struct {
	out            Outcome
	h              *harness
	lt             *longTask
	reqs           []llmtest.Request
	maxCtx, thresh int
}

func runLongTask(t *testing.T, calls, cmdKB, findings int) longStats {
	lt := &longTask{calls: calls, cmdKB: cmdKB, findings: findings}
	h := newHarness(t)
	h.deps.MaxTurns = calls + 10
	h.deps.Model = Model{Name: "gpt-4.1", ContextWindow: 1_047_576}
	h.deps.Tools.Add(tools.ShellTool(h.dir, tools.ShellOptions{}))
	lt.setup(t, h.dir)
	h.srv.Serve(lt.step)
	out, err := h.send(context.Background(), longRequest)
	if err != nil {
		t.Fatal(err)
	}
	st := longStats{out: out, h: h, lt: lt, reqs: h.srv.Requests()}
	for _, u := range eventsOf[Usage](h) {
		st.maxCtx = max(st.maxCtx, u.ContextTokens)
		st.thresh = u.Threshold
	}
	return st
}

// Must show (issue 3 #3): 200 scripted tool calls through the real loop.
func TestLongTaskKeepsTheThread(t *testing.T) {
	if testing.Short() {
		t.Skip("long task")
	}
	// Replies narrate ~1,200 characters of findings each: with terse
	// replies the stale-output shrink alone keeps 200 calls under 40k and no
	// summary happens (see TestHundredCallTaskBudget).
	st := runLongTask(t, 200, 30, 1200)
	h, lt := st.h, st.lt
	if st.out.ToolCalls != 200 || st.out.Reason != "completed" {
		t.Fatalf("outcome = %+v", st.out)
	}

	// Every model request carries the original request.
	for i, r := range st.reqs {
		if strings.Contains(r.Messages[0].Content, "You are compacting") {
			continue
		}
		found := false
		for _, m := range r.Messages {
			if strings.Contains(m.Content, longRequest) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("request %d does not carry the original request", i)
		}
	}

	// Anchors every 5 calls, carrying the expanded understanding.
	anchors := eventsOf[AnchorInjected](h)
	if len(anchors) != 40 {
		t.Fatalf("%d anchors, want 40", len(anchors))
	}
	for i, a := range anchors {
		if a.ToolCalls != 5*(i+1) || !strings.Contains(a.Text, "1. Read each file under src/") || !strings.Contains(a.Text, longRequest) {
			t.Fatalf("anchor %d at %d calls: %.300q", i, a.ToolCalls, a.Text)
		}
	}

	// Checkpoints at 30, 60, … and before each summary.
	var periodic []int
	beforeSummary := 0
	for _, c := range eventsOf[CheckpointWritten](h) {
		switch c.Reason {
		case "periodic":
			periodic = append(periodic, c.ToolCalls)
		case "summary":
			beforeSummary++
		}
	}
	if fmt.Sprint(periodic) != "[30 60 90 120 150 180]" {
		t.Fatalf("periodic checkpoints at %v", periodic)
	}
	sums := eventsOf[SummaryFinished](h)
	accepted := 0
	for _, s := range sums {
		if s.Accepted {
			accepted++
		}
	}
	if accepted < 2 || beforeSummary != len(eventsOf[SummaryStarted](h)) {
		t.Fatalf("%d summaries accepted, %d checkpoints before summaries, %d started", accepted, beforeSummary, len(eventsOf[SummaryStarted](h)))
	}
	// The second summary merges the first: its prompt carries it.
	if len(lt.sumPrompts) < 2 || !strings.Contains(lt.sumPrompts[1], "SUMMARY-MARKER-1") {
		t.Fatal("the second summarizer request does not carry the first summary")
	}
	if !strings.Contains(lt.sumPrompts[1], "# Previous summary") {
		t.Fatal("no previous-summary section")
	}
	// Peak prompt stays under the threshold plus one step.
	if st.maxCtx > st.thresh+4000 {
		t.Fatalf("peak context %d tokens, threshold %d", st.maxCtx, st.thresh)
	}

	// The 30 KB outputs were offloaded and are readable by id.
	var off []OutputOffloaded
	for _, o := range eventsOf[OutputOffloaded](h) {
		if o.Tool == "run_command" {
			off = append(off, o)
		}
	}
	if len(off) != 20 {
		t.Fatalf("%d run_command outputs offloaded, want 20", len(off))
	}
	full, err := h.store.Output(context.Background(), off[0].ExecID)
	if err != nil || len(full) < 30*1024 || !strings.Contains(full, "BUILD-OK-10") {
		t.Fatalf("offloaded output #%d: %d chars, %v", off[0].ExecID, len(full), err)
	}
	reg := tools.NewRegistry(tools.OutputTools(h.store)...)
	res := reg.Execute(context.Background(), chat.ToolCall{Name: "grep_tool_output", Arguments: fmt.Sprintf(`{"id":%d,"pattern":"BUILD-OK"}`, off[0].ExecID)}, tools.Exec{Gate: tools.AllowAll{}})
	if res.IsError || !strings.Contains(res.Output, "BUILD-OK-10") {
		t.Fatalf("grep_tool_output: %s", res.Output)
	}

	t.Logf("200 tool calls: %d model requests, %d summaries, %d anchors; peak context %d tokens (threshold %d)",
		lt.requests, accepted, len(anchors), st.maxCtx, st.thresh)
	t.Logf("prompt chars sent %d vs naive full history %d: %.1fx less (%.3f)", lt.sentTotal, lt.naiveTotal,
		float64(lt.naiveTotal)/float64(lt.sentTotal), float64(lt.sentTotal)/float64(lt.naiveTotal))
}

// PRODUCT §11: a 100-tool-call task (6 KB reads, 15 KB command outputs)
// sends ≤ 1/6 of the naive history's tokens, peak ≤ 45k.
func TestHundredCallTaskBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("long task")
	}
	resetErr := resetPeakRSS()
	base := rssKB(t, "VmRSS")
	st := runLongTask(t, 100, 15, 0)
	if resetErr == nil {
		// The whole test process: the fake server, the real client, SQLite
		// and the tools, all in one.
		t.Logf("process RSS: %d MiB before the task, peak %d MiB during it", base/1024, rssKB(t, "VmHWM")/1024)
	}
	ratio := float64(st.lt.sentTotal) / float64(st.lt.naiveTotal)
	t.Logf("100 calls: sent %d chars (≈%d tokens) vs naive %d (≈%d tokens): ratio %.3f; peak context %d tokens",
		st.lt.sentTotal, st.lt.sentTotal/4, st.lt.naiveTotal, st.lt.naiveTotal/4, ratio, st.maxCtx)
	if ratio > 1.0/6 {
		t.Fatalf("sent %.3f of the naive history, want ≤ 1/6", ratio)
	}
	if st.maxCtx > 45000 {
		t.Fatalf("peak context %d tokens > 45k", st.maxCtx)
	}
}

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
	expected map[int]string           // request index → the live plan it must carry ("" before the first call)
	doneAt   map[int]int              // request index → calls (and items) the model had made when it arrived
	plans    map[int][]tools.PlanStep // request index (summarizer ones too) → the live plan when it arrived
	askedAt  map[int]int              // request index → questions asked (follow-ups answered) before it
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
	if w.plans == nil {
		w.plans = map[int][]tools.PlanStep{}
	}
	w.plans[i] = slices.Clone(w.plan)
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
	w := &planWorker{calls: 23, steps: 4, final: "all parts checked", readArgs: func(n int) string { return fmt.Sprintf(`{"path":"a.txt","limit":%d}`, n) }}
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

// Issue 12 #1: a 300-call task through the real loop and the fake server,
// asserted on what the server received and what is on disk:
//   - every request after the first tool call carries exactly one task
//     block, last, whose plan is the live plan;
//   - after every summary the whole original request (5,700 characters,
//     a marker at its end) and every follow-up given so far are sent;
//   - the summaries, written with bold labels, are accepted as written;
//   - the summarizer requests cover every replaced message (no reply of
//     the model is ever lost: it is in the request or was summarized);
//   - before each summarizer request the checkpoint on disk was rewritten
//     with the state of that moment.
func TestThreeHundredCallTaskOnTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("long task")
	}
	h := newHarness(t)
	h.deps.MaxTurns = 0
	writeSrc(t, h.dir, 40)

	var req strings.Builder
	req.WriteString("Audit every Go file under src/ for error handling. Requirements:\n")
	for i := 1; req.Len() < 5650; i++ {
		fmt.Fprintf(&req, "%d. Check that each returned error in the handlers is wrapped with context using %%w and logged once at the boundary.\n", i)
	}
	req.WriteString("END-OF-REQUEST-MARKER-7731")
	request := req.String()
	followUps := []string{"FOLLOW-UP-ONE: also note every handler that ignores an error entirely.", "FOLLOW-UP-TWO: write the report as a table, one row per file."}

	cp := task.Path(h.deps.StateDir, "default")
	var mu sync.Mutex
	var cpErrs []string
	var sumReqs []int // request index of each summarizer request
	summaries := 0
	var w *planWorker
	w = &planWorker{calls: 300, steps: 6, final: "Audit report written.", pauses: []int{100, 200},
		text:     func(n int) string { return fmt.Sprintf("ITEM-%d ", n) + narrate(1100)(n) },
		readArgs: func(n int) string { return fmt.Sprintf(`{"path":"src/f%02d.go"}`, n%40) },
		onSummary: func(r llmtest.Request) llmtest.Step {
			// w.mu is held: w.done is the count of calls made so far.
			mu.Lock()
			defer mu.Unlock()
			sumReqs = append(sumReqs, w.index-1)
			b, err := os.ReadFile(cp)
			switch {
			case err != nil:
				cpErrs = append(cpErrs, err.Error())
			case !strings.Contains(string(b), "_Written by Polly (summary) at") ||
				!strings.Contains(string(b), fmt.Sprintf("- Tool calls: %d\n", w.done)) ||
				!strings.Contains(string(b), "END-OF-REQUEST-MARKER-7731") ||
				!strings.Contains(string(b), w.planText()):
				cpErrs = append(cpErrs, fmt.Sprintf("summary at call %d: checkpoint on disk is not this moment's:\n%.400s", w.done, b))
			}
			summaries++
			// A stale status on purpose: the check must correct it.
			return llmtest.Text(boldSummary(fmt.Sprintf("audited up to ITEM-%d; STEP-A check part 1 [IN PROGRESS]", w.done)))
		}}
	h.srv.Serve(w.step)

	for i, msg := range append([]string{request}, followUps...) {
		out, err := h.send(context.Background(), msg)
		if err != nil {
			t.Fatalf("send %d: out=%+v err=%v", i, out, err)
		}
	}
	if w.done != 300 {
		t.Fatalf("%d tool calls made", w.done)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(cpErrs) > 0 {
		t.Fatal(cpErrs[0])
	}
	if summaries < 5 {
		t.Fatalf("%d summaries, want ≥ 5", summaries)
	}

	reqs := h.srv.Requests()
	if n := checkBlocks(t, reqs, w); n < 300 {
		t.Fatalf("%d requests checked", n)
	}
	covered := map[int]bool{} // items some summarizer request carried
	peak, afterSummary := 0, 0
	for i, r := range reqs {
		if !checkCovered(t, i, r, w, covered) {
			continue
		}
		peak = max(peak, len(r.Raw)/4)
		all := strings.Builder{}
		for _, m := range r.Messages {
			all.WriteString(m.Content + "\n")
		}
		// Right after a summary the request holds the system prompt, the
		// summary, the last keep_recent_messages (15) kept raw — one more
		// when they would start with a tool result, whose call comes along —
		// and the block.
		if i > 0 && isSummarizer(reqs[i-1]) && strings.HasPrefix(r.Messages[1].Content, "[CONTEXT SUMMARY #") && len(r.Messages)-3 > 16 {
			t.Fatalf("request %d: the summary kept %d messages raw, keep_recent_messages is 15", i, len(r.Messages)-3)
		}
		if len(sumReqs) > 0 && i > sumReqs[0] {
			afterSummary++
			text := all.String()
			if !strings.Contains(text, request) {
				t.Fatalf("request %d after a summary lacks the whole original request", i)
			}
			for k, f := range followUps {
				if w.expectedFollowUps(i) > k && !strings.Contains(text, f) {
					t.Fatalf("request %d after a summary lacks follow-up %d", i, k+1)
				}
			}
			for _, m := range r.Messages {
				if strings.HasPrefix(m.Content, "[CONTEXT SUMMARY #") {
					if !strings.Contains(m.Content, "## COMPLETED SO FAR\naudited up to ITEM-") || strings.Contains(m.Content, "KEY FACTS\n(Heuristic") {
						t.Fatalf("request %d: the bold-label summary was not accepted as written:\n%.500s", i, m.Content)
					}
					// The summarizer wrote STEP-A as in progress: the check
					// keeps the step's name and drops the status.
					if !strings.Contains(m.Content, "STEP-A check part 1") || strings.Contains(m.Content, "[IN PROGRESS]") {
						t.Fatalf("request %d: the summary keeps a status or lost the step:\n%.600s", i, m.Content)
					}
				}
			}
		}
	}
	for _, s := range eventsOf[SummaryFinished](h) {
		if s.Accepted && s.Heuristic {
			t.Fatalf("a summary fell back to the heuristic: %s", s.Why)
		}
	}
	// Issue 27 must show 2: no request — main or summarizer, in any
	// message, text or call arguments — shows a step that was done when it
	// was sent as not done.
	scanned := 0
	for i, r := range reqs {
		if bad := staleStatuses(r, w.plans[i]); bad != "" {
			t.Fatalf("request %d shows a done step as not done: %s", i, bad)
		}
		scanned++
	}
	t.Logf("300 calls: %d requests (%d after the first summary, %d scanned for stale statuses), %d summaries, peak ≈%d tokens", len(reqs), afterSummary, scanned, summaries, peak)
}

var itemRe = regexp.MustCompile(`ITEM-(\d+) `)

// notDone finds a status other than done written beside a step.
var notDone = regexp.MustCompile(`(?i)\[(in[ _-]?progress|todo|pending)\]|"status":\s*"(in_progress|todo)"|\b(IN PROGRESS|TODO)\b`)

// staleStatuses returns a line of r that shows a step done in plan as not
// done: a text line naming the step with another status, or a task_plan
// call whose steps say so; "" when there is none.
func staleStatuses(r llmtest.Request, plan []tools.PlanStep) string {
	var done []string
	for _, s := range plan {
		if s.Status == "done" {
			done = append(done, s.Title)
		}
	}
	check := func(text string) string {
		for _, l := range strings.Split(text, "\n") {
			for _, title := range done {
				if strings.Contains(l, title) && notDone.MatchString(l) && !strings.Contains(l, `"steps":[`) {
					return l
				}
			}
		}
		return ""
	}
	for _, m := range r.Messages {
		if l := check(m.Content); l != "" {
			return l
		}
		for _, tc := range m.ToolCalls {
			var args struct {
				Steps []tools.PlanStep `json:"steps"`
			}
			if tc.Name == "task_plan" && json.Unmarshal([]byte(tc.Args), &args) == nil {
				for _, s := range args.Steps {
					if slices.Contains(done, s.Title) && s.Status != "done" {
						return tc.Args
					}
				}
				continue
			}
			if l := check(tc.Args); l != "" {
				return l
			}
		}
	}
	return ""
}

// checkCovered keeps the invariant "no reply of the model is lost": every
// item the model wrote before request i is in that request, or some
// summarizer request before it carried it. Summarizer requests add to
// covered; it reports whether r is a main request.
func checkCovered(t *testing.T, i int, r llmtest.Request, w *planWorker, covered map[int]bool) bool {
	t.Helper()
	items := func(s string) []int {
		var out []int
		for _, m := range itemRe.FindAllStringSubmatch(s, -1) {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
		return out
	}
	if isSummarizer(r) {
		for _, n := range items(r.LastMessage().Content) {
			covered[n] = true
		}
		return false
	}
	raw := map[int]bool{}
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			for _, n := range items(m.Content) {
				raw[n] = true
			}
		}
	}
	for n := 1; n <= w.itemsBefore(i); n++ {
		if !raw[n] && !covered[n] {
			t.Fatalf("request %d: ITEM-%d is neither sent nor summarized", i, n)
		}
	}
	return true
}

// Issue 12 (summaries): when the replaced messages do not fit one
// summarizer call they are summarized in parts, each part merging the
// summary of the parts before it, and together the parts cover every
// replaced message.
func TestSummaryInPartsCoversEverything(t *testing.T) {
	h := newHarness(t)
	h.deps.MaxTurns = 0
	// A small window: the transcript budget of one summarizer call is
	// ~15k characters, less than what a summary replaces when 90% of the
	// room may fill first.
	h.deps.Model = Model{Name: "small-model", ContextWindow: 12000}
	h.deps.Context = window.Settings{KeepRecent: 4, SummarizeRatio: 0.9}
	writeSrc(t, h.dir, 40)
	parts := 0
	var w *planWorker
	w = &planWorker{calls: 60, steps: 3, final: "done",
		text:     func(n int) string { return fmt.Sprintf("ITEM-%d ", n) + narrate(1950)(n) },
		readArgs: func(n int) string { return fmt.Sprintf(`{"path":"src/f%02d.go","limit":20}`, n%40) },
		onSummary: func(r llmtest.Request) llmtest.Step {
			p := r.LastMessage().Content
			if strings.Contains(p, "— part 2 of ") {
				parts++
				if !strings.Contains(p, "PART-SUMMARY-") {
					return llmtest.Fail{Status: 500, Message: "part 2 did not get the summary of part 1"}
				}
			}
			return llmtest.Text(boldSummary(fmt.Sprintf("PART-SUMMARY-%d", w.index)))
		}}
	h.srv.Serve(w.step)
	if out, err := h.send(context.Background(), "Audit src/ quickly."); err != nil || out.ToolCalls != 60 {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if parts == 0 {
		t.Fatal("no summary needed a second part")
	}
	covered := map[int]bool{}
	for i, r := range h.srv.Requests() {
		checkCovered(t, i, r, w, covered)
	}
	for _, s := range eventsOf[SummaryFinished](h) {
		if s.Heuristic {
			t.Fatalf("heuristic summary: %s", s.Why)
		}
	}
	t.Logf("%d summaries had a second part", parts)
}

// A run's end writes active_task.md; the next task's start closes that
// task with the same checkpoint, and writing it again (an fsync of the
// file and its directory) only changed its time. Asserted on the file the
// model's first request of the next task finds: the same inode as the
// end of the last run — unless another session replaced it meanwhile,
// when the finished task's checkpoint is written again.
func TestNextTaskKeepsTheFinishedCheckpoint(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		t.Run(fmt.Sprintf("replaced=%v", replaced), func(t *testing.T) {
			h := newHarness(t)
			os.WriteFile(filepath.Join(h.dir, "poem.txt"), []byte("leaves\n"), 0o644)
			cp := task.Path(h.deps.StateDir, "default")
			var mu sync.Mutex
			var seen []byte
			var seenInfo os.FileInfo
			h.srv.Serve(func(r llmtest.Request) llmtest.Step {
				last := r.LastTurn()
				if last.Role == "user" && strings.HasPrefix(last.Content, "Now count the lines") {
					mu.Lock()
					seen, _ = os.ReadFile(cp)
					seenInfo, _ = os.Stat(cp)
					mu.Unlock()
				}
				if last.Role == "user" {
					return llmtest.Call("read_file", `{"path":"poem.txt"}`)
				}
				return llmtest.Text("Done.")
			})
			if _, err := h.send(context.Background(), "Read poem.txt and tell me what it says."); err != nil {
				t.Fatal(err)
			}
			before, err := os.Stat(cp)
			if err != nil {
				t.Fatal(err)
			}
			if replaced {
				// Another session's finished task took the file over.
				other := "# Active task — default\n\n_Written by Polly (end) at 2026-11-20T10:00:00Z. Session other, persona default._\n"
				if err := os.WriteFile(cp+".new", []byte(other), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(cp+".new", cp); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := h.send(context.Background(), "Now count the lines of the files in this folder, please."); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if seenInfo == nil {
				t.Fatal("the next task's first request never reached the server")
			}
			if !strings.Contains(string(seen), "Read poem.txt and tell me what it says.") || !strings.Contains(string(seen), "_Written by Polly (end)") {
				t.Fatalf("the finished task's checkpoint is not on disk at the next task's start:\n%s", seen)
			}
			// Replaced, the content check above is the proof (the other
			// session's file did not name this task); the inode can come
			// back, freed by the replacement.
			if !replaced && (!os.SameFile(before, seenInfo) || !seenInfo.ModTime().Equal(before.ModTime())) {
				t.Fatalf("the finished task's checkpoint was written again at the next task's start")
			}
		})
	}
}

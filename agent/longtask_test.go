package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/chat"
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

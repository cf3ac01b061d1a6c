package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/window"
)

func isSummarizer(r llmtest.Request) bool {
	return len(r.Messages) > 0 && strings.Contains(r.Messages[0].Content, "You are compacting")
}

// readLoop scripts n read_file calls of big.txt, then a final answer; the
// summarizer is answered by onSummary.
func readLoop(n int, onSummary func() llmtest.Step) llmtest.Func {
	done := 0
	return func(r llmtest.Request) llmtest.Step {
		if isSummarizer(r) {
			return onSummary()
		}
		if done >= n {
			return llmtest.Text("finished")
		}
		done++
		// Each read starts one line later: the same call with the same
		// result over and over is what the loop detector stops.
		return llmtest.Reply{Text: fmt.Sprintf("Reading part %d.", done), ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":"big.txt","offset":%d}`, done)}}}
	}
}

func writeBig(t *testing.T, dir string, size int) {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "line %d: some content of the big file that the model keeps reading\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Must show (issue 3 #4): a failing summarizer falls back to the heuristic
// summary, built without the model.
func TestSummarizerFailureFallsBackToHeuristic(t *testing.T) {
	h := newHarness(t)
	h.deps.Context = window.Settings{SummarizeAt: 6000, KeepRecent: 4, StaleAfter: 100}
	writeBig(t, h.dir, 5000)
	h.srv.Serve(readLoop(8, func() llmtest.Step { return llmtest.Fail{Status: 500, Message: "summarizer down"} }))
	out, err := h.send(context.Background(), "read big.txt eight times")
	if err != nil || out.Final != "finished" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	sums := eventsOf[SummaryFinished](h)
	if len(sums) == 0 || !sums[0].Accepted || !sums[0].Heuristic || !strings.Contains(sums[0].Why, "summarizer call failed") {
		t.Fatalf("summaries = %+v", sums)
	}
	if !strings.Contains(sums[0].Summary, "## CURRENT TASK\nread big.txt eight times") || !strings.Contains(sums[0].Summary, "read_file ×") {
		t.Fatalf("heuristic summary:\n%s", sums[0].Summary)
	}
	stored, err := h.store.Summaries(context.Background(), h.session.ID(), "default")
	if err != nil || len(stored) == 0 || !stored[0].Heuristic {
		t.Fatalf("stored summaries = %+v, %v", stored, err)
	}
	// The archive file holds the replaced messages.
	if _, err := os.Stat(stored[0].ArchivePath); err != nil {
		t.Fatalf("archive: %v", err)
	}
	// After the summary the model still gets a valid history that starts
	// with the summary and ends with the live task block.
	for _, r := range h.srv.Requests() {
		if isSummarizer(r) {
			continue
		}
		if strings.HasPrefix(r.Messages[1].Content, "[CONTEXT SUMMARY #1") {
			if !llmtest.IsTaskBlock(r.LastMessage()) || len(r.TaskBlocks()) != 1 {
				t.Fatalf("the request after the summary does not end with the one task block: %.80q", r.LastMessage().Content)
			}
			return
		}
	}
	t.Fatal("no request started with the summary")
}

// Must show (issue 3 #4): a summary that would not shrink the context is
// rejected, and the run goes on.
func TestSummaryThatDoesNotShrinkIsRejected(t *testing.T) {
	h := newHarness(t)
	// A tiny threshold: every request wants a summary, but the old part is
	// small, so any real summary is bigger than what it replaces.
	h.deps.Context = window.Settings{SummarizeAt: 50, KeepRecent: 2, StaleAfter: 100}
	// A well-formed summary (all five parts, so the parser accepts it) that
	// is still far larger than the little it replaces.
	huge := "## CURRENT TASK\nRead big.txt.\n\n## COMPLETED SO FAR\n" + strings.Repeat("very long summary text. ", 400) +
		"\n\n## IN PROGRESS / NEXT\nKeep reading.\n\n## KEY FACTS\nbig.txt is tiny.\n\n## BLOCKED / ISSUES\nNone.\n"
	os.WriteFile(filepath.Join(h.dir, "big.txt"), []byte("tiny\n"), 0o644)
	h.srv.Serve(readLoop(3, func() llmtest.Step { return llmtest.Text(huge) }))
	out, err := h.send(context.Background(), "go")
	if err != nil || out.Final != "finished" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	sums := eventsOf[SummaryFinished](h)
	if len(sums) == 0 {
		t.Fatal("no summarization attempted")
	}
	for _, s := range sums {
		if s.Accepted || !strings.Contains(s.Why, "would not shrink") || s.TokensAfter < s.TokensBefore {
			t.Fatalf("summary accepted or wrongly reported: %+v", s)
		}
	}
	if stored, _ := h.store.Summaries(context.Background(), h.session.ID(), "default"); len(stored) != 0 {
		t.Fatalf("a rejected summary was stored: %+v", stored)
	}
}

// Must show (issue 3 #5): a context-length 400 is recovered by cutting old
// outputs, and the retry succeeds.
func TestContextLengthRecoveryRetries(t *testing.T) {
	h := newHarness(t)
	h.deps.Context = window.Settings{StaleAfter: 100}
	writeBig(t, h.dir, 6000)
	reads := 0
	h.srv.Push(llmtest.Repeat(6, func(r llmtest.Request) llmtest.Step {
		reads++
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: `{"path":"big.txt"}`}}}
	})...)
	h.srv.Push(llmtest.Fail{Status: 400, Code: "context_length_exceeded", Message: "maximum context length exceeded"})
	h.srv.Push(llmtest.Text("recovered"))
	out, err := h.send(context.Background(), "read it six times")
	if err != nil || out.Final != "recovered" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	reqs := h.srv.Requests()
	retry := reqs[len(reqs)-1]
	var whole, cut int
	for _, m := range retry.Messages {
		if m.Role != "tool" {
			continue
		}
		if len(m.Content) > 5000 {
			whole++
		} else if strings.Contains(m.Content, "cut to save context") {
			cut++
		}
	}
	if whole != 3 || cut != 3 {
		t.Fatalf("retry kept %d outputs whole and cut %d, want 3 and 3", whole, cut)
	}
	if len(chars2(reqs[len(reqs)-2].Messages)) <= len(chars2(retry.Messages)) {
		t.Fatal("the retry is not smaller than the refused request")
	}
}

func chars2(ms []llmtest.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Content)
	}
	return b.String()
}

// Offloaded outputs survive a restart: a resumed session reads an output
// offloaded before it.
func TestOffloadedOutputSurvivesResume(t *testing.T) {
	h := newHarness(t,
		llmtest.Call("run_command", `{"command":"seq 1 20000"}`),
		llmtest.Text("printed"),
	)
	if _, err := h.send(context.Background(), "print numbers"); err != nil {
		t.Fatal(err)
	}
	off := eventsOf[OutputOffloaded](h)
	if len(off) != 1 || off[0].Chars < 100000 {
		t.Fatalf("offloaded = %+v", off)
	}
	last := h.srv.Last().LastTurn()
	if !strings.HasPrefix(last.Content, fmt.Sprintf("[output #%d: ", off[0].ExecID)) || len(last.Content) > 2500 {
		t.Fatalf("the model saw %d chars: %.120q", len(last.Content), last.Content)
	}

	resumed, err := OpenSession(context.Background(), h.deps, h.record, SessionOptions{ID: h.session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Push(llmtest.Call("grep_tool_output", fmt.Sprintf(`{"id":%d,"pattern":"^19999$"}`, off[0].ExecID)), llmtest.Text("found it"))
	if _, err := resumed.Send(context.Background(), "default", "find 19999 in that output"); err != nil {
		t.Fatal(err)
	}
	got := h.srv.Last().LastTurn()
	if !strings.Contains(got.Content, ": 19999\n") {
		t.Fatalf("after resume: %q", got.Content)
	}
}

// A corrupt archive dir and an unwritable checkpoint dir: the run goes on
// with a visible warning and nothing already stored is lost.
func TestBrokenStateDirWarnsAndGoesOn(t *testing.T) {
	h := newHarness(t)
	h.deps.Context = window.Settings{SummarizeAt: 3000, KeepRecent: 4, StaleAfter: 100}
	writeBig(t, h.dir, 5000)
	os.MkdirAll(h.deps.StateDir, 0o755)
	// Files where directories should be.
	os.WriteFile(filepath.Join(h.deps.StateDir, "archive"), []byte("not a dir"), 0o644)
	os.WriteFile(filepath.Join(h.deps.StateDir, "default"), []byte("not a dir"), 0o644)
	h.srv.Serve(readLoop(6, func() llmtest.Step {
		return llmtest.Text("## CURRENT TASK\nread\n## COMPLETED SO FAR\nread parts\n## IN PROGRESS / NEXT\nmore\n## KEY FACTS\nnone\n## BLOCKED / ISSUES\nnone")
	}))
	out, err := h.send(context.Background(), "read big.txt six times")
	if err != nil || out.Final != "finished" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	all := noticeText(h)
	if !strings.Contains(all, "could not write the task checkpoint") || !strings.Contains(all, "could not archive old messages") {
		t.Fatalf("warnings:\n%s", all)
	}
	if sums := eventsOf[SummaryFinished](h); len(sums) == 0 || !sums[0].Accepted {
		t.Fatalf("the summary did not go through: %+v", sums)
	}
	all2, err := h.store.AllMessages(context.Background(), h.session.ID(), "default")
	if err != nil || len(all2) < 14 {
		t.Fatalf("stored messages = %d, %v", len(all2), err)
	}
}

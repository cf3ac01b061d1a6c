package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"polly/agent/llmtest"
	"polly/memory/window"
	"polly/personas"
	"polly/workspace"
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
			// keep_recent_messages (4) bounds what the summary keeps raw:
			// system, summary, the kept messages, the block.
			if kept := len(r.Messages) - 3; kept > 4 || kept < 1 {
				t.Fatalf("the summary kept %d messages raw, keep_recent_messages is 4", kept)
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

// boldSummary is a summary the way the seeds and many models write it:
// numbered items with bold labels, plus durable facts.
func boldSummary(marker string) string {
	return "Summary of the work:\n1. **CURRENT TASK**: read big.txt several times\n2. **COMPLETED SO FAR**: " + marker +
		"\n3. **IN PROGRESS / NEXT**: keep reading\n4. **KEY FACTS**: big.txt has numbered lines\n5. **BLOCKED / ISSUES**: none\n" +
		"6. **DURABLE FACTS**:\n   - The user wants reports in British English.\n   - The project builds with make, never go build.\n"
}

// Issue 12 #1 (bold labels) and #6: a bold-label summary is accepted as the
// model wrote it (normalised, not replaced by the heuristic), its durable
// facts land in MEMORY.md once although two summaries repeat them, and the
// summarizer call carries its output cap.
func TestBoldLabelSummaryAndDurableFacts(t *testing.T) {
	h := newHarness(t)
	ws, err := workspace.Open(filepath.Join(h.dir, "ws"), fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Facts = ws
	h.deps.Context = window.Settings{SummarizeAt: 6000, KeepRecent: 4, StaleAfter: 100}
	writeBig(t, h.dir, 5000)
	n := 0
	h.srv.Serve(readLoop(12, func() llmtest.Step { n++; return llmtest.Text(boldSummary(fmt.Sprintf("BOLD-MARKER-%d", n))) }))
	if _, err := h.send(context.Background(), "read big.txt twelve times"); err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("%d summaries, want ≥ 2", n)
	}
	seen := 0
	for _, r := range h.srv.Requests() {
		if isSummarizer(r) {
			if r.MaxTokens <= 0 || r.MaxTokens > 8000 {
				t.Fatalf("summarizer max tokens = %d", r.MaxTokens)
			}
			continue
		}
		for _, m := range r.Messages {
			if strings.HasPrefix(m.Content, "[CONTEXT SUMMARY #") {
				if !strings.Contains(m.Content, "## COMPLETED SO FAR\nBOLD-MARKER-") || strings.Contains(m.Content, "Heuristic summary") ||
					strings.Contains(m.Content, "DURABLE FACTS") {
					t.Fatalf("summary sent:\n%s", m.Content)
				}
				seen++
			}
		}
	}
	for _, s := range eventsOf[SummaryFinished](h) {
		if s.Heuristic {
			t.Fatalf("a bold-label summary was replaced by the heuristic: %s", s.Why)
		}
	}
	if seen == 0 {
		t.Fatal("no request carried the summary")
	}
	mem, err := os.ReadFile(filepath.Join(ws.Dir(), workspace.MemoryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, fact := range []string{"- The user wants reports in British English.", "- The project builds with make, never go build."} {
		if c := strings.Count(string(mem), fact); c != 1 {
			t.Fatalf("%q appears %d times in MEMORY.md:\n%s", fact, c, mem)
		}
	}
	if !strings.Contains(string(mem), "## Learned — ") || !strings.Contains(string(mem), "(session "+h.session.ID()+")") {
		t.Fatalf("no dated Learned section with the session id:\n%s", mem)
	}
}

// Bad input: a reply with none of the five parts is rejected with the
// reason in a notice and the heuristic summary is used; learn_facts off
// (no fact store) and an unwritable MEMORY.md only warn.
func TestUnstructuredSummaryRejectedWithNotice(t *testing.T) {
	h := newHarness(t)
	ws, err := workspace.Open(filepath.Join(h.dir, "ws"), fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	// MEMORY.md is a directory: unwritable even for root.
	os.MkdirAll(filepath.Join(ws.Dir(), workspace.MemoryFile), 0o755)
	h.deps.Facts = ws
	h.deps.Context = window.Settings{SummarizeAt: 6000, KeepRecent: 4, StaleAfter: 100}
	writeBig(t, h.dir, 5000)
	calls := 0
	h.srv.Serve(readLoop(10, func() llmtest.Step {
		calls++
		if calls == 1 {
			return llmtest.Text("Sure! I read the file many times and everything is fine, nothing to report really.")
		}
		return llmtest.Text(boldSummary("OK"))
	}))
	out, err := h.send(context.Background(), "read big.txt ten times")
	if err != nil || out.Reason != "completed" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	all := noticeText(h)
	for _, want := range []string{"the summarizer's reply was rejected: the reply has none of the five parts", "using the heuristic summary",
		"could not write durable facts to MEMORY.md"} {
		if !strings.Contains(all, want) {
			t.Fatalf("notices lack %q:\n%s", want, all)
		}
	}
	sums := eventsOf[SummaryFinished](h)
	if len(sums) < 2 || !sums[0].Heuristic || !sums[0].Accepted || sums[1].Heuristic {
		t.Fatalf("summaries: %+v", sums)
	}
}

// Issue 17: the summarizer's instructions, as the fake server received
// them, are the text of memory/summarize/prompts/system.md to the byte, and
// its request is prompts/request.md (its first and last lines around what
// the template fills in).
func TestSummarizerPromptIsTheFile(t *testing.T) {
	b, err := os.ReadFile("../memory/summarize/prompts/system.md")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimRight(string(b), "\n")
	b, err = os.ReadFile("../memory/summarize/prompts/request.md")
	if err != nil {
		t.Fatal(err)
	}
	request := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	first, last := request[0]+"\n", "\n"+request[len(request)-1]
	h := newHarness(t)
	h.deps.Context = window.Settings{SummarizeAt: 6000, KeepRecent: 4, StaleAfter: 100}
	writeBig(t, h.dir, 5000)
	h.srv.Serve(readLoop(6, func() llmtest.Step { return llmtest.Text(boldSummary("FILE-PROMPT")) }))
	if _, err := h.send(context.Background(), "read big.txt six times"); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, r := range h.srv.Requests() {
		if len(r.Messages) > 0 && r.Messages[0].Role == "system" && r.Messages[0].Content == want {
			calls++
			if len(r.Messages) != 2 || !strings.HasPrefix(r.Messages[1].Content, first) || !strings.HasSuffix(r.Messages[1].Content, last) {
				t.Errorf("the summarizer's request is not prompts/request.md: %+v", r.Messages[1:])
			}
		}
	}
	if calls == 0 {
		t.Fatalf("no request carried prompts/system.md as its system message (%d requests)", len(h.srv.Requests()))
	}
}

// writeOutputFile writes a file whose `cat` through run_command gives an
// output of exactly n characters ("exit code: 0\n" + the file), in lines of
// 60 characters with the failing line at the end, where errors land.
func writeOutputFile(t *testing.T, dir string, n int) string {
	t.Helper()
	body := n - len("exit code: 0\n")
	var b strings.Builder
	for i := 0; b.Len() < body; i++ {
		line := fmt.Sprintf("line %05d %s\n", i, strings.Repeat("x", 48))
		if rest := body - b.Len(); len(line) > rest {
			line = strings.Repeat("y", rest-1) + "\n"
		}
		b.WriteString(line)
	}
	name := fmt.Sprintf("out%d.txt", n)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// Issue 19 must show 2: outputs of 1,900 / 2,016 / 2,600 / 30,000
// characters. The offload limit means what the README says: every output
// over 2,000 characters is offloaded, one just above it with a shorter
// preview, never over 60% of the output; tool_executions.preview holds
// exactly what the model saw.
func TestPreviewNeverLargerThanItsOutput(t *testing.T) {
	sizes := []int{1900, 2016, 2600, 30000}
	var steps []llmtest.Step
	h := newHarness(t)
	for _, n := range sizes {
		name := writeOutputFile(t, h.dir, n)
		steps = append(steps, llmtest.Call("run_command", fmt.Sprintf(`{"command":"cat %s"}`, name)))
	}
	steps = append(steps, llmtest.Text("done"))
	h.srv.Push(steps...)
	if _, err := h.send(context.Background(), "show me the four outputs"); err != nil {
		t.Fatal(err)
	}
	reqs := h.srv.Requests()
	execs, err := h.store.ListToolExecutions(context.Background(), h.session.ID(), 0, 10)
	if err != nil || len(execs) != len(sizes) {
		t.Fatalf("executions: %d, %v", len(execs), err)
	}
	for i, n := range sizes {
		got := reqs[i+1].LastTurn()
		if got.Role != "tool" {
			t.Fatalf("request %d ends with %s", i+1, got.Role)
		}
		chars := utf8.RuneCountInString(got.Content)
		offloaded := strings.HasPrefix(got.Content, "[output #")
		t.Logf("output %6d chars → %6d chars in the context (offloaded %v)", n, chars, offloaded)
		if chars > n {
			t.Errorf("output of %d chars became %d chars in the context", n, chars)
		}
		var e = execs[0]
		for _, x := range execs {
			if strings.Contains(x.Arguments, fmt.Sprintf("out%d.txt", n)) {
				e = x
			}
		}
		if e.OutputChars != n {
			t.Fatalf("stored output of %d chars, want %d", e.OutputChars, n)
		}
		if n > 2000 {
			// Past the limit, always offloaded: a shorter preview for an
			// output just above it, never more than 60% of the output.
			if !offloaded || chars > n*6/10 {
				t.Errorf("%d chars: offloaded=%v, %d chars in context", n, offloaded, chars)
			}
			if !strings.Contains(got.Content, "\n[… ") || !strings.Contains(got.Content, "read_tool_output(id=") {
				t.Errorf("%d chars: the preview lacks its note or its omission line: %q", n, trunc(got.Content))
			}
			if e.Preview != got.Content {
				t.Errorf("stored preview differs from what the model saw:\nstored %q\nsent   %q", trunc(e.Preview), trunc(got.Content))
			}
			continue
		}
		if offloaded || got.Content != mustOutput(t, h, e.ID) {
			t.Errorf("%d chars: the model did not get the whole output (offloaded %v)", n, offloaded)
		}
		if e.Preview != "" {
			t.Errorf("%d chars: a preview was stored for an output sent whole", n)
		}
	}
}

func mustOutput(t *testing.T, h *harness, id int64) string {
	t.Helper()
	out, err := h.store.Output(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// mapLimits is a LimitStore in memory.

// limited wraps a scripted model in a provider with a real context limit:
// a request whose body exceeds limit tokens (≈ 4 bytes per token, counted
// on the whole JSON body) is refused the way OpenAI refuses it; the others
// report that count as their prompt tokens.
type limited struct {
	limit int
	inner llmtest.Func

	mu       sync.Mutex
	rejected int
	peak     int
}

func (l *limited) step(r llmtest.Request) llmtest.Step {
	n := len(r.Raw) / 4
	l.mu.Lock()
	if n > l.limit {
		l.rejected++
		l.mu.Unlock()
		return llmtest.Fail{Status: 400, Code: "context_length_exceeded",
			Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", l.limit, n)}
	}
	l.peak = max(l.peak, n)
	l.mu.Unlock()
	st := l.inner(r)
	if rep, ok := st.(llmtest.Reply); ok && rep.Usage == nil {
		rep.Usage = &llmtest.Usage{Prompt: n, Completion: max(1, (len(rep.Text)+40)/4)}
		return rep
	}
	return st
}

// narrate is a model that reports ~chars of findings with every call, so
// the context grows by its own replies, not only by tool outputs.
func narrate(chars int) func(n int) string {
	return func(n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Item %d: findings so far. ", n)
		for b.Len() < chars {
			fmt.Fprintf(&b, "handler%d wraps its error with %%w and returns it to the caller without logging; ", b.Len())
		}
		return b.String()
	}
}

// writeSrc writes n files of ~6 KB under src/.
func writeSrc(t *testing.T, dir string, n int) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	for i := 0; i < n; i++ {
		var b strings.Builder
		for j := 0; b.Len() < 6000; j++ {
			fmt.Fprintf(&b, "func handler%d_%d() error { return fmt.Errorf(\"wrap: %%w\", err) }\n", i, j)
		}
		if err := os.WriteFile(filepath.Join(dir, "src", fmt.Sprintf("f%02d.go", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 12 #3: a provider that accepts 30k tokens behind a configured 128k
// window. The first refusal teaches the limit (stored for the model), the
// budget and thresholds follow it, and a 150-call task gets at most 2
// refusals.
func TestLearnedContextLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("long task")
	}
	h := newHarness(t)
	h.deps.MaxTurns = 0 // the default: no cap (issue 12 #5: a 150-call task finishes)
	h.deps.Model = Model{Name: "local-model", ContextWindow: 128000}
	limits := &memLimits{learned: map[string]int{}}
	h.deps.Limits = limits
	writeSrc(t, h.dir, 40)
	w := &planWorker{calls: 150, steps: 5, final: "audit done", text: narrate(1200),
		readArgs:  func(n int) string { return fmt.Sprintf(`{"path":"src/f%02d.go"}`, n%40) },
		onSummary: func(llmtest.Request) llmtest.Step { return llmtest.Text(boldSummary("audited")) }}
	lim := &limited{limit: 30000, inner: w.step}
	h.srv.Serve(lim.step)
	out, err := h.send(context.Background(), "Audit every file under src/ for error handling.")
	if err != nil || out.Reason != "completed" || out.ToolCalls != 150 {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if n := limits.Limit("", "local-model"); n != 30000 {
		t.Fatalf("stored limit = %d", n)
	}
	sums := 0
	for _, s := range eventsOf[SummaryFinished](h) {
		if s.Accepted {
			sums++
		}
	}
	t.Logf("150 calls at a 30k limit: %d requests, %d rejected, %d summaries, peak %d tokens", h.srv.Calls(), lim.rejected, sums, lim.peak)
	if lim.rejected > 2 || lim.rejected == 0 {
		t.Fatalf("%d requests rejected, want 1–2", lim.rejected)
	}
	st := h.session.agents["default"].Status()
	if st.Threshold > 30000*3/4 {
		t.Fatalf("threshold %d does not follow the learned limit", st.Threshold)
	}
	// A new session starts with the stored limit: no refusal at all.
	h2 := newHarness(t)
	h2.deps.MaxTurns = 0
	h2.deps.Model = Model{Name: "local-model", ContextWindow: 128000}
	h2.deps.Limits = limits
	writeSrc(t, h2.dir, 40)
	w2 := &planWorker{calls: 60, steps: 3, final: "done", text: w.text, readArgs: w.readArgs, onSummary: w.onSummary}
	lim2 := &limited{limit: 30000, inner: w2.step}
	h2.srv.Serve(lim2.step)
	if out, err := h2.send(context.Background(), "Audit src/ again."); err != nil || out.ToolCalls != 60 {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if lim2.rejected != 0 {
		t.Fatalf("%d rejected with the stored limit", lim2.rejected)
	}
}

// Bad input: a learned limit smaller than the system prompt is a clear
// error naming the model and the numbers.
func TestLimitSmallerThanSystemPrompt(t *testing.T) {
	h := newHarness(t)
	h.deps.Model = Model{Name: "tiny-model", ContextWindow: 128000}
	h.srv.Push(llmtest.Fail{Status: 400, Message: "This model's maximum context length is 512 tokens. However, you requested 4000 tokens."})
	_, err := h.send(context.Background(), "hello")
	if err == nil || !strings.Contains(err.Error(), "model tiny-model: the limit its provider stated is 512 tokens") || !strings.Contains(err.Error(), "system prompt and tool schemas alone take") {
		t.Fatalf("err = %v", err)
	}
}

// Issue 12 #4: a 10 MB write_file argument. The call runs with the whole
// value; every later request stays under the hard limit; the session on
// disk resumes (--continue) under it too.
func TestHugeToolArgumentDoesNotRideAlong(t *testing.T) {
	h := newHarness(t)
	h.deps.Model = Model{Name: "gpt-4.1", ContextWindow: 128000}
	content := strings.Repeat("0123456789abcdef", (10<<20)/16)
	args := fmt.Sprintf(`{"path":"huge.txt","content":%q}`, content)
	h.srv.Push(
		llmtest.Reply{Text: "Writing the file.", ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: args}}, ChunkSize: 1 << 20},
		llmtest.Call("read_file", `{"path":"huge.txt","limit":3}`),
		llmtest.Call("run_command", `{"command":"wc -c huge.txt"}`),
		llmtest.Text("written"),
	)
	if out, err := h.send(context.Background(), "write a 10 MB file"); err != nil || out.Final != "written" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if fi, err := os.Stat(filepath.Join(h.dir, "huge.txt")); err != nil || fi.Size() != int64(len(content)) {
		t.Fatalf("huge.txt: %v", err)
	}
	hard := window.Settings{}.WithDefaults().Hard(h.session.agents["default"].budget())
	check := func(reqs []llmtest.Request) {
		t.Helper()
		for i, r := range reqs {
			if n := len(r.Raw) / 4; n > hard {
				t.Fatalf("request %d: ≈%d tokens > hard limit %d", i, n, hard)
			}
		}
	}
	check(h.srv.Requests()[1:])

	resumed, err := OpenSession(context.Background(), h.deps, h.record, SessionOptions{ID: h.session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	before := h.srv.Calls()
	h.srv.Push(llmtest.Text("still here"))
	if out, err := resumed.Send(context.Background(), "default", "continue"); err != nil || out.Final != "still here" {
		t.Fatalf("resume: out=%+v err=%v", out, err)
	}
	check(h.srv.Requests()[before:])
}

// Issue 18: requests reuse the encoded JSON of messages the previous
// request carried (llm.WireCache). What changes in place must still reach
// the wire changed: an output that goes stale and shrinks to its stub at
// the same position, and a conversation replaced by its summary
// (/compact). Asserted on what the fake server received.
func TestChangedMessagesReachTheWire(t *testing.T) {
	h := newHarness(t)
	h.deps.Context = window.Settings{StaleAfter: 4, KeepRecent: 2}
	marker := "WHOLE-OUTPUT-MARKER"
	if err := os.WriteFile(filepath.Join(h.dir, "notes.txt"), []byte(strings.Repeat(marker+" a line of notes\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []llmtest.Step{llmtest.Call("read_file", `{"path":"notes.txt"}`)}
	for i := range 5 {
		name := fmt.Sprintf("small%d.txt", i)
		if err := os.WriteFile(filepath.Join(h.dir, name), []byte("short\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Prose that the summary later replaces.
		steps = append(steps, llmtest.Reply{Text: strings.Repeat("Thinking about what the small files say. ", 40),
			ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":%q}`, name)}}})
	}
	h.srv.Push(append(steps, llmtest.Text("read them all"))...)
	if _, err := h.send(context.Background(), "read notes.txt, then the small files"); err != nil {
		t.Fatal(err)
	}

	// The notes' result: whole in the early requests, its stub later —
	// at the same position, after the same messages.
	var whole, shrunk int
	pos := -1
	for i, r := range h.srv.Requests() {
		for j, m := range r.Messages {
			if m.Role != "tool" || m.ToolCallID != "call_1" {
				continue
			}
			if pos >= 0 && j != pos {
				t.Fatalf("request %d: the notes' result moved from %d to %d; the test wants it in place", i, pos, j)
			}
			pos = j
			switch {
			case strings.Contains(m.Content, marker):
				whole++
				if shrunk > 0 {
					t.Fatalf("request %d: the notes' result is whole again after it had shrunk", i)
				}
			default:
				shrunk++
				if !strings.Contains(m.Content, "read_tool_output") {
					t.Fatalf("request %d: the notes' result is neither whole nor the stub:\n%s", i, m.Content)
				}
			}
		}
	}
	if whole == 0 || shrunk == 0 {
		t.Fatalf("the notes' result went out whole %d times and shrunk %d times; want both", whole, shrunk)
	}

	// /compact replaces the conversation by its summary: the next request
	// carries the summary, not the messages it replaced.
	h.srv.Push(llmtest.Func(func(r llmtest.Request) llmtest.Step {
		if !isSummarizer(r) {
			t.Errorf("want the summarizer's request, got one ending in %q", r.LastMessage().Content)
		}
		return llmtest.Text(boldSummary("COMPACT-MARKER"))
	}), llmtest.Text("carrying on"))
	if ok, err := h.session.Compact(context.Background(), "default"); err != nil || !ok {
		for _, n := range eventsOf[Notice](h) {
			t.Log(n.Text)
		}
		t.Fatalf("Compact = %v, %v", ok, err)
	}
	if _, err := h.send(context.Background(), "continue"); err != nil {
		t.Fatal(err)
	}
	last := h.srv.Last()
	var summary bool
	for _, m := range last.Messages {
		if strings.Contains(m.Content, "COMPACT-MARKER") {
			summary = true
		}
		if m.ToolCallID == "call_1" || m.Content == "read notes.txt, then the small files" {
			t.Fatalf("after /compact the request still carries a replaced message: %+v", m)
		}
	}
	if !summary {
		t.Fatalf("after /compact the request carries no summary: %+v", last.Messages)
	}
}

// memoryPrompt is a workspace prompt: the persona's own prompt after
// memory files of the given size.
type memoryPrompt struct{ memory int }

func (p memoryPrompt) SystemPrompt(per personas.Persona) (string, error) {
	return "# MEMORY\n" + strings.Repeat("- a remembered fact about the project\n", p.memory/37) + "\n" + per.SystemPrompt, nil
}

// Bad input: a window smaller than the fixed prompt. The memory files are
// left out (said once, with the fix) and the task goes on with the
// persona prompt alone; on the wire the system message is that prompt.
func TestWindowSmallerThanTheFixedPrompt(t *testing.T) {
	h := newHarness(t, llmtest.Call("list_dir", `{}`), llmtest.Text("one file"), llmtest.Text("still here"))
	h.deps.Prompts = memoryPrompt{memory: 60000} // ~15k tokens of memory files
	h.deps.Model = Model{Name: "tiny-local", ContextWindow: 12000}
	for _, msg := range []string{"what is here?", "and now?"} {
		if out, err := h.send(context.Background(), msg); err != nil || out.Reason != "completed" {
			t.Fatalf("%s: out=%+v err=%v", msg, out, err)
		}
	}
	persona, _ := h.deps.Personas.Find("default")
	for i, r := range h.srv.Requests() {
		if r.Messages[0].Content != persona.SystemPrompt {
			t.Fatalf("request %d: system message of %d chars, want the persona prompt alone", i, len(r.Messages[0].Content))
		}
	}
	notices := noticeText(h)
	if strings.Count(notices, "sending the persona prompt alone") != 1 || !strings.Contains(notices, `shorter tool list ("tools": [...] under providers.<provider>.models.tiny-local)`) {
		t.Fatalf("notices:\n%s", notices)
	}
	// Nothing lost: both turns are stored.
	stored, err := h.store.Messages(context.Background(), h.session.ID(), "default")
	if err != nil || len(stored) != 6 {
		t.Fatalf("%d messages stored, %v", len(stored), err)
	}
}

// A fixed cost over half the budget is said once, with the fix; a prompt
// that fits comfortably says nothing.
func TestHeavyFixedCostIsToldOnce(t *testing.T) {
	for _, c := range []struct {
		memory int
		warn   bool
	}{{26000, true}, {2000, false}} {
		h := newHarness(t, llmtest.Text("a"), llmtest.Text("b"))
		h.deps.Prompts = memoryPrompt{memory: c.memory}
		h.deps.Model = Model{Name: "local-16k", ContextWindow: 16000}
		for _, msg := range []string{"hi", "again"} {
			if _, err := h.send(context.Background(), msg); err != nil {
				t.Fatal(err)
			}
		}
		n := strings.Count(noticeText(h), "summaries free little and come often")
		if (n == 1) != c.warn || n > 1 {
			t.Fatalf("memory %d: %d notices:\n%s", c.memory, n, noticeText(h))
		}
	}
}

// Bad input (issue 27): the summarizer answers empty, huge or malformed.
// Each is said in a notice; the task goes on to its end, and nothing is
// lost: every reply of the model is in a request or was given to a
// summarizer, and the stored history is valid.
func TestSummarizerBadReplies(t *testing.T) {
	huge := "## CURRENT TASK\nread the file\n## COMPLETED SO FAR\n" + strings.Repeat("- a very long line the model would not stop writing, item after item\n", 8000) +
		"## IN PROGRESS / NEXT\nmore\n## KEY FACTS\nx\n## BLOCKED / ISSUES\nnone\n"
	for _, c := range []struct {
		name, reply, notice string
	}{
		{"empty", "", "the summarizer's reply was rejected: the reply has none of the five parts"},
		{"malformed", "<html><body>502 Bad Gateway</body></html>", "the summarizer's reply was rejected: the reply has none of the five parts"},
		{"huge", huge, "was longer than its cap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.deps.MaxTurns = 0
			h.deps.Context = window.Settings{SummarizeAt: 9000, KeepRecent: 4, StaleAfter: 100}
			writeSrc(t, h.dir, 40)
			w := &planWorker{calls: 24, steps: 3, final: "done",
				text:      func(n int) string { return fmt.Sprintf("ITEM-%d ", n) + narrate(600)(n) },
				readArgs:  func(n int) string { return fmt.Sprintf(`{"path":"src/f%02d.go","limit":40}`, n%40) },
				onSummary: func(llmtest.Request) llmtest.Step { return llmtest.Reply{Text: c.reply, ChunkSize: 4096} }}
			h.srv.Serve(w.step)
			out, err := h.send(context.Background(), "Audit src/ for error handling.")
			if err != nil || out.Reason != "completed" || out.ToolCalls != 24 {
				t.Fatalf("out=%+v err=%v", out, err)
			}
			if !strings.Contains(noticeText(h), c.notice) {
				t.Fatalf("notices lack %q:\n%s", c.notice, noticeText(h))
			}
			accepted := 0
			for _, s := range eventsOf[SummaryFinished](h) {
				if s.Accepted {
					accepted++
					if len(s.Summary) > 4*a(h).summaryCap()+2000 {
						t.Fatalf("a summary of %d chars was kept", len(s.Summary))
					}
				}
			}
			if accepted == 0 {
				t.Fatal("no summary was made: the case proves nothing")
			}
			covered := map[int]bool{}
			for i, r := range h.srv.Requests() {
				checkCovered(t, i, r, w, covered)
			}
			stored, err := h.store.Messages(context.Background(), h.session.ID(), "default")
			if err != nil || window.Validate(stored) != nil {
				t.Fatalf("stored history: %v / %v", err, window.Validate(stored))
			}
		})
	}
}

// a is the session's default agent.
func a(h *harness) *Agent { return h.session.agents["default"] }

package agent

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/task"
	"polly/memory/window"
)

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
					// The summarizer wrote STEP-A as in progress; once it is done
					// the check corrects the status to the live one.
					var upTo int
					fmt.Sscanf(m.Content[strings.Index(m.Content, "audited up to ITEM-")+len("audited up to ITEM-"):], "%d", &upTo)
					if upTo > 60 && !strings.Contains(m.Content, "STEP-A check part 1 [DONE]") {
						t.Fatalf("request %d: the summary at call %d keeps a stale status:\n%.600s", i, upTo, m.Content)
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
	t.Logf("300 calls: %d requests (%d after the first summary), %d summaries, peak ≈%d tokens", len(reqs), afterSummary, summaries, peak)
}

var itemRe = regexp.MustCompile(`ITEM-(\d+) `)

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
	// ~15k characters, less than what a summary replaces.
	h.deps.Model = Model{Name: "small-model", ContextWindow: 12000}
	h.deps.Context = window.Settings{KeepRecent: 4}
	writeSrc(t, h.dir, 40)
	parts := 0
	var w *planWorker
	w = &planWorker{calls: 60, steps: 3, final: "done",
		text:     func(n int) string { return fmt.Sprintf("ITEM-%d ", n) + narrate(1500)(n) },
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

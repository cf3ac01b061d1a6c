package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"polly/agent/llmtest"
	"polly/memory/window"
	"polly/workspace"
)

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

package summarize

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"polly/memory/chat"
	"polly/memory/task"
)

// Issue 27 #2: the check completes a summary from the task state — the
// request, every follow-up, every plan step by name, the files — and
// removes every plan status: the summary stays in the context while the
// plan moves on, and the task block carries the live statuses.
func TestCheckCompletesButCarriesNoStatus(t *testing.T) {
	st := &task.State{OriginalRequest: "split the parser", Files: []string{"parser.go", "lexer.go"}, FilesRead: []string{"README.md"},
		FollowUps: []string{"keep the old API", "also add a benchmark"}}
	st.SetPlan([]task.Step{{Title: "Read parser.go", Status: task.Done}, {Title: "Move the lexer", Status: task.Done}, {Title: "Run tests", Status: task.Todo}})
	summary := "## CURRENT TASK\nsplit the parser; keep the old API\n## COMPLETED SO FAR\n- [DONE] Read parser.go; touched parser.go\n" +
		"## IN PROGRESS / NEXT\n- [IN PROGRESS] Move the lexer\n- Move the lexer: IN PROGRESS\n## KEY FACTS\n- found 3 TODO comments in parser.go\n- the tokenizer is done ✅\n"
	got, added := Check(summary, st)
	for _, want := range []string{"## BLOCKED / ISSUES\n(not stated", "- Read parser.go; touched parser.go", "- Move the lexer\n- Move the lexer\n",
		"- found 3 TODO comments in parser.go", "- the tokenizer is done\n",
		"Plan steps (from the task state; their live statuses are in the task block): 3. Run tests",
		"Files written (from the task state): lexer.go", "Files read (from the task state): README.md", "Follow-up 2 from the user: also add a benchmark"} {
		if !strings.Contains(got, want) {
			t.Errorf("checked summary lacks %q:\n%s", want, got)
		}
	}
	for _, stale := range []string{"[DONE]", "[IN PROGRESS]", "[TODO]", "lexer: IN PROGRESS", "✅", "Follow-up 1", "Read parser.go;\n"} {
		if strings.Contains(got, stale) {
			t.Errorf("checked summary keeps %q:\n%s", stale, got)
		}
	}
	want := []string{"section BLOCKED / ISSUES", "4 plan status(es) removed", "follow-up 2", "step 3. Run tests", "file lexer.go", "file README.md"}
	if strings.Join(added, "|") != strings.Join(want, "|") {
		t.Fatalf("added = %q\nwant    %q", added, want)
	}
	// A checked summary passes the check unchanged.
	again, added := Check(got, st)
	if len(added) != 0 || again != got {
		t.Fatalf("second check added %q", added)
	}
}

// Summaries as real models write them: headings, bold labels, numbered
// bold items, plain capitals with colons — all accepted and normalised.
func TestParseCommonForms(t *testing.T) {
	forms := map[string]string{
		"headings":          "## CURRENT TASK\nT\n## COMPLETED SO FAR\nC\n## IN PROGRESS / NEXT\nN\n## KEY FACTS\nK\n## BLOCKED / ISSUES\nnone\n## DURABLE FACTS\n- The user prefers tabs.",
		"bold labels":       "**Current Task:** T\n\n**Completed so far:** C\n\n**In progress / next:** N\n\n**Key facts:** K\n\n**Blocked / issues:** none\n\n**Durable facts:**\n- The user prefers tabs.",
		"numbered bold":     "Here is the summary.\n1. **CURRENT TASK**: T\n2. **COMPLETED SO FAR**: C\n3. **IN PROGRESS-NEXT**: N\n4. **KEY FACTS**: K\n5. **BLOCKED-ISSUES**: none\n6. **DURABLE FACTS**:\n   - The user prefers tabs.",
		"numbered headings": "### 1. Current task\nT\n### 2. Completed\nC\n### 3. Next steps\nN\n### 4. Key facts\nK\n### 5. Blockers\nnone\n### 6. Durable facts\n* The user prefers tabs.",
		"capitals":          "CURRENT TASK: T\nCOMPLETED SO FAR: C\nIN PROGRESS / NEXT: N\nKEY FACTS: K\nBLOCKED / ISSUES: none\nDURABLE FACTS:\n- The user prefers tabs.",
	}
	for name, reply := range forms {
		p, err := Parse(reply)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := "## CURRENT TASK\nT\n\n## COMPLETED SO FAR\nC\n\n## IN PROGRESS / NEXT\nN\n\n## KEY FACTS\nK\n\n## BLOCKED / ISSUES\nnone\n"
		if got := p.Text(); got != want {
			t.Errorf("%s: normalised to\n%s", name, got)
		}
		if len(p.Facts) != 1 || p.Facts[0] != "The user prefers tabs." {
			t.Errorf("%s: facts %q", name, p.Facts)
		}
	}
	// Items that merely start like a label are not parts.
	p, err := Parse("## CURRENT TASK\nT\n## COMPLETED SO FAR\n1. Completed the parser\n- in progress with tests\nCompleted so far we have nothing else")
	if err != nil || !strings.Contains(p.Sections["COMPLETED SO FAR"], "1. Completed the parser\n- in progress with tests\nCompleted so far we") {
		t.Fatalf("items split the part: %v %q", err, p.Sections)
	}
}

func TestParseRejectsUnstructuredReplies(t *testing.T) {
	for reply, why := range map[string]string{
		"":                                 "none of the five parts",
		"I could not summarize this.":      "none of the five parts",
		strings.Repeat("words ", 40):       "none of the five parts",
		"## KEY FACTS\nonly one part here": "only KEY FACTS",
	} {
		if _, err := Parse(reply); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("Parse(%.30q) = %v, want %q", reply, err, why)
		}
	}
}

func TestCapKeepsEveryPart(t *testing.T) {
	p, _ := Parse("## CURRENT TASK\n" + strings.Repeat("task line\n", 2000) + "## COMPLETED SO FAR\ndone\n## KEY FACTS\n" + strings.Repeat("fact\n", 5000))
	c, cut := p.Cap(4000)
	if !cut || len(c.Text()) > 5200 || c.Sections["COMPLETED SO FAR"] != "done" || !strings.Contains(c.Sections["KEY FACTS"], "cut by the harness") {
		t.Fatalf("cut=%v len=%d %q", cut, len(c.Text()), c.Sections["COMPLETED SO FAR"])
	}
}

// Every replaced message lands in exactly one part, in order, and no part
// splits a tool call from its results.
func TestSplitCoversEveryMessage(t *testing.T) {
	var ms []chat.Message
	for i := 0; i < 300; i++ {
		ms = append(ms, chat.Message{Role: chat.Assistant, Content: fmt.Sprintf("ITEM-%d", i), ToolCalls: []chat.ToolCall{{ID: fmt.Sprint(i), Name: "read_file"}}},
			chat.Message{Role: chat.Tool, ToolCallID: fmt.Sprint(i), ToolName: "read_file", Content: strings.Repeat("data ", 200)})
	}
	parts := Split(ms, 20000)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	n := 0
	for _, p := range parts {
		if p[0].Role == chat.Tool {
			t.Fatal("a part starts with a tool result")
		}
		tr := Transcript(p, 20000)
		if strings.Contains(tr, "omitted") {
			t.Fatal("a part's transcript dropped messages")
		}
		for _, m := range p {
			if m.Role == chat.Assistant {
				if !strings.Contains(tr, fmt.Sprintf("ITEM-%d\n", n)) {
					t.Fatalf("ITEM-%d missing", n)
				}
				n++
			}
		}
	}
	if n != 300 {
		t.Fatalf("%d of 300 messages covered", n)
	}
}

func TestPromptMergesPreviousAndTranscriptIsBounded(t *testing.T) {
	var ms []chat.Message
	for i := 0; i < 400; i++ {
		ms = append(ms, chat.Message{Role: chat.Tool, ToolName: "read_file", Content: strings.Repeat("data ", 400)})
	}
	in := Input{Task: &task.State{OriginalRequest: "x"}, Checkpoint: "# Active task", Previous: "PREVIOUS-SUMMARY", Messages: ms, MaxChars: 20000}
	p := Prompt(in)
	if len(p) != 2 || !strings.Contains(p[0].Content, "MERGE") || !strings.Contains(p[1].Content, "PREVIOUS-SUMMARY") {
		t.Fatal("prompt lacks the merge instruction or the previous summary")
	}
	if n := len(p[1].Content); n > 25000 {
		t.Fatalf("prompt is %d chars for a 20,000-char budget", n)
	}
	if !strings.Contains(p[1].Content, "messages omitted") {
		t.Fatal("no omission marker")
	}
}

func TestHeuristicSummaryFromTheRecord(t *testing.T) {
	st := &task.State{OriginalRequest: "fix the build", ToolCalls: 3, Files: []string{"main.go"}}
	ms := []chat.Message{
		{Role: chat.Assistant, Content: "Running the build.", ToolCalls: []chat.ToolCall{{ID: "1", Name: "run_command", Arguments: `{"command":"go build ./..."}`}}},
		{Role: chat.Tool, ToolCallID: "1", ToolName: "run_command", Content: "error: exit code: 1\nmain.go:3: undefined: x", Output: &chat.Output{Failed: true}},
	}
	st.SetPlan([]task.Step{{Title: "build", Status: task.Done}, {Title: "fix", Status: task.InProgress}})
	h := Heuristic(Input{Task: st, Messages: ms})
	for _, want := range []string{"## CURRENT TASK\nfix the build", "run_command ×1", "Ran: go build ./... → failed", "Files touched: main.go",
		"## BLOCKED / ISSUES\n- run_command command=go build ./...: exit code: 1", "Plan steps (statuses in the task block): 1. build; 2. fix"} {
		if !strings.Contains(h, want) {
			t.Errorf("heuristic summary lacks %q:\n%s", want, h)
		}
	}
	if p, err := Parse(h); err != nil || len(p.Sections) != 5 {
		t.Fatalf("the heuristic summary does not parse: %v", err)
	}
}

func TestArchive(t *testing.T) {
	dir := t.TempDir()
	path, err := Archive(dir, "coder#2", "s1", []chat.Message{chat.UserText("hi")}, time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, "coder_2_20261125T100000.000Z.json") {
		t.Fatalf("path = %s", path)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"content": "hi"`) {
		t.Fatalf("archive = %s", b)
	}
}

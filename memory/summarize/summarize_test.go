package summarize

import (
	"os"
	"strings"
	"testing"
	"time"

	"polly/memory/chat"
	"polly/memory/task"
)

func TestCheckAddsWhatTheSummaryDropped(t *testing.T) {
	st := &task.State{OriginalRequest: "split the parser", Files: []string{"parser.go", "lexer.go"}}
	st.SetPlan([]task.Step{{Title: "Read parser.go", Status: task.Done}, {Title: "Move the lexer", Status: task.InProgress}, {Title: "Run tests", Status: task.Todo}})
	summary := "## CURRENT TASK\nsplit the parser\n## COMPLETED SO FAR\nRead parser.go; touched parser.go\n## IN PROGRESS / NEXT\nmove\n## KEY FACTS\nx\n"
	got, added := Check(summary, st)
	for _, want := range []string{"## BLOCKED / ISSUES", "## ADDED BY THE HARNESS", "2. [IN PROGRESS] Move the lexer", "3. [TODO] Run tests", "- lexer.go"} {
		if !strings.Contains(got, want) {
			t.Errorf("checked summary lacks %q", want)
		}
	}
	if strings.Contains(got, "1. [DONE] Read parser.go") || strings.Contains(got, "- parser.go\n") {
		t.Error("added what was already there")
	}
	if len(added) != 4 { // section, two steps, one file
		t.Fatalf("added = %q", added)
	}
	// A complete summary is left alone.
	full := got
	again, added := Check(full, st)
	if len(added) != 0 || again != full {
		t.Fatalf("second check added %q", added)
	}
}

func TestUsable(t *testing.T) {
	if Usable("") || Usable("ok") || Usable(strings.Repeat("words ", 40)) {
		t.Fatal("unstructured text accepted")
	}
	if !Usable("## CURRENT TASK\nsomething long enough to count as a summary here\n## COMPLETED SO FAR\nmore words here") {
		t.Fatal("structured summary refused")
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
	h := Heuristic(Input{Task: st, Messages: ms})
	for _, want := range []string{"## CURRENT TASK\nfix the build", "run_command ×1", "Ran: go build ./... → failed", "Files touched: main.go", "## BLOCKED / ISSUES\n- run_command command=go build ./...: exit code: 1"} {
		if !strings.Contains(h, want) {
			t.Errorf("heuristic summary lacks %q:\n%s", want, h)
		}
	}
	if !Usable(h) {
		t.Fatal("the heuristic summary is not usable")
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

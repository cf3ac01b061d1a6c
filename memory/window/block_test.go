package window

import (
	"os"
	"strings"
	"testing"

	"polly/memory/task"
)

// Issue 17: the task block is prompts/task_block.md filled in: every line
// of the file without a template action stands in the block of a task that
// has everything, and nothing of the template syntax is left.
func TestTaskBlockIsTheFile(t *testing.T) {
	b, err := os.ReadFile("prompts/task_block.md")
	if err != nil {
		t.Fatal(err)
	}
	st := &task.State{OriginalRequest: "audit the errors", FollowUps: []string{"also the tests"}, Understanding: "read, check, report",
		Plan: []task.Step{{Title: "read", Status: task.Done}, {Title: "check", Status: task.InProgress}}, FilesRead: []string{"a.go"},
		Files: []string{"report.md"}, ToolCalls: 12, Checkpoint: "/p/.agent/default/active_task.md"}
	block := TaskBlock(st, Settings{}).Content
	if strings.Contains(block, "{{") || !strings.HasPrefix(block, BlockHeader) {
		t.Fatalf("block:\n%s", block)
	}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" && !strings.Contains(line, "{{") && !strings.Contains(block, line) {
			t.Errorf("the block lacks the file's line %q:\n%s", line, block)
		}
	}
	for _, want := range []string{"Follow-up 1 from the user:\nalso the tests", "Current step: 2. check", "Files read: a.go", "Files written: report.md",
		"Tool calls so far: 12. Latest checkpoint: /p/.agent/default/active_task.md. Stay focused."} {
		if !strings.Contains(block, want) {
			t.Errorf("the block lacks %q:\n%s", want, block)
		}
	}
}

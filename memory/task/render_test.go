package task

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Issue 17: active_task.md is prompts/checkpoint.md filled in: every line
// of the file without a template action stands in the checkpoint of a task
// that has everything, and nothing of the template syntax is left.
func TestCheckpointIsTheFile(t *testing.T) {
	b, err := os.ReadFile("prompts/checkpoint.md")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	st := &State{OriginalRequest: "audit the errors", FollowUps: []string{"also the tests"}, Understanding: "read, check",
		Plan: []Step{{Title: "read", Status: Done}}, Recent: []Action{{At: now, OK: true, Tool: "read_file", Brief: "a.go"}},
		Files: []string{"report.md"}, FilesRead: []string{"a.go"}, StartedAt: now, ToolCalls: 3}
	got := Render(st, Checkpoint{AgentID: "default", Persona: "Polly", Session: "s1", Reason: "periodic", SavedAt: now})
	if strings.Contains(got, "{{") {
		t.Fatalf("checkpoint:\n%s", got)
	}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" && !strings.Contains(line, "{{") && !strings.Contains(got, line) {
			t.Errorf("the checkpoint lacks the file's line %q:\n%s", line, got)
		}
	}
	for _, want := range []string{"# Active task — default", "1.\n> also the tests", "- report.md (written)\n- a.go (read)", "- Started: 2026-11-26T05:00:00Z"} {
		if !strings.Contains(got, want) {
			t.Errorf("the checkpoint lacks %q:\n%s", want, got)
		}
	}
}

package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/agent/llmtest"
)

// Issue 19 must show 3, through the real loop: a "hello" run and a run
// that only looked things up write no daily-log entry; a real task writes
// at most two lines; the next request carries the log's summary line, not
// its detail.
func TestQuietDailyLog(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Text("Hello! What shall we work on?"),
		llmtest.Call("read_file", `{"path":"go.mod"}`),
		llmtest.Text("It is module demo."),
		llmtest.Call("write_file", `{"path":"notes/todo.txt","content":"ship it\n"}`),
		llmtest.Call("run_command", `{"command":"cat notes/todo.txt"}`),
		llmtest.Text("Wrote notes/todo.txt with the plan.\n\nIt holds one line: ship it. I checked it with cat."),
		llmtest.Text("hi again"),
	)
	a, sess, project := wired(t, srv, "yolo")
	os.WriteFile(filepath.Join(project, "go.mod"), []byte("module demo\n"), 0o644)
	logPath := filepath.Join(a.Workspace.Dir(), "memory", time.Now().Format(time.DateOnly)+".md")
	ctx := context.Background()

	for _, prompt := range []string{"hello", "what module is this?"} {
		if _, err := sess.Send(ctx, "default", prompt); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(logPath); err == nil {
			t.Fatalf("%q wrote a daily-log entry:\n%s", prompt, b)
		}
	}
	if _, err := sess.Send(ctx, "default", "write our plan to notes/todo.txt and check it"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	entry := strings.TrimPrefix(string(b), "# "+time.Now().Format(time.DateOnly)+"\n\n")
	if n := strings.Count(entry, "\n"); n < 1 || n > 2 {
		t.Fatalf("the task wrote %d lines:\n%s", n, b)
	}
	for _, want := range []string{"Polly: write our plan to notes/todo.txt and check it → completed: Wrote notes/todo.txt with the plan.", "files: notes/todo.txt", "2 tool calls"} {
		if !strings.Contains(entry, want) {
			t.Errorf("entry lacks %q:\n%s", want, entry)
		}
	}
	if strings.Contains(entry, "ship it") {
		t.Errorf("entry carries the answer's detail:\n%s", entry)
	}

	// The next request's system prompt carries the summary line, not the detail line.
	if _, err := sess.Send(ctx, "default", "thanks"); err != nil {
		t.Fatal(err)
	}
	sys := srv.Last().Messages[0].Content
	summary, detail, _ := strings.Cut(strings.TrimSpace(entry), "\n")
	if !strings.Contains(sys, summary) || strings.Contains(sys, strings.TrimSpace(detail)) {
		t.Errorf("prompt log part wrong; want %q without %q:\n%s", summary, detail, sys[strings.Index(sys, "# Daily log"):])
	}
}

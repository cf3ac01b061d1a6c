package app

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/tools"
	"polly/workspace"
)

// Issue 19: Polly runs the retention pass in the background at most once
// a day (a marker in .agent/), never on the session being opened.
func TestDailyRetentionPass(t *testing.T) {
	srv := llmtest.NewServer(t)
	project, home := t.TempDir(), t.TempDir()
	ws := filepath.Join(home, "ws")
	cfg, err := config.Load(config.LoadOptions{ProjectDir: project, Home: home, Flags: config.Flags{Workspace: &ws}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// run opens Polly, runs one session (resuming id when given), closes it.
	run := func(id string) string {
		t.Helper()
		srv.Push(llmtest.Text("hi"))
		a, err := Open(ctx, Options{Config: cfg, ProjectDir: project, Template: os.DirFS("../../.agent-template"), LLM: llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k"})})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		s, err := a.Session(ctx, func(agent.Event) {}, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Send(ctx, "default", "hello"); err != nil {
			t.Fatal(err)
		}
		return s.ID()
	}
	db, err := sql.Open("sqlite", filepath.Join(project, ".agent", "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	age := func(id string, d time.Duration) {
		if _, err := db.Exec(`UPDATE sessions SET updated_at = ? WHERE id = ?`, time.Now().Add(-d).UnixMilli(), id); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(id string) bool {
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM sessions WHERE id = ?`, id).Scan(&n)
		return n == 1
	}
	marker := filepath.Join(project, ".agent", gcMarker)

	old := run("")
	if b, err := os.ReadFile(marker); err != nil || !strings.Contains(string(b), "nothing removed") {
		t.Fatalf("first start: marker %q, %v", b, err)
	}
	age(old, 100*24*time.Hour)
	run("") // within a day of the last pass: no pass, the old session stays
	if !exists(old) {
		t.Fatal("a second pass ran within a day")
	}

	os.WriteFile(marker, []byte(time.Now().Add(-25*time.Hour).UTC().Format(time.RFC3339)+" …\n"), 0o644)
	current := run("")
	if exists(old) || !exists(current) {
		t.Fatalf("after a day: old session kept %v, current kept %v", exists(old), exists(current))
	}
	if b, _ := os.ReadFile(marker); !strings.Contains(string(b), "removed 1 sessions") {
		t.Fatalf("marker after the pass: %q", b)
	}

	// The session being resumed is never removed, however old.
	age(current, 200*24*time.Hour)
	run("") // a newer latest session
	age(current, 200*24*time.Hour)
	os.WriteFile(marker, []byte(time.Now().Add(-25*time.Hour).UTC().Format(time.RFC3339)+"\n"), 0o644)
	run(current)
	if !exists(current) {
		t.Fatal("the resumed session was removed")
	}
}

// Issue 19 must show 1, through the real loop and the fake server: a
// failure on a.txt followed by a success on b.txt pairs nothing (the next
// missing file gets no fix); a failure and a success on the same target
// are paired, and the fix comes back only on a failure with the same
// signature from the same kind of call.
func TestLearningsPairOnlyTheSameOperation(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("read_file", `{"path":"a.txt"}`),                  // 1 fails: missing
		llmtest.Call("read_file", `{"path":"b.txt"}`),                  // 2 succeeds: another target
		llmtest.Call("read_file", `{"path":"c.txt"}`),                  // 3 fails: nothing was learned
		llmtest.Call("write_file", `{"path":"a.txt","content":"A\n"}`), // 4
		llmtest.Call("read_file", `{"path":"./a.txt"}`),                // 5 succeeds: same target → paired
		llmtest.Call("read_file", `{"path":"d.txt"}`),                  // 6 fails the same way → known fix
		llmtest.Call("read_file", `{"path":"."}`),                      // 7 fails another way → none
		llmtest.Call("list_dir", `{"path":"nodir"}`),                   // 8 another kind of call → none
		llmtest.Text("done"),
	)
	a, sess, project := wired(t, srv, "yolo")
	if err := os.WriteFile(filepath.Join(project, "b.txt"), []byte("B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errorsPath := filepath.Join(a.Workspace.Dir(), ".learnings", "ERRORS.md")
	before, _ := os.ReadFile(errorsPath)
	if _, err := sess.Send(context.Background(), "default", "read the files"); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	result := func(step int) string { // the tool result of step, as the server received it
		t.Helper()
		m := reqs[step].LastTurn()
		if m.Role != "tool" {
			t.Fatalf("request %d ends with a %s message", step, m.Role)
		}
		return m.Content
	}
	for _, step := range []int{1, 3, 7, 8} {
		if got := result(step); strings.Contains(got, "ERRORS.md") {
			t.Errorf("step %d got a fix it should not: %q", step, got)
		}
	}
	// The fix comes back as the model's own earlier note, quoted in an
	// envelope, never as a line of the harness (issue 25).
	got := result(6)
	src, note, ok := tools.OpenEnvelope(got)
	if !ok || src != "your earlier note in .learnings/ERRORS.md (unverified)" || !strings.Contains(note, "succeeded after: write_file path=a.txt") {
		t.Fatalf("the same failure on the same kind of call got no fix: %q", got)
	}
	if strings.Contains(note, "b.txt") {
		t.Fatalf("the fix names the unrelated success: %q", got)
	}

	after, _ := os.ReadFile(errorsPath)
	added := strings.TrimPrefix(string(after), string(before))
	if n := strings.Count(added, "\n## "); n != 1 {
		t.Fatalf("ERRORS.md got %d entries, want 1:\n%s", n, added)
	}
	added = workspace.StripProvenance(added)
	for _, want := range []string{"- **Tool:** read_file\n", "- **Call:** read_file path=a.txt\n", "- **Signature:** read_file: file _ does not exist\n",
		"- **Fix:** the same read_file call succeeded after: write_file path=a.txt\n"} {
		if !strings.Contains(added, want) {
			t.Errorf("ERRORS.md entry lacks %q:\n%s", want, added)
		}
	}
}

// LEARNINGS.md is read back: an insight the model logs in one run is in
// the system prompt the server receives on the next.
func TestLearningComesBackInThePrompt(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("workspace_log_learning", `{"insight":"Run make generate before go test in this repo."}`),
		llmtest.Text("Noted."),
		llmtest.Text("Hi."),
	)
	_, sess, _ := wired(t, srv, "auto-edit") // headless ask would deny the write
	ctx := context.Background()
	if _, err := sess.Send(ctx, "default", "remember that tests need make generate"); err != nil {
		t.Fatal(err)
	}
	if sys := srv.Requests()[0].Messages[0].Content; strings.Contains(sys, "make generate") {
		t.Fatal("the insight was in the prompt before it was logged")
	}
	if _, err := sess.Send(ctx, "default", "hello"); err != nil {
		t.Fatal(err)
	}
	sys := srv.Last().Messages[0].Content
	if !strings.Contains(sys, "# Learnings (") || !strings.Contains(sys, "\n- Run make generate before go test in this repo.\n") {
		t.Fatalf("the learning is not in the next prompt:\n%s", sys)
	}
}

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
	summary, detail, _ := strings.Cut(strings.TrimSpace(workspace.StripProvenance(entry)), "\n")
	// The log is shared by every project: the entry carries this one's
	// tag, and the prompt (this project's entries only) shows it without.
	tag := " [" + workspace.ProjectTag(a.ProjectDir) + "]"
	if !strings.Contains(summary, tag) {
		t.Fatalf("the entry has no project tag %q: %q", tag, summary)
	}
	summary = strings.Replace(summary, tag, "", 1)
	if !strings.Contains(sys, summary) || strings.Contains(sys, strings.TrimSpace(detail)) {
		t.Errorf("prompt log part wrong; want %q without %q:\n%s", summary, detail, sys[strings.Index(sys, "# Daily log"):])
	}
}

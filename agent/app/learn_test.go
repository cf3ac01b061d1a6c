package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

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
		if got := result(step); strings.Contains(got, "[known fix") {
			t.Errorf("step %d got a fix it should not: %q", step, got)
		}
	}
	got := result(6)
	if !strings.Contains(got, "[known fix from .learnings/ERRORS.md") || !strings.Contains(got, "succeeded after: write_file path=a.txt") {
		t.Fatalf("the same failure on the same kind of call got no fix: %q", got)
	}
	if _, fix, _ := strings.Cut(got, "[known fix"); strings.Contains(fix, "b.txt") {
		t.Fatalf("the fix names the unrelated success: %q", got)
	}

	after, _ := os.ReadFile(errorsPath)
	added := strings.TrimPrefix(string(after), string(before))
	if n := strings.Count(added, "\n## "); n != 1 {
		t.Fatalf("ERRORS.md got %d entries, want 1:\n%s", n, added)
	}
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
	_, sess, _ := wired(t, srv, "ask")
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

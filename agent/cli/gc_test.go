package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/store"
)

func dbBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, f := range []string{"polly.db", "polly.db-wal"} {
		if fi, err := os.Stat(filepath.Join(dir, ".agent", f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// Issue 19 must show 5: `polly gc --older-than 0` on a project with 20
// finished sessions keeps only the latest, frees space, and `polly
// sessions` agrees; --dry-run changes nothing.
func TestGCCommand(t *testing.T) {
	var steps []llmtest.Step
	for range 20 {
		steps = append(steps, llmtest.Call("run_command", `{"command":"seq 1 20000"}`), llmtest.Text("counted"))
	}
	srv := llmtest.NewServer(t, steps...)
	env, polly := cliEnv(t, srv.URL(), nil)
	for i := range 20 {
		if r := polly("-p", "count to twenty thousand", "--yolo"); r.code != 0 {
			t.Fatalf("run %d: code=%d stderr=%q", i, r.code, r.stderr)
		}
	}
	sessions := polly("sessions")
	if n := strings.Count(sessions.stdout, "count to twenty thousand"); n != 20 {
		t.Fatalf("%d sessions listed:\n%s", n, sessions.stdout)
	}
	latest := strings.Fields(strings.Split(sessions.stdout, "\n")[1])[0]

	dry := polly("gc", "--older-than", "0", "--dry-run")
	if dry.code != 0 || !strings.Contains(dry.stdout, "would remove 19 sessions") || !strings.Contains(dry.stdout, "dry run: nothing was changed") {
		t.Fatalf("dry run: code=%d\n%s%s", dry.code, dry.stdout, dry.stderr)
	}
	if again := polly("sessions"); again.stdout != sessions.stdout {
		t.Fatalf("dry run changed the sessions:\n%s", again.stdout)
	}

	before := dbBytes(t, env.Dir)
	r := polly("gc", "--older-than", "0")
	after := dbBytes(t, env.Dir)
	t.Logf("polly gc --older-than 0:\n%s.agent/polly.db + WAL: %d → %d bytes", r.stdout, before, after)
	if r.code != 0 || !strings.Contains(r.stdout, "removed 19 sessions") || !strings.Contains(r.stdout, "kept the latest session "+latest) ||
		!strings.Contains(r.stdout, "freed ") {
		t.Fatalf("gc: code=%d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after*4 > before {
		t.Fatalf("database %d → %d bytes: not much freed", before, after)
	}
	list := polly("sessions")
	if n := strings.Count(list.stdout, "count to twenty thousand"); n != 1 || !strings.Contains(list.stdout, latest) {
		t.Fatalf("polly sessions after gc:\n%s", list.stdout)
	}
	st, err := store.Open(filepath.Join(env.Dir, ".agent", "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if bad, err := st.IntegrityCheck(context.Background()); bad != "" || err != nil {
		t.Fatalf("integrity: %q %v", bad, err)
	}
	// The kept session still resumes with its offloaded output.
	if execs, err := st.ListToolExecutions(context.Background(), latest, 0, 10); err != nil || len(execs) != 1 {
		t.Fatalf("latest session's outputs: %d, %v", len(execs), err)
	}
}

// Bad input: a retention that is not a positive number, a negative
// --older-than.
func TestGCBadRetention(t *testing.T) {
	env, polly := cliEnv(t, "", nil)
	os.MkdirAll(filepath.Join(env.Dir, ".agent"), 0o755)
	for _, cfg := range []string{`{"retention": {"days": 0}}`, `{"retention": {"days": -3}}`, `{"retention": {"days": "ninety"}}`} {
		userConfig(t, env, cfg)
		if r := polly("gc"); r.code != 2 || !strings.Contains(r.stderr, "retention.days") {
			t.Errorf("%s: code=%d stderr=%q", cfg, r.code, r.stderr)
		}
	}
	os.Remove(filepath.Join(env.Home, ".config", "polly", "config.json"))
	if r := polly("gc", "--older-than", "-1"); r.code != 2 || !strings.Contains(r.stderr, "older-than") {
		t.Errorf("--older-than -1: code=%d stderr=%q", r.code, r.stderr)
	}
	if r := polly("-p", "hi", "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, "belong to polly gc") {
		t.Errorf("--dry-run on a prompt: code=%d stderr=%q", r.code, r.stderr)
	}
	if r := polly("gc"); r.code != 0 || !strings.Contains(r.stdout, "nothing to remove") {
		t.Errorf("gc without a database: code=%d stdout=%q", r.code, r.stdout)
	}
}

// The transcript exports hooks read go with their sessions.
func TestGCRemovesHookTranscripts(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("one"), llmtest.Text("two"))
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, hookConfig("UserPromptSubmit", "", "true", 10))
	for _, p := range []string{"first", "second"} {
		if r := polly("-p", p); r.code != 0 {
			t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
		}
	}
	files, _ := filepath.Glob(filepath.Join(env.Dir, ".agent/transcripts/*.jsonl"))
	if len(files) != 2 {
		t.Fatalf("transcripts: %v", files)
	}
	r := polly("gc", "--older-than", "0")
	left, _ := filepath.Glob(filepath.Join(env.Dir, ".agent/transcripts/*.jsonl"))
	latest := strings.Fields(strings.Split(polly("sessions").stdout, "\n")[1])[0]
	if r.code != 0 || !strings.Contains(r.stdout, "removed 1 hook transcripts") || len(left) != 1 || filepath.Base(left[0]) != latest+".jsonl" {
		t.Fatalf("gc: %v left\n%s%s", left, r.stdout, r.stderr)
	}
}

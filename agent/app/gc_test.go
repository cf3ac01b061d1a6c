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

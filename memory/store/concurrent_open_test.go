package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/memory/chat"
)

// openAndWrite is what one Polly does when it starts in a fresh project:
// open the store, create its session, store the first message.
func openAndWrite(path, marker string) error {
	s, err := Open(path)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := context.Background()
	sess, err := s.CreateSession(ctx, Session{Persona: "default", Title: marker})
	if err != nil {
		return err
	}
	_, err = s.AppendMessage(ctx, sess.ID, "default", chat.Message{Role: chat.User, Content: marker})
	return err
}

// sessionTitles lists what the file holds afterwards.
func sessionTitles(t *testing.T, path string) []string {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.ListSessions(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, x := range list {
		if x.Messages != 1 {
			t.Errorf("session %q has %d messages, want 1", x.Title, x.Messages)
		}
		titles = append(titles, x.Title)
	}
	return titles
}

// TestOpenHelperProcess is one Polly process of TestConcurrentProcessesKeepSessions.
func TestOpenHelperProcess(t *testing.T) {
	path, marker, gate := os.Getenv("POLLY_STORE_HELPER_DB"), os.Getenv("POLLY_STORE_HELPER_MARKER"), os.Getenv("POLLY_STORE_HELPER_GATE")
	if path == "" {
		t.Skip("helper process only")
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Microsecond) {
		if _, err := os.Stat(gate); err == nil {
			break
		}
	}
	if err := openAndWrite(path, marker); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
}

// Two (here four) Polly processes opening a fresh project at the same
// moment all keep their sessions: none fails with "database is locked"
// while another creates the file or switches it to WAL.
func TestConcurrentProcessesKeepSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	const rounds, procs = 25, 4
	for r := range rounds {
		dir := t.TempDir()
		path, gate := filepath.Join(dir, ".agent", "polly.db"), filepath.Join(dir, "go")
		cmds := make([]*exec.Cmd, procs)
		outs := make([]strings.Builder, procs)
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0], "-test.run=^TestOpenHelperProcess$", "-test.count=1")
			cmds[i].Env = append(os.Environ(), "POLLY_STORE_HELPER_DB="+path, "POLLY_STORE_HELPER_GATE="+gate,
				fmt.Sprintf("POLLY_STORE_HELPER_MARKER=r%d-p%d", r, i))
			cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(30 * time.Millisecond) // let them all reach the gate
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Fatalf("round %d: process %d failed (%v): %s", r, i, err, outs[i].String())
			}
		}
		if got := sessionTitles(t, path); len(got) != procs {
			t.Fatalf("round %d: %d sessions on disk, want %d: %q", r, len(got), procs, got)
		}
	}
}

func TestRetryBusyGivesUp(t *testing.T) {
	calls := 0
	err := retryBusy(context.Background(), 30*time.Millisecond, func() error { calls++; return fmt.Errorf("plain failure") })
	if err == nil || calls != 1 {
		t.Fatalf("a non-busy error was retried: %d calls, %v", calls, err)
	}
}

package store

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// openTest opens a fresh store in a temporary directory (in a not yet
// existing .agent/ so Open has to create it).
func openTest(tb testing.TB) *Store {
	tb.Helper()
	return openAt(tb, filepath.Join(tb.TempDir(), ".agent", "polly.db"))
}

func openAt(tb testing.TB, path string) *Store {
	tb.Helper()
	s, err := Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// tickClock makes s.now advance one second per call, so ordering by time is
// deterministic.
func tickClock(s *Store) {
	var n atomic.Int64
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.now = func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Second) }
}

func mustSession(tb testing.TB, s *Store) Session {
	tb.Helper()
	return mustChild(tb, s, "")
}

func mustChild(tb testing.TB, s *Store, parent string) Session {
	tb.Helper()
	sess, err := s.CreateSession(context.Background(), Session{ParentID: parent, Persona: "coder", Cwd: "/p", Model: "m"})
	if err != nil {
		tb.Fatal(err)
	}
	return sess
}

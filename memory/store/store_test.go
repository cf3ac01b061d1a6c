package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"polly/memory/chat"
)

func TestOpenPragmasOnEveryConnection(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()

	// Hold every read connection at once so the pool must open distinct
	// ones, plus the writer; each must carry the DSN pragmas.
	type pragmas struct {
		journal          string
		busy, fk, syncNo int
	}
	var mu sync.Mutex
	var got []pragmas
	var wg sync.WaitGroup
	start := make(chan struct{})
	var conns []*sql.Conn
	for i := range readConns + 1 {
		db := s.r
		if i == readConns {
			db = s.w
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var p pragmas
			for _, q := range []struct {
				sql  string
				dest any
			}{
				{"PRAGMA journal_mode", &p.journal},
				{"PRAGMA busy_timeout", &p.busy},
				{"PRAGMA foreign_keys", &p.fk},
				{"PRAGMA synchronous", &p.syncNo},
			} {
				if err := conn.QueryRowContext(ctx, q.sql).Scan(q.dest); err != nil {
					t.Error(err)
					return
				}
			}
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	if len(got) != readConns+1 {
		t.Fatalf("checked %d connections, want %d", len(got), readConns+1)
	}
	for i, p := range got {
		if p != (pragmas{journal: "wal", busy: 5000, fk: 1, syncNo: 1}) {
			t.Errorf("connection %d: %+v, want wal/5000/fk=1/synchronous=1 (NORMAL)", i, p)
		}
	}

	// foreign_keys is really enforced.
	_, err := s.AppendMessage(ctx, "nosuchid", "coder", chat.UserText("hi"))
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("append to unknown session: %v, want ErrNotFound", err)
	}
}

func TestReopenIsNoOpMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "polly.db")
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sess := mustSession(t, s)
	var applied1 int64
	if err := s.r.QueryRow(`SELECT applied_at FROM schema_migrations WHERE version = 1`).Scan(&applied1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openAt(t, path)
	var n, maxV int
	var applied2 int64
	if err := s2.r.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if err := s2.r.QueryRow(`SELECT applied_at FROM schema_migrations WHERE version = 1`).Scan(&applied2); err != nil {
		t.Fatal(err)
	}
	if n != SchemaVersion() || maxV != SchemaVersion() || applied1 != applied2 {
		t.Errorf("after reopen: %d rows, max %d, applied %d→%d; want %d rows, unchanged",
			n, maxV, applied1, applied2, SchemaVersion())
	}
	if _, err := s2.Session(ctx, sess.ID); err != nil {
		t.Errorf("session lost on reopen: %v", err)
	}
}

func TestOpenFutureSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "polly.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, '0099_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, err = Open(path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open newer db: %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), path) {
		t.Errorf("error should name the version and file: %v", err)
	}
}

func TestOpenCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "polly.db")
	junk := make([]byte, 64<<10)
	rand.Read(junk)
	if err := os.WriteFile(path, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("opened a file of random bytes")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Errorf("open corrupt file: %v, want ErrCorrupt naming the file", err)
	}
}

func TestTwoStoresSameFile(t *testing.T) {
	// Two *Store on one file stand in for two Polly processes: separate
	// pools, so only SQLite's locking keeps them apart.
	path := filepath.Join(t.TempDir(), "polly.db")
	a := openAt(t, path)
	b := openAt(t, path)
	ctx := context.Background()
	sess := mustSession(t, a)

	const perWorker = 50
	var wg sync.WaitGroup
	for w := range 8 {
		st := a
		if w%2 == 1 {
			st = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				if _, err := st.AppendMessage(ctx, sess.ID, "coder", chat.AssistantText("x")); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if _, err := st.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "bash",
						Output: strings.Repeat("out ", 5000), Status: ExecOK}); err != nil {
						t.Error(err)
						return
					}
				}
				if err := st.RecordLLMCall(ctx, LLMCall{SessionID: sess.ID, Persona: "coder",
					Usage: chat.Usage{PromptTokens: 1}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()

	msgs, err := b.Messages(ctx, sess.ID, "coder")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 8*perWorker {
		t.Errorf("%d messages, want %d", len(msgs), 8*perWorker)
	}
	assertSeqGapFree(t, a, sess.ID, "coder", 8*perWorker)
	u, err := a.Usage(ctx, sess.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if u.Total.Calls != 8*perWorker || u.Total.PromptTokens != 8*perWorker {
		t.Errorf("usage %+v, want %d calls", u.Total, 8*perWorker)
	}
	execs, err := a.ListToolExecutions(ctx, sess.ID, 0, 0)
	if err != nil || len(execs) != 8*perWorker/10 {
		t.Errorf("%d executions (%v), want %d", len(execs), err, 8*perWorker/10)
	}
	// Both stores indexed (background and on search) without double entries.
	hits, err := b.SearchOutputs(ctx, sess.ID, "out", 1000)
	if err != nil || len(hits) != 8*perWorker/10 {
		t.Errorf("%d hits (%v), want %d", len(hits), err, 8*perWorker/10)
	}
}

// assertSeqGapFree checks that the seqs of (session, persona) are exactly 1..n.
func assertSeqGapFree(t *testing.T, s *Store, sessionID, persona string, n int) {
	t.Helper()
	rows, err := s.r.Query(`SELECT seq FROM messages WHERE session_id = ? AND persona = ? ORDER BY seq`, sessionID, persona)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := 1
	for rows.Next() {
		var seq int
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		if seq != want {
			t.Fatalf("%s/%s: seq %d where %d expected", sessionID, persona, seq, want)
		}
		want++
	}
	if want-1 != n {
		t.Fatalf("%s/%s: %d seqs, want %d", sessionID, persona, want-1, n)
	}
}

func TestOpenPathNeedingEscapes(t *testing.T) {
	// The DSN is a file: URI; characters URIs give meaning to must survive.
	dir := filepath.Join(t.TempDir(), "my proj?#%20x")
	path := filepath.Join(dir, ".agent", "polly.db")
	s := openAt(t, path)
	mustSession(t, s)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at %s: %v", path, err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q", s.Path())
	}
}

// Every pooled connection, writer and readers, has the small page cache
// (the cache is per connection and outside the Go heap).
func TestPoolsUseSmallPageCache(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for name, db := range map[string]*sql.DB{"writer": s.w, "reader": s.r} {
		for range 2 {
			c, err := db.Conn(ctx) // a second reader is a second connection
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var kib int
			if err := c.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&kib); err != nil {
				t.Fatal(err)
			}
			if kib != -512 {
				t.Errorf("%s connection: cache_size %d, want -512 (KiB)", name, kib)
			}
			if name == "writer" {
				break // one connection: a second Conn would wait for the first
			}
		}
	}
}

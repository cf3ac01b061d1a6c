package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"polly/memory/chat"
)

// fillSession gives a finished session what a real one has: messages (some
// archived under a summary), tool outputs, model calls, agent state, a
// permission decision and a sub-agent run with its own output.
func fillSession(tb testing.TB, s *Store, i int) Session {
	tb.Helper()
	ctx := context.Background()
	sess := mustSession(tb, s)
	child := mustChild(tb, s, sess.ID)
	var ids []int64
	for j := range 6 {
		m, err := s.AppendMessage(ctx, sess.ID, "coder", chat.Message{Role: chat.User, Content: fmt.Sprintf("message %d of session %d", j, i)})
		if err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	big := strings.Repeat(fmt.Sprintf("line of output %d with words to index\n", i), 2000) // ~80 KB
	for _, sid := range []string{sess.ID, child.ID} {
		if _, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sid, Persona: "coder", Tool: "run_command", Output: big, Status: ExecOK}); err != nil {
			tb.Fatal(err)
		}
		if err := s.RecordLLMCall(ctx, LLMCall{SessionID: sid, Persona: "coder", Model: "m", Usage: chat.Usage{PromptTokens: 100}}); err != nil {
			tb.Fatal(err)
		}
	}
	sumID, err := s.SaveSummary(ctx, Summary{SessionID: sess.ID, Persona: "coder", Content: "summary", ArchivePath: fmt.Sprintf("/p/.agent/archive/coder_%d.json", i)})
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.ArchiveMessages(ctx, ids[:3], sumID); err != nil {
		tb.Fatal(err)
	}
	if err := s.SaveAgentState(ctx, sess.ID, "coder", []byte(`{}`)); err != nil {
		tb.Fatal(err)
	}
	if err := s.LogDecision(ctx, Decision{SessionID: sess.ID, Tool: "run_command", Allowed: true, Scope: "once"}); err != nil {
		tb.Fatal(err)
	}
	if err := s.SetSessionStatus(ctx, sess.ID, StatusDone); err != nil {
		tb.Fatal(err)
	}
	return sess
}

func tableCounts(tb testing.TB, s *Store) string {
	tb.Helper()
	var out []string
	for _, t := range []string{"sessions", "messages", "tool_executions", "output_chunks", "summaries", "llm_calls", "agents", "permission_decisions"} {
		var n int
		if err := s.r.QueryRow(`SELECT COUNT(*) FROM ` + t).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%d", t, n))
	}
	return strings.Join(out, " ")
}

func mustSound(tb testing.TB, s *Store) {
	tb.Helper()
	if bad, err := s.IntegrityCheck(context.Background()); err != nil || bad != "" {
		tb.Fatalf("integrity_check: %q, %v", bad, err)
	}
	// The full-text index agrees with the chunks it indexes.
	if err := s.IndexOutputs(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.w.Exec(`INSERT INTO output_fts(output_fts, rank) VALUES('integrity-check', 1)`); err != nil {
		tb.Fatalf("fts integrity-check: %v", err)
	}
}

func TestGCKeepsOnlyTheLatestSession(t *testing.T) {
	s := openTest(t)
	tickClock(s)
	ctx := context.Background()
	var sessions []Session
	for i := range 20 {
		sessions = append(sessions, fillSession(t, s, i))
	}
	if err := s.IndexOutputs(ctx); err != nil {
		t.Fatal(err)
	}
	latest := sessions[19]
	before := tableCounts(t, s)

	dry, err := s.GC(ctx, GCOptions{Before: s.now().Add(time.Hour), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if after := tableCounts(t, s); after != before {
		t.Fatalf("dry run changed the database:\n%s\n%s", before, after)
	}
	if dry.Sessions != 19 || dry.SubSessions != 19 || dry.Messages != 19*6 || dry.ToolOutputs != 19*2 || dry.Summaries != 19 ||
		dry.LLMCalls != 19*2 || len(dry.Archives) != 19 || dry.Kept != latest.ID || dry.Vacuumed {
		t.Fatalf("dry run report %+v", dry)
	}

	rep, err := s.GC(ctx, GCOptions{Before: s.now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed %d sessions (+%d sub-agent runs), %d messages, %d outputs; %d → %d bytes (vacuumed %v %s)",
		rep.Sessions, rep.SubSessions, rep.Messages, rep.ToolOutputs, rep.BytesBefore, rep.BytesAfter, rep.Vacuumed, rep.VacuumError)
	if rep.Sessions != dry.Sessions || rep.Messages != dry.Messages || rep.ToolOutputs != dry.ToolOutputs || len(rep.Skipped) != 0 {
		t.Fatalf("report %+v differs from the dry run %+v", rep, dry)
	}
	if !rep.Vacuumed || rep.BytesAfter*3 > rep.BytesBefore {
		t.Fatalf("file %d → %d bytes, vacuumed %v %s", rep.BytesBefore, rep.BytesAfter, rep.Vacuumed, rep.VacuumError)
	}
	list, err := s.ListSessions(ctx, 0)
	if err != nil || len(list) != 1 || list[0].ID != latest.ID {
		t.Fatalf("sessions after gc: %+v, %v", list, err)
	}
	want := "sessions=2 messages=6 tool_executions=2 output_chunks=20 summaries=1 llm_calls=2 agents=1 permission_decisions=1"
	if got := tableCounts(t, s); got != want {
		t.Fatalf("rows after gc:\n%s\nwant\n%s", got, want)
	}
	if hits, err := s.SearchOutputs(ctx, "", "output", 50); err != nil || len(hits) != 2 {
		t.Fatalf("search after gc: %d hits, %v", len(hits), err)
	}
	mustSound(t, s)

	// The latest session is kept whatever the cutoff; a kept id too.
	rep, err = s.GC(ctx, GCOptions{Before: s.now().Add(time.Hour)})
	if err != nil || rep.Sessions != 0 || rep.Vacuumed {
		t.Fatalf("second gc: %+v, %v", rep, err)
	}
}

func TestGCRespectsCutoffAndKeep(t *testing.T) {
	s := openTest(t)
	tickClock(s)
	ctx := context.Background()
	old1, old2 := fillSession(t, s, 1), fillSession(t, s, 2)
	cutoff := s.now()
	fillSession(t, s, 3)
	rep, err := s.GC(ctx, GCOptions{Before: cutoff, Keep: []string{old1.ID}})
	if err != nil || rep.Sessions != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	if _, err := s.Session(ctx, old2.ID); err == nil {
		t.Fatal("old session not removed")
	}
	if _, err := s.Session(ctx, old1.ID); err != nil {
		t.Fatal("kept session removed")
	}
}

// Bad input: another connection holds a write transaction while gc runs.
// gc waits for it (short hold) or skips the session (hold past the busy
// timeout); the database is never damaged and nothing is half-removed.
func TestGCWhileAnotherConnectionWrites(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for i := range 4 {
		fillSession(t, s, i)
		time.Sleep(2 * time.Millisecond) // distinct updated_at
	}
	other, err := openPool(s.path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	hold := func(d time.Duration) (started, done chan struct{}) {
		started, done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			tx, err := other.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
			if err != nil {
				t.Error(err)
				close(started)
				return
			}
			if _, err := tx.Exec(`INSERT INTO sessions (id, persona, created_at, updated_at) VALUES (?, 'x', ?, ?)`,
				fmt.Sprintf("held%d", d.Milliseconds()), time.Now().UnixMilli(), time.Now().UnixMilli()); err != nil {
				t.Error(err)
			}
			close(started)
			time.Sleep(d)
			if err := tx.Commit(); err != nil {
				t.Error(err)
			}
		}()
		<-started
		return started, done
	}

	// A short hold: gc waits and removes everything but the latest.
	_, done := hold(700 * time.Millisecond)
	t0 := time.Now()
	rep, err := s.GC(ctx, GCOptions{Before: time.Now().Add(-time.Millisecond)})
	<-done
	if err != nil || len(rep.Skipped) != 0 || rep.Sessions != 3 {
		t.Fatalf("gc during a short write: %+v, %v", rep, err)
	}
	if time.Since(t0) < 500*time.Millisecond {
		t.Fatalf("gc did not wait for the writer (%v)", time.Since(t0))
	}
	mustSound(t, s)

	// A hold past the busy timeout: gc skips, reports, and damages nothing.
	for i := range 2 {
		fillSession(t, s, 10+i)
		time.Sleep(2 * time.Millisecond)
	}
	_, done = hold(6 * time.Second)
	rep, err = s.GC(ctx, GCOptions{Before: time.Now().Add(-time.Millisecond)})
	<-done
	if err != nil || len(rep.Skipped) == 0 {
		t.Fatalf("gc during a long write: %+v, %v", rep, err)
	}
	t.Logf("long hold: removed %d, skipped %v, vacuum error %q", rep.Sessions, rep.Skipped, rep.VacuumError)
	mustSound(t, s)
	for _, id := range rep.Skipped {
		var msgs int
		if err := s.r.QueryRow(`SELECT COUNT(*) FROM messages WHERE session_id = ?`, id).Scan(&msgs); err != nil || msgs != 6 {
			t.Fatalf("skipped session %s has %d messages (%v): half-removed", id, msgs, err)
		}
	}
}

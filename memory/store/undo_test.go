package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"polly/memory/chat"
)

func fileState(content string, mode uint32) FileState {
	return FileState{Kind: FileRegular, Data: []byte(content), Mode: fs.FileMode(mode)}
}

// Identical contents are stored once, whichever backups refer to them; a
// blob goes with the last backup that needs it, also when its session is
// deleted (cascade).
func TestBackupsDedupeAndGoWithTheirSession(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	turn, err := s.BeginTurn(ctx, sess.ID, "default", 1, "edit things")
	if err != nil {
		t.Fatal(err)
	}
	same := strings.Repeat("x", 1000)
	var bs []Backup
	for i := range 10 {
		bs = append(bs, Backup{SessionID: sess.ID, TurnID: turn, Agent: "default", CallID: fmt.Sprint("c", i), Tool: "edit_file",
			Path: fmt.Sprintf("/p/f%d", i), Before: fileState(same, 0o644), After: FileState{Kind: FileRegular, Hash: ContentHash([]byte("new"))}})
	}
	bs = append(bs, Backup{SessionID: sess.ID, TurnID: turn, Tool: "write_file", Path: "/p/new", Before: FileState{Kind: FileMissing},
		After: FileState{Kind: FileRegular, Hash: ContentHash([]byte("n"))}})
	ids, err := s.SaveBackups(ctx, bs)
	if err != nil || len(ids) != 11 {
		t.Fatalf("ids=%v err=%v", ids, err)
	}
	n, size, err := s.UndoStorage(ctx)
	if err != nil || n != 1 || size != 1000 {
		t.Fatalf("storage: %d blobs, %d bytes, %v", n, size, err)
	}
	got, err := s.Backups(ctx, sess.ID)
	if err != nil || len(got) != 11 || got[0].Before.Hash != ContentHash([]byte(same)) || got[10].Before.Kind != FileMissing ||
		got[0].Before.Mode != 0o644 || got[0].TurnID != turn {
		t.Fatalf("backups = %+v, %v", got, err)
	}
	data, err := s.Blob(ctx, got[3].Before.Hash)
	if err != nil || string(data) != same {
		t.Fatalf("blob: %v", err)
	}
	turns, err := s.Turns(ctx, sess.ID)
	if err != nil || len(turns) != 1 || len(turns[0].Files) != 11 || turns[0].Files[0] != "/p/f0" || turns[0].Prompt != "edit things" {
		t.Fatalf("turns = %+v, %v", turns, err)
	}

	// Deleting some keeps the shared blob; deleting the session removes it.
	if err := s.DeleteBackups(ctx, ids[:5]); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.UndoStorage(ctx); n != 1 {
		t.Fatalf("blob removed while still referenced: %d", n)
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, sess.ID); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.UndoStorage(ctx); n != 0 {
		t.Fatalf("%d blobs outlived their session", n)
	}
	for _, table := range []string{"undo_turns", "undo_backups", "undo_actions"} {
		var c int
		s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&c)
		if c != 0 {
			t.Fatalf("%s keeps %d rows of a deleted session", table, c)
		}
	}
}

// A before state without its content is refused: a backup that could not
// restore is no backup.
func TestBackupNeedsContent(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	turn, _ := s.BeginTurn(ctx, sess.ID, "default", 1, "x")
	_, err := s.SaveBackups(ctx, []Backup{{SessionID: sess.ID, TurnID: turn, Path: "/p/a",
		Before: FileState{Kind: FileRegular, Hash: ContentHash([]byte("a"))}, After: FileState{Kind: FileMissing}}})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if got, _ := s.Backups(ctx, sess.ID); len(got) != 0 {
		t.Fatalf("stored %d backups", len(got))
	}
}

// An action records its changes and what they took back; a redo marks the
// action it took back and revives the turn's backups.
func TestUndoActionRecords(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	turn, _ := s.BeginTurn(ctx, sess.ID, "default", 1, "x")
	ids, err := s.SaveBackups(ctx, []Backup{{SessionID: sess.ID, TurnID: turn, Path: "/p/a", Before: fileState("old", 0o644),
		After: FileState{Kind: FileRegular, Hash: ContentHash([]byte("new"))}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveBlobs(ctx, [][]byte{[]byte("new")}); err != nil {
		t.Fatal(err)
	}
	undo, err := s.SaveUndoAction(ctx, ActionRecord{
		Action:   UndoAction{SessionID: sess.ID, Kind: UndoKindUndo, Turns: []int64{turn}},
		Changes:  []Backup{{Path: "/p/a", Before: FileState{Kind: FileRegular, Hash: ContentHash([]byte("new"))}, After: FileState{Kind: FileRegular, Hash: ContentHash([]byte("old"))}}},
		Reverted: ids,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Backups(ctx, sess.ID)
	if len(got) != 2 || got[0].RevertedBy != undo || got[1].ActionID != undo || got[1].TurnID != 0 {
		t.Fatalf("after undo: %+v", got)
	}
	redo, err := s.SaveUndoAction(ctx, ActionRecord{Action: UndoAction{SessionID: sess.ID, Kind: UndoKindRedo, Reverts: undo},
		Changes:  []Backup{{Path: "/p/a", Before: fileState("old", 0o644), After: FileState{Kind: FileRegular, Hash: ContentHash([]byte("new"))}}},
		Reverted: []int64{got[1].ID}, Revived: ids})
	if err != nil {
		t.Fatal(err)
	}
	acts, err := s.UndoActions(ctx, sess.ID)
	if err != nil || len(acts) != 2 || acts[0].RevertedBy != redo || acts[1].Reverts != undo || acts[0].Turns[0] != turn {
		t.Fatalf("actions = %+v, %v", acts, err)
	}
	got, _ = s.Backups(ctx, sess.ID)
	if got[0].RevertedBy != 0 || got[1].RevertedBy != redo {
		t.Fatalf("after redo: %+v", got)
	}
	if n, _, _ := s.UndoStorage(ctx); n != 2 {
		t.Fatalf("%d blobs, want old and new", n)
	}
}

// A fork holds the conversation as it was when the kept turns were done:
// later messages are left out, messages a later summary archived are live
// again, and the turns with their backups come along.
func TestForkSessionAtTurn(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	say := func(role chat.Role, text string) chat.Message {
		m, err := s.AppendMessage(ctx, sess.ID, "default", chat.Message{Role: role, Content: text})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for i := 1; i <= 3; i++ {
		u := say(chat.User, fmt.Sprint("question ", i))
		id, err := s.BeginTurn(ctx, sess.ID, "default", u.ID, u.Content)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SaveBackups(ctx, []Backup{{SessionID: sess.ID, TurnID: id, Path: fmt.Sprint("/p/f", i), Before: FileState{Kind: FileMissing},
			After: FileState{Kind: FileRegular, Hash: ContentHash([]byte("x"))}}}); err != nil {
			t.Fatal(err)
		}
		say(chat.Assistant, fmt.Sprint("answer ", i))
	}
	// Turn 3 compacted everything before it.
	all, _ := s.Messages(ctx, sess.ID, "default")
	sum, _ := s.SaveSummary(ctx, Summary{SessionID: sess.ID, Persona: "default", Content: "summary"})
	var ids []int64
	for _, m := range all {
		ids = append(ids, m.ID)
	}
	if err := s.ArchiveMessages(ctx, ids, sum); err != nil {
		t.Fatal(err)
	}
	s.AppendMessage(ctx, sess.ID, "default", chat.Message{Role: chat.User, Kind: chat.KindSummary, Content: "summary"})

	fork, err := s.ForkSession(ctx, sess.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if fork.ID == sess.ID || fork.ParentID != "" || fork.Title != "question 1" {
		t.Fatalf("fork = %+v", fork)
	}
	msgs, _ := s.Messages(ctx, fork.ID, "default")
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Content)
	}
	if strings.Join(texts, "|") != "question 1|answer 1|question 2|answer 2" {
		t.Fatalf("fork messages = %q", texts)
	}
	ft, _ := s.Turns(ctx, fork.ID)
	if len(ft) != 2 || ft[1].Files[0] != "/p/f2" || ft[1].MessageID != msgs[2].ID {
		t.Fatalf("fork turns = %+v (messages %+v)", ft, msgs)
	}
	// The original is untouched and still listed.
	orig, _ := s.Turns(ctx, sess.ID)
	list, _ := s.ListSessions(ctx, 0)
	if len(orig) != 3 || len(list) != 2 {
		t.Fatalf("original turns %d, sessions listed %d", len(orig), len(list))
	}
	// Forking after the summary keeps the summary, not what it replaced.
	later, err := s.ForkSession(ctx, sess.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ = s.Messages(ctx, later.ID, "default")
	if len(msgs) != 1 || msgs[0].Content != "summary" {
		t.Fatalf("fork after the summary: %+v", msgs)
	}
	if _, err := s.ForkSession(ctx, sess.ID, 4); !errors.Is(err, ErrInvalid) {
		t.Fatalf("keep 4 of 3: %v", err)
	}
}

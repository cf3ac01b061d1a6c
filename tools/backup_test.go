package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"polly/memory/store"
	"polly/tools/beneath"
)

// memRecorder keeps recorded changes in memory; fail makes Record fail.
type memRecorder struct {
	mu      sync.Mutex
	changes []FileChange
	tools   []string
	forgot  []int64
	fail    error
}

func (r *memRecorder) Record(_ context.Context, tool string, cs []FileChange) ([]int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return nil, r.fail
	}
	var ids []int64
	for _, c := range cs {
		r.changes = append(r.changes, c)
		r.tools = append(r.tools, tool)
		ids = append(ids, int64(len(r.changes)))
	}
	return ids, nil
}

func (r *memRecorder) Forget(_ context.Context, ids []int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgot = append(r.forgot, ids...)
	return nil
}

func hashOf(s string) string { return store.ContentHash([]byte(s)) }

// write_file and edit_file record the state they replace — content and mode,
// or "did not exist" — and the hash of what they write, before writing.
func TestWritesAreBackedUpFirst(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"old.txt": "one\ntwo\n"})
	os.Chmod(filepath.Join(root, "old.txt"), 0o755)
	rec := &memRecorder{}
	ctx := WithRecorder(context.Background(), rec)
	r := NewRegistry(FileTools(root)...)

	res := callCtx(ctx, t, r, "write_file", map[string]any{"path": "sub/new.txt", "content": "fresh"}, Exec{Gate: AllowAll{}})
	if res.IsError {
		t.Fatal(res.Output)
	}
	res = callCtx(ctx, t, r, "edit_file", map[string]any{"path": "old.txt", "old_string": "two", "new_string": "TWO"}, Exec{Gate: AllowAll{}})
	if res.IsError {
		t.Fatal(res.Output)
	}
	res = callCtx(ctx, t, r, "write_file", map[string]any{"path": "old.txt", "content": "whole"}, Exec{Gate: AllowAll{}})
	if res.IsError {
		t.Fatal(res.Output)
	}
	if len(rec.changes) != 3 {
		t.Fatalf("recorded %d changes", len(rec.changes))
	}
	created, edited, overwritten := rec.changes[0], rec.changes[1], rec.changes[2]
	if created.Path != filepath.Join(root, "sub", "new.txt") || created.Before.Kind != store.FileMissing ||
		created.After.Hash != hashOf("fresh") || rec.tools[0] != "write_file" {
		t.Fatalf("created = %+v", created)
	}
	if string(edited.Before.Data) != "one\ntwo\n" || edited.Before.Mode != 0o755 || edited.Before.Hash != hashOf("one\ntwo\n") ||
		edited.After.Hash != hashOf("one\nTWO\n") || edited.After.Mode != 0o755 || rec.tools[1] != "edit_file" {
		t.Fatalf("edited = %+v", edited)
	}
	if string(overwritten.Before.Data) != "one\nTWO\n" || overwritten.After.Hash != hashOf("whole") {
		t.Fatalf("overwritten = %+v", overwritten)
	}
	// An unchanged write records nothing.
	callCtx(ctx, t, r, "write_file", map[string]any{"path": "old.txt", "content": "whole"}, Exec{Gate: AllowAll{}})
	if len(rec.changes) != 3 {
		t.Fatal("an unchanged write was recorded")
	}
}

// Bad input (issue 16): a backup that cannot be stored — the disk is full —
// means the edit does not happen, and the model is told why.
func TestBackupFailureBlocksTheWrite(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"old.txt": "keep me\n"})
	rec := &memRecorder{fail: errors.New("save 1 backups: database or disk is full")}
	ctx := WithRecorder(context.Background(), rec)
	r := NewRegistry(FileTools(root)...)

	res := callCtx(ctx, t, r, "edit_file", map[string]any{"path": "old.txt", "old_string": "keep", "new_string": "lose"}, Exec{Gate: AllowAll{}})
	if !res.IsError || !strings.Contains(res.Output, "could not back up old.txt") || !strings.Contains(res.Output, "disk is full") ||
		!strings.Contains(res.Output, "not changed") {
		t.Fatalf("edit result = %q", res.Output)
	}
	res = callCtx(ctx, t, r, "write_file", map[string]any{"path": "new.txt", "content": "x"}, Exec{Gate: AllowAll{}})
	if !res.IsError || !strings.Contains(res.Output, "disk is full") {
		t.Fatalf("write result = %q", res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "old.txt")); string(b) != "keep me\n" {
		t.Fatalf("old.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt was created: %v", err)
	}
}

// An edit through a symlink backs up the target and names the link.
func TestBackupThroughSymlink(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"real.txt": "a\n"})
	if err := os.Symlink("real.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	rec := &memRecorder{}
	ctx := WithRecorder(context.Background(), rec)
	r := NewRegistry(FileTools(root)...)
	res := callCtx(ctx, t, r, "edit_file", map[string]any{"path": "link.txt", "old_string": "a", "new_string": "b"}, Exec{Gate: AllowAll{}})
	if res.IsError {
		t.Fatal(res.Output)
	}
	c := rec.changes[0]
	real, _ := filepath.EvalSymlinks(filepath.Join(root, "real.txt"))
	if c.Path != real || c.Link != filepath.Join(root, "link.txt") {
		t.Fatalf("change = %+v", c)
	}
}

// RestoreStateIn puts back content with its mode, a symlink, or nothing,
// and ReadStateIn reads each back.
func TestRestoreStateIn(t *testing.T) {
	dir := t.TempDir()
	root, err := beneath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("now"), 0o600)
	want := store.FileState{Kind: store.FileRegular, Hash: hashOf("then"), Mode: 0o755}
	if err := RestoreStateIn(root, "f", want, []byte("then")); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStateIn(root, "f")
	if err != nil || string(got.Data) != "then" || got.Mode != 0o755 || !got.Same(want) {
		t.Fatalf("got %+v, %v", got, err)
	}
	l := filepath.Join(dir, "l")
	os.WriteFile(l, []byte("replaced the link"), 0o644)
	if err := RestoreStateIn(root, "l", store.FileState{Kind: store.FileSymlink}, []byte("f")); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(l); err != nil || target != "f" {
		t.Fatalf("link -> %q, %v", target, err)
	}
	if got, err := ReadStateIn(root, "l"); err != nil || got.Kind != store.FileSymlink || string(got.Data) != "f" {
		t.Fatalf("link state %+v, %v", got, err)
	}
	if err := RestoreStateIn(root, "f", store.FileState{Kind: store.FileMissing}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("not removed: %v", err)
	}
	if got, err := ReadStateIn(root, "f"); err != nil || got.Kind != store.FileMissing {
		t.Fatalf("missing state %+v, %v", got, err)
	}
	if err := RestoreStateIn(root, "f", store.FileState{Kind: store.FileUnknown}, nil); err == nil {
		t.Fatal("restored an unknown state")
	}
}

package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"polly/memory/store"
)

// A command that may write is fingerprinted around its run: what it
// created, changed and deleted (outside .gitignore) is listed in the
// result's metadata and recorded with the new contents' hashes.
func TestTrackedCommandListsItsChanges(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"exist.txt": "1\n", "gone.txt": "bye\n", ".gitignore": "build/\n", ".agent/polly.db": "x"})
	rec := &memRecorder{}
	ctx := WithRecorder(context.Background(), rec)
	var judged []string
	readOnly := func(cmd string) bool { judged = append(judged, cmd); return cmd == "ls" }
	r := NewRegistry(TrackChanges(plainShell(root), root, readOnly))

	res := callCtx(ctx, t, r, "run_command", map[string]any{"command": "printf made > made.txt; echo 2 >> exist.txt; rm gone.txt; mkdir build; touch build/out; echo y > .agent/polly.db"}, Exec{Gate: AllowAll{}})
	if res.IsError {
		t.Fatal(res.Output)
	}
	tc, ok := res.Meta["files"].(TreeChanges)
	if !ok || !slices.Equal(tc.Created, []string{"made.txt"}) || !slices.Equal(tc.Changed, []string{"exist.txt"}) || !slices.Equal(tc.Deleted, []string{"gone.txt"}) {
		t.Fatalf("meta = %+v", res.Meta)
	}
	if !slices.Equal(res.Created, []string{"made.txt"}) || !slices.Equal(res.Files, []string{"made.txt", "exist.txt"}) {
		t.Fatalf("files %v created %v", res.Files, res.Created)
	}
	if len(rec.changes) != 3 || rec.tools[0] != "run_command" {
		t.Fatalf("recorded %+v", rec.changes)
	}
	byPath := map[string]FileChange{}
	for _, c := range rec.changes {
		byPath[filepath.Base(c.Path)] = c
	}
	if c := byPath["made.txt"]; c.Before.Kind != store.FileMissing || c.After.Hash != hashOf("made") || c.After.Data != nil {
		t.Fatalf("made.txt = %+v", c)
	}
	if c := byPath["exist.txt"]; c.Before.Kind != store.FileUnknown || c.After.Hash != hashOf("1\n2\n") {
		t.Fatalf("exist.txt = %+v", c)
	}
	if c := byPath["gone.txt"]; c.Before.Kind != store.FileUnknown || c.After.Kind != store.FileMissing {
		t.Fatalf("gone.txt = %+v", c)
	}

	// A read-only line is not fingerprinted; without a recorder nothing is.
	res = callCtx(ctx, t, r, "run_command", map[string]any{"command": "ls"}, Exec{Gate: AllowAll{}})
	if res.Meta != nil || len(rec.changes) != 3 {
		t.Fatalf("read-only command tracked: %+v", res.Meta)
	}
	res = callCtx(context.Background(), t, r, "run_command", map[string]any{"command": "touch other.txt"}, Exec{Gate: AllowAll{}})
	if res.Meta != nil || len(rec.changes) != 3 || len(judged) != 2 {
		t.Fatalf("tracked without a recorder: %+v, judged %v", res.Meta, judged)
	}
	if _, err := os.Stat(filepath.Join(root, "other.txt")); err != nil {
		t.Fatal("the command did not run")
	}
}

// plainShell is run_command as a bare bash process in root: the tracking
// around it is under test, not the sandbox the real one runs in.
func plainShell(root string) Tool {
	return New("run_command", "bash -c in root", func(ctx context.Context, a runCommandArgs) (Result, error) {
		cmd := exec.CommandContext(ctx, "bash", "-c", a.Command)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			return Result{Output: string(out) + err.Error(), IsError: true}, nil
		}
		return Result{Output: string(out)}, nil
	}, nil)
}

// The fingerprint is cheap: a stat per file, no reads. 2,000 files.
func BenchmarkFingerprint(b *testing.B) {
	root := b.TempDir()
	for i := range 2000 {
		dir := filepath.Join(root, "pkg", fmt.Sprint("p", i%20))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", i)), []byte("package x\n"), 0o644)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		fp, err := fingerprint(ctx, root)
		if err != nil || len(fp) != 2000 {
			b.Fatal(len(fp), err)
		}
	}
}

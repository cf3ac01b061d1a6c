package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"polly/memory/chat"
	"polly/memory/store"
	"polly/tools"
)

// undoBench is a project with a store and a turn to record under.
func undoBench(b *testing.B) (dir string, st *store.Store, reg *tools.Registry, rec turnRecorder) {
	b.Helper()
	dir = b.TempDir()
	st, err := store.Open(filepath.Join(dir, ".agent", "polly.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	sess, err := st.CreateSession(ctx, store.Session{Persona: "default"})
	if err != nil {
		b.Fatal(err)
	}
	turn, err := st.BeginTurn(ctx, sess.ID, "default", 0, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return dir, st, tools.NewRegistry(tools.FileTools(dir)...), turnRecorder{st: st, turn: turnRef{session: sess.ID, id: turn}, agent: "default"}
}

// textOf is n bytes of source-like text with a marker on every line.
func textOf(n int) []byte {
	var buf bytes.Buffer
	for i := 0; buf.Len() < n; i++ {
		fmt.Fprintf(&buf, "line %06d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return buf.Bytes()[:n]
}

func editCall(i int, from, to string) chat.ToolCall {
	return chat.ToolCall{ID: fmt.Sprint("c", i), Name: "edit_file",
		Arguments: fmt.Sprintf(`{"path":"f.txt","old_string":%q,"new_string":%q}`, from, to)}
}

// BenchmarkEditBackup1MB is the cost of backing up a 1 MB file before an
// edit: edit_file without a recorder, then with the SQLite one (hash, blob
// insert, backup row). Each iteration flips one line back and forth, so
// after the first two rounds the contents are already stored (dedupe); the
// "fresh" case makes every content new.
func BenchmarkEditBackup1MB(b *testing.B) {
	for _, c := range []struct {
		name          string
		backup, fresh bool
	}{{"no-backup", false, false}, {"backup", true, false}, {"backup-fresh", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			dir, _, reg, rec := undoBench(b)
			data := textOf(1 << 20)
			if err := os.WriteFile(filepath.Join(dir, "f.txt"), data, 0o644); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if c.backup {
				ctx = tools.WithRecorder(ctx, rec)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			i := 0
			cur := "line 000000:"
			for b.Loop() {
				next := "LINE 000000:"
				if cur == next {
					next = "line 000000:"
				}
				if c.fresh {
					next = fmt.Sprintf("L%011d:", i)
				}
				if res := reg.Execute(ctx, editCall(i, cur, next), tools.Exec{}); res.IsError {
					b.Fatal(res.Output)
				}
				cur = next
				i++
			}
		})
	}
}

// BenchmarkBackupStorage100Edits stores 100 edits of one 100 KB file and
// reports what the backups hold: distinct contents (blobs) and bytes.
// "distinct" changes a new line every time; "back-and-forth" toggles one
// line, so the 100 backups share 2 contents.
func BenchmarkBackupStorage100Edits(b *testing.B) {
	for _, toggle := range []bool{false, true} {
		name := "distinct"
		if toggle {
			name = "back-and-forth"
		}
		b.Run(name, func(b *testing.B) {
			var blobs int
			var stored int64
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				dir, st, reg, rec := undoBench(b)
				if err := os.WriteFile(filepath.Join(dir, "f.txt"), textOf(100<<10), 0o644); err != nil {
					b.Fatal(err)
				}
				ctx := tools.WithRecorder(context.Background(), rec)
				b.StartTimer()
				for i := range 100 {
					from, to := fmt.Sprintf("line %06d:", i), fmt.Sprintf("LINE %06d:", i)
					if toggle {
						from, to = "line 000000:", "LINE 000000:"
						if i%2 == 1 {
							from, to = to, from
						}
					}
					if res := reg.Execute(ctx, editCall(i, from, to), tools.Exec{}); res.IsError {
						b.Fatal(res.Output)
					}
				}
				b.StopTimer()
				var err error
				if blobs, stored, err = st.UndoStorage(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(blobs), "blobs")
			b.ReportMetric(float64(stored)/(1<<20), "MiB-stored")
		})
	}
}

// BenchmarkBackupRecord1MB is the backup itself, without the edit around
// it: hash 1 MB, store it (a new content every time, or one already
// stored) and the backup row.
func BenchmarkBackupRecord1MB(b *testing.B) {
	for _, fresh := range []bool{true, false} {
		name := "new-content"
		if !fresh {
			name = "stored-content"
		}
		b.Run(name, func(b *testing.B) {
			dir, _, _, rec := undoBench(b)
			data := textOf(1 << 20)
			ctx := context.Background()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if fresh {
					copy(data, fmt.Sprintf("%012d", i)) // a new content, same size
				}
				c := tools.FileChange{Path: filepath.Join(dir, "f.txt"),
					Before: store.FileState{Kind: store.FileRegular, Data: data, Mode: 0o644},
					After:  store.FileState{Kind: store.FileRegular, Hash: store.ContentHash([]byte("after")), Mode: 0o644}}
				if _, err := rec.Record(ctx, "edit_file", []tools.FileChange{c}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

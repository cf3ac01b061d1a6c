package workspace

import (
	"os"
	"strings"
	"testing"
)

func TestKnownFixMatchesBySignature(t *testing.T) {
	w, err := Open(t.TempDir(), os.DirFS("../.agent-template"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.KnownFix("edit_file: old_string not found in main.go"); ok {
		t.Fatal("matched on an empty ERRORS.md")
	}
	w.LogError("go test ./pkg/store failed: database is locked (SQLITE_BUSY) after 5000 ms", "open SQLite with _txlock=immediate")
	w.LogError("edit_file path=main.go failed: edit_file: old_string not found in main.go;\nthe file has 120 lines", "read the file first and copy old_string exactly")
	cases := []struct {
		err, want string
	}{
		{"edit_file: old_string not found in internal/util.go; the file has 7 lines", "copy old_string exactly"},
		{"go test ./cmd failed: database is locked (SQLITE_BUSY) after 100 ms", "_txlock=immediate"},
		{"error: database is locked (SQLITE_BUSY) after 3 ms", "_txlock=immediate"},
		{"permission denied: run_command needs approval", ""},
		{"x", ""},
	}
	for _, c := range cases {
		f, ok := w.KnownFix(c.err)
		if ok != (c.want != "") || (ok && !strings.Contains(f.Fix, c.want)) {
			t.Errorf("KnownFix(%q) = %+v, %v; want fix containing %q", c.err, f, ok, c.want)
		}
	}
}

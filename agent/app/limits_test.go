package app

import (
	"os"
	"path/filepath"
	"testing"
)

// Learned context limits survive the process: stored per model in a JSON
// file in the cache dir, replaced atomically; a corrupt file is replaced.
func TestLimitFile(t *testing.T) {
	dir := t.TempDir()
	l := openLimits(dir)
	if _, ok := l.Limit("m"); ok {
		t.Fatal("a limit before any was stored")
	}
	if err := l.SaveLimit("m", 30000); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveLimit("other", 8192); err != nil {
		t.Fatal(err)
	}
	again := openLimits(dir)
	if n, ok := again.Limit("m"); !ok || n != 30000 {
		t.Fatalf("Limit = %d, %v", n, ok)
	}
	if again.Where() != filepath.Join(dir, "context-limits.json") {
		t.Fatal(again.Where())
	}
	os.WriteFile(again.Where(), []byte("{broken"), 0o644)
	if _, ok := again.Limit("m"); ok {
		t.Fatal("a corrupt file gave a limit")
	}
	if err := again.SaveLimit("m", 1000); err != nil {
		t.Fatal(err)
	}
	if n, _ := again.Limit("m"); n != 1000 {
		t.Fatal(n)
	}
}

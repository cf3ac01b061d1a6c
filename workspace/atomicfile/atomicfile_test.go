package atomicfile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Write replaces the file whole, with the mode asked for whatever the
// umask, a symlink at the path replaced (not followed), no temp file left.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	if err := os.WriteFile(p, []byte("old content that is longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("content %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	if err := Write(link, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatal("the link's target was written")
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink != 0 {
		t.Fatal("the link was not replaced")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("%d entries: a temp file was left", len(entries))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}

// WriteNew never replaces a file: of many concurrent writers exactly one
// writes, and what is there is whole.
func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "SOUL.md")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wrote := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ok, err := WriteNew(p, []byte("version "+string(rune('a'+i))), 0o644)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wrote++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if b, _ := os.ReadFile(p); wrote != 1 || len(b) != len("version a") {
		t.Fatalf("%d writers wrote; content %q", wrote, b)
	}
	if ok, err := WriteNew(p, []byte("again"), 0o644); ok || err != nil {
		t.Fatalf("an existing file was replaced: %v %v", ok, err)
	}
}

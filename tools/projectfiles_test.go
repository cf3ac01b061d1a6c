package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ProjectFiles lists what .gitignore leaves, directories with a slash,
// odd names as they are, and stops at max.
func TestProjectFiles(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a.go", "sub/b.go", "build/x.o", ".git/HEAD", "odd/new\nline.txt", "sub/skip.log"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("build/\n*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ProjectFiles(context.Background(), root, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".gitignore", "a.go", "odd/", "odd/new\nline.txt", "sub/", "sub/b.go"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	got, err = ProjectFiles(context.Background(), root, 3)
	if !errors.Is(err, ErrTooManyFiles) || len(got) != 3 {
		t.Fatalf("max 3: %q, %v", got, err)
	}
}

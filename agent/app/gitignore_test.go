package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 25 #1: a git project gets .agent/ in its .gitignore once, with a
// note; an existing line is respected; a .gitignore that is a link is
// never followed; outside git nothing happens.
func TestIgnoreStateDir(t *testing.T) {
	repo := t.TempDir()
	os.Mkdir(filepath.Join(repo, ".git"), 0o755)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("node_modules/"), 0o644)
	if note := IgnoreStateDir(repo); !strings.Contains(note, "added .agent/ to .gitignore") {
		t.Fatalf("note %q", note)
	}
	b, _ := os.ReadFile(filepath.Join(repo, ".gitignore"))
	if !strings.HasPrefix(string(b), "node_modules/\n") || !strings.HasSuffix(string(b), "\n.agent/\n") {
		t.Fatalf(".gitignore = %q", b)
	}
	if note := IgnoreStateDir(repo); note != "" {
		t.Fatalf("second time: %q", note)
	}

	sub := filepath.Join(repo, "pkg")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, ".gitignore"), []byte("/.agent\n"), 0o644)
	if note := IgnoreStateDir(sub); note != "" {
		t.Fatalf("already ignored: %q", note)
	}

	linked := t.TempDir()
	os.Mkdir(filepath.Join(linked, ".git"), 0o755)
	target := filepath.Join(t.TempDir(), "bashrc")
	os.WriteFile(target, []byte("mine\n"), 0o644)
	os.Symlink(target, filepath.Join(linked, ".gitignore"))
	if note := IgnoreStateDir(linked); !strings.Contains(note, "not a regular file") {
		t.Fatalf("linked .gitignore: %q", note)
	}
	if b, _ := os.ReadFile(target); string(b) != "mine\n" {
		t.Fatalf("the link's target was written: %q", b)
	}

	plain := t.TempDir()
	if note := IgnoreStateDir(plain); note != "" || fileExists(filepath.Join(plain, ".gitignore")) {
		t.Fatalf("outside git: %q", note)
	}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

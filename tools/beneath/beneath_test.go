//go:build unix

package beneath

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// modes runs a test with openat2 (where the kernel has it) and with the
// component walk.
func modes(t *testing.T, f func(t *testing.T, open func(dir string) *Root)) {
	for _, m := range []struct {
		name    string
		openat2 bool
	}{{"openat2", true}, {"walk", false}} {
		t.Run(m.name, func(t *testing.T) {
			if m.openat2 && !haveOpenat2 {
				t.Skip("no openat2 on this system")
			}
			f(t, func(dir string) *Root {
				r, err := Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				r.openat2 = m.openat2
				t.Cleanup(func() { r.Close() })
				return r
			})
		})
	}
}

func TestCheckRefusesPathsThatLeave(t *testing.T) {
	for _, p := range []string{"", ".", "/etc/passwd", "../x", "a/../../b", "a/..", "a//b", "./a", "a/./b", "a/", "x\x00y"} {
		if err := Check(p); !errors.Is(err, ErrOutside) {
			t.Errorf("Check(%q) = %v, want ErrOutside", p, err)
		}
	}
	for _, p := range []string{"a", "a/b/c.txt", ".agent/x", "..a/b", "a../b"} {
		if err := Check(p); err != nil {
			t.Errorf("Check(%q) = %v", p, err)
		}
	}
}

func TestWriteReadLinkRemove(t *testing.T) {
	modes(t, func(t *testing.T, open func(string) *Root) {
		dir := t.TempDir()
		r := open(dir)
		if err := r.WriteFile("a/b/c.txt", []byte("hello"), 0o640); err != nil {
			t.Fatal(err)
		}
		got, mode, err := r.ReadFile("a/b/c.txt")
		if err != nil || string(got) != "hello" || mode != 0o640 {
			t.Fatalf("ReadFile = %q %v %v", got, mode, err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "a/b/c.txt")); string(b) != "hello" {
			t.Fatalf("on disk: %q", b)
		}
		if err := r.Symlink("c.txt", "a/b/l"); err != nil {
			t.Fatal(err)
		}
		if target, err := r.Readlink("a/b/l"); err != nil || target != "c.txt" {
			t.Fatalf("Readlink = %q %v", target, err)
		}
		if info, err := r.Lstat("a/b/l"); err != nil || info.Mode&fs.ModeSymlink == 0 {
			t.Fatalf("Lstat link = %v %v", info, err)
		}
		if _, _, err := r.ReadFile("a/b/l"); err == nil {
			t.Fatal("ReadFile followed a final link")
		}
		if err := r.Remove("a/b/l"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Lstat("a/b/l"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after Remove: %v", err)
		}
		if _, err := r.Lstat("nope/x"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("missing parent: %v", err)
		}
		entries, _ := os.ReadDir(filepath.Join(dir, "a/b"))
		if len(entries) != 1 {
			t.Fatalf("temporary files left: %v", entries)
		}
	})
}

// A directory on the way that is a link (a gitignored sub/ pointing at
// ~/.ssh) is refused for every operation; nothing outside changes.
func TestLinkedDirectoryIsRefused(t *testing.T) {
	modes(t, func(t *testing.T, open func(string) *Root) {
		dir, outside := t.TempDir(), t.TempDir()
		keys := filepath.Join(outside, "authorized_keys")
		os.WriteFile(keys, []byte("mine\n"), 0o600)
		if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
			t.Fatal(err)
		}
		os.Mkdir(filepath.Join(dir, "real"), 0o755)
		os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "real", "deeper"))
		r := open(dir)
		for _, rel := range []string{"sub/authorized_keys", "sub/new/x", "real/deeper/authorized_keys"} {
			if err := r.WriteFile(rel, []byte("evil\n"), 0o600); !errors.Is(err, ErrSymlink) {
				t.Errorf("WriteFile(%s) = %v, want ErrSymlink", rel, err)
			}
			if err := r.Remove(rel); !errors.Is(err, ErrSymlink) {
				t.Errorf("Remove(%s) = %v, want ErrSymlink", rel, err)
			}
			if err := r.Symlink("x", rel); !errors.Is(err, ErrSymlink) {
				t.Errorf("Symlink(%s) = %v, want ErrSymlink", rel, err)
			}
			if _, _, err := r.ReadFile(rel); !errors.Is(err, ErrSymlink) {
				t.Errorf("ReadFile(%s) = %v, want ErrSymlink", rel, err)
			}
		}
		if b, _ := os.ReadFile(keys); string(b) != "mine\n" {
			t.Fatalf("outside file changed: %q", b)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 1 {
			t.Fatalf("files appeared outside: %v", entries)
		}
	})
}

// A link as the last component is replaced by the write, never followed.
func TestWriteReplacesFinalLink(t *testing.T) {
	modes(t, func(t *testing.T, open func(string) *Root) {
		dir, outside := t.TempDir(), t.TempDir()
		target := filepath.Join(outside, "bashrc")
		os.WriteFile(target, []byte("mine\n"), 0o644)
		os.Symlink(target, filepath.Join(dir, "rc"))
		r := open(dir)
		if err := r.WriteFile("rc", []byte("restored\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(target); string(b) != "mine\n" {
			t.Fatalf("the link's target was written: %q", b)
		}
		if fi, _ := os.Lstat(filepath.Join(dir, "rc")); !fi.Mode().IsRegular() {
			t.Fatalf("rc is %v, want a regular file", fi.Mode())
		}
	})
}

// No TOCTOU: sub/ is swapped for a link to outside after it was resolved
// and before the write. The write lands in the directory that was checked
// (now sub.old), never outside.
func TestSwapAfterResolveIsNotFollowed(t *testing.T) {
	modes(t, func(t *testing.T, open func(string) *Root) {
		dir, outside := t.TempDir(), t.TempDir()
		sub := filepath.Join(dir, "sub")
		os.Mkdir(sub, 0o755)
		r := open(dir)
		swapped := false
		r.resolved = func() {
			if swapped {
				return
			}
			swapped = true
			if err := os.Rename(sub, sub+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, sub); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.WriteFile("sub/authorized_keys", []byte("evil\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if !swapped {
			t.Fatal("the swap hook did not run")
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Fatalf("the write followed the swapped link: %v", entries)
		}
		if b, err := os.ReadFile(filepath.Join(sub+".old", "authorized_keys")); err != nil || !bytes.Equal(b, []byte("evil\n")) {
			t.Fatalf("the write did not land in the checked directory: %q %v", b, err)
		}
	})
}

package owner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"polly/memory/store"
)

func TestLoadCreatesOnceAndKeeps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "polly")
	// Several processes starting at once agree on one id.
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			in, err := Load(dir)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = in.ID()
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || len(id) != 12 {
			t.Fatalf("ids %q", ids)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, File))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("install id file: %v %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v", di.Mode())
	}
	again, err := Load(dir)
	if err != nil || again.ID() != ids[0] {
		t.Fatalf("reload: %v %v", again, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temp files left: %v", entries)
	}
}

// Bad input: a corrupt install id is reported with its path and how to
// recover, and left as it is.
func TestLoadCorrupt(t *testing.T) {
	for name, content := range map[string]string{"short": "abc\n", "not hex": strings.Repeat("zz", 32), "empty": ""} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, File)
			os.WriteFile(path, []byte(content), 0o600)
			_, err := Load(dir)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("err = %v", err)
			}
			for _, want := range []string{path, "corrupt", "mv " + path, "polly sessions --adopt"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message lacks %q: %v", want, err)
				}
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Fatalf("the corrupt file was changed: %q", b)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	me, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Load(t.TempDir())
	here := "/home/me/proj"
	mine := store.Session{ID: "a1b2c3d4", Project: here, Owner: me.Stamp("a1b2c3d4", here)}
	if why := me.Judge(mine, here); why != "" {
		t.Fatalf("own session judged foreign: %s", why)
	}
	for name, c := range map[string]struct {
		s    store.Session
		want string
	}{
		"unstamped":     {store.Session{ID: "a1b2c3d4"}, "no owner stamp"},
		"other install": {store.Session{ID: "a1b2c3d4", Project: here, Owner: other.Stamp("a1b2c3d4", here)}, "another Polly install (" + other.ID() + ")"},
		"moved":         {store.Session{ID: "a1b2c3d4", Project: "/home/me/old", Owner: me.Stamp("a1b2c3d4", "/home/me/old")}, "made in /home/me/old, and this project is " + here},
		"other id":      {store.Session{ID: "ffffffff", Project: here, Owner: mine.Owner}, "does not verify"},
		"path edited":   {store.Session{ID: "a1b2c3d4", Project: "/elsewhere", Owner: me.Stamp("a1b2c3d4", "/home/me/old")}, "does not verify"},
		"bad format":    {store.Session{ID: "a1b2c3d4", Owner: "v9:x"}, "not one this Polly writes"},
	} {
		if why := me.Judge(c.s, here); !strings.Contains(why, c.want) {
			t.Errorf("%s: %q, want %q", name, why, c.want)
		}
	}
	err = Checker{Install: me, Project: here}.Check(store.Session{ID: "deadbeef", Title: "shipped"})
	var fe *ForeignError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "polly sessions --adopt deadbeef") {
		t.Fatalf("Check: %v", err)
	}
}

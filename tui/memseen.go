package tui

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The memory inspector marks the files that changed since the user last
// opened it: workspace memory enters every later session's prompt, so a
// write the user did not watch happen should catch the eye (issue 25). What
// the user last saw — each file's content hash — is kept in Polly's user
// state directory, for every project alike.

// seenFile is the name of that record in the state directory.
const seenFile = "memory-seen.json"

type seenRecord struct {
	Version int               `json:"version"`
	Files   map[string]string `json:"files"` // absolute path → SHA-256 of the content last shown
}

// userStateDir is Polly's per-user state directory: $XDG_STATE_HOME/polly,
// else ~/.local/state/polly (a relative $XDG_STATE_HOME is ignored, as the
// XDG spec says); "" when neither is known.
func userStateDir(getenv func(string) string, home string) string {
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "polly")
	}
	if home != "" {
		return filepath.Join(home, ".local", "state", "polly")
	}
	return ""
}

// markSeen sets changed on each file whose content differs from what the
// record in stateDir says was shown last (a file never shown counts as
// changed), then records the files as seen now. With no record yet (the
// first opening) nothing is marked: there is nothing to compare with.
func markSeen(stateDir string, files []memFile) error {
	if stateDir == "" {
		return nil
	}
	path := filepath.Join(stateDir, seenFile)
	rec := seenRecord{Version: 1, Files: map[string]string{}}
	first := false
	switch b, err := os.ReadFile(path); {
	case errors.Is(err, fs.ErrNotExist):
		first = true
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	default:
		if err := json.Unmarshal(b, &rec); err != nil || rec.Files == nil {
			// A damaged record: start a new baseline rather than mark everything.
			rec, first = seenRecord{Version: 1, Files: map[string]string{}}, true
		}
	}
	for i, f := range files {
		sum, err := fileHash(f.path)
		if err != nil {
			continue // gone or unreadable: the view says so when it is chosen
		}
		files[i].changed = !first && rec.Files[f.path] != sum
		rec.Files[f.path] = sum
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeAtomic replaces path with data (temp file and rename), creating
// its directory (private to the user) when missing.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

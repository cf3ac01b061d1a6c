package app

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"polly/tools/beneath"
)

// IgnoreStateDir keeps .agent/ out of git when the project is in a git
// repository: a committed session store is how one person's sessions reach
// everyone who clones it. It appends ".agent/" to the project's .gitignore
// unless a line there already covers it, and returns what it did for the
// user ("" when nothing was needed). A .gitignore that is a link or not a
// regular file is left alone (the note says to add the line by hand).
func IgnoreStateDir(root string) string {
	if !inGitRepo(root) {
		return ""
	}
	r, err := beneath.Open(root)
	if err != nil {
		return fmt.Sprintf("could not add .agent/ to .gitignore (%v): add it yourself so the session store stays out of git", err)
	}
	defer r.Close()
	var data []byte
	mode := fs.FileMode(0o644)
	info, err := r.Lstat(".gitignore")
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Sprintf("could not read .gitignore (%v): add .agent/ to it yourself so the session store stays out of git", err)
	case !info.Mode.IsRegular():
		return ".gitignore is not a regular file, so Polly left it alone: add .agent/ to it yourself so the session store stays out of git"
	default:
		if data, mode, err = r.ReadFile(".gitignore"); err != nil {
			return fmt.Sprintf("could not read .gitignore (%v): add .agent/ to it yourself so the session store stays out of git", err)
		}
	}
	if ignoresStateDir(data) {
		return ""
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	data = append(data, "# Polly's session store belongs to this machine, not the repository\n.agent/\n"...)
	if err := r.WriteFile(".gitignore", data, mode); err != nil {
		return fmt.Sprintf("could not add .agent/ to .gitignore (%v): add it yourself so the session store stays out of git", err)
	}
	return "added .agent/ to .gitignore: the session store (.agent/polly.db) belongs to this machine, not the repository"
}

// inGitRepo reports whether dir or a parent holds .git.
func inGitRepo(dir string) bool {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// ignoresStateDir reports whether a .gitignore at the project root has a
// line that ignores .agent/ there (negations are not followed: a file
// that un-ignores it gets the line again, which is harmless).
func ignoresStateDir(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(line, "**/"), "/"), "/") {
		case ".agent", ".agent/*", ".agent/**":
			return true
		}
	}
	return false
}

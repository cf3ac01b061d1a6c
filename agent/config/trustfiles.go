package config

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"polly/workspace/jsonfile"
)

// projectFilesRun finds the project files that held settings name — a
// script in an MCP server's command, arguments or env, a hook's command —
// and fingerprints their content: trusting a setting that runs
// tools/helper.py trusts that file as it is now. Every word of every
// string in the held settings is a candidate (so a new setting that runs
// something is covered without being listed here); a word counts when it
// names a regular file inside the project, relative to it (or to the
// setting's cwd), absolute, or after $CLAUDE_PROJECT_DIR. Sorted by path.
func projectFilesRun(projectDir string, held []restricted) []RunFile {
	if projectDir == "" {
		return nil
	}
	root := ProjectKey(projectDir)
	found := map[string]string{}
	for _, r := range held {
		walkStrings(r.val, []string{root}, func(s string, bases []string) {
			for _, word := range words(s) {
				for _, base := range bases {
					rel, ok := inProject(root, base, word)
					if !ok {
						continue
					}
					if _, seen := found[rel]; seen {
						break
					}
					if h, ok := fileHash(filepath.Join(root, filepath.FromSlash(rel))); ok {
						found[rel] = h
						break
					}
				}
			}
		})
	}
	out := make([]RunFile, 0, len(found))
	for _, rel := range slices.Sorted(maps.Keys(found)) {
		out = append(out, RunFile{Path: rel, Hash: found[rel]})
	}
	return out
}

// walkStrings calls f with every string value under n and the directories
// its relative paths may start from: the project, and the "cwd" of the
// object it is in (an MCP server's arguments are relative to its cwd).
func walkStrings(n *jsonfile.Node, bases []string, f func(s string, bases []string)) {
	switch n.Kind {
	case jsonfile.String:
		f(n.Text, bases)
	case jsonfile.Object:
		for _, m := range n.Members {
			if m.Key == "cwd" && m.Val.Kind == jsonfile.String && m.Val.Text != "" {
				bases = append(slices.Clip(bases), m.Val.Text)
			}
		}
		for _, m := range n.Members {
			walkStrings(m.Val, bases, f)
		}
	case jsonfile.Array:
		for _, e := range n.Elems {
			walkStrings(e, bases, f)
		}
	}
}

// words splits a command line loosely: on blanks, shell operators and
// quotes, and after "=" (--config=tools/x.json, NODE_OPTIONS=--require).
func words(s string) []string {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(" \t\n\r'\"`;|&()<>=,", r)
	})
	var out []string
	for _, f := range fields {
		for _, p := range []string{"${CLAUDE_PROJECT_DIR}/", "$CLAUDE_PROJECT_DIR/"} {
			if rest, ok := strings.CutPrefix(f, p); ok {
				f = rest
			}
		}
		if f != "" && !strings.HasPrefix(f, "-") && !strings.Contains(f, "://") {
			out = append(out, f)
		}
	}
	return out
}

// inProject returns word, taken relative to base (absolute, or relative
// to root), as a clean project-relative path when it names a place inside
// root.
func inProject(root, base, word string) (string, bool) {
	p := word
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(base) {
			base = filepath.Join(root, base)
		}
		p = filepath.Join(base, p)
	}
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// fileHash is the sha256 of a regular file's content (following links:
// what runs is what the link points at); false for anything else.
func fileHash(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", false
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

package tools

import (
	"os"
	"path/filepath"
	"strings"
)

// resolvePath turns a tool's path argument into a clean absolute path.
// Relative paths resolve against root; "" means root; "~/" is the home dir.
func resolvePath(root, p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return filepath.Clean(root)
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	return filepath.Clean(p)
}

// relToRoot returns abs relative to root (slash-separated) when it is inside
// root, and ok=false otherwise.
func relToRoot(root, abs string) (rel string, ok bool) {
	r, err := filepath.Rel(filepath.Clean(root), abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// displayPath is how a path is shown to the model: project-relative when
// inside the root, absolute otherwise.
func displayPath(root, abs string) string {
	if rel, ok := relToRoot(root, abs); ok {
		return rel
	}
	return abs
}

// splitParts splits a slash-separated relative path into its elements;
// "." or "" gives none.
func splitParts(rel string) []string {
	if rel == "" || rel == "." {
		return nil
	}
	return strings.Split(rel, "/")
}

// suggestNames returns a hint naming entries of abs's directory whose names
// are close to abs's base name, or "" when there are none.
func suggestNames(abs string) string {
	dir, base := filepath.Split(abs)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	want := strings.ToLower(base)
	wantStem := strings.TrimSuffix(want, filepath.Ext(want))
	var near []string
	for _, e := range ents {
		name := strings.ToLower(e.Name())
		stem := strings.TrimSuffix(name, filepath.Ext(name))
		if name == want || stem == wantStem || editDistance(name, want) <= max(2, len(want)/4) {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			near = append(near, n)
			if len(near) == 5 {
				break
			}
		}
	}
	if len(near) == 0 {
		return ""
	}
	return "; did you mean: " + strings.Join(near, ", ") + "?"
}

// editDistance is the Levenshtein distance between short strings.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b)) // too long to be a typo worth computing
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

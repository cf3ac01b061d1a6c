package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// gitFinder finds the nested repositories of a project (vendor/x/.git,
// worktrees' .git files): their hooks and config are as dangerous to
// hand to a command as the top one's. Walking a large tree takes time, so
// the list is kept and refreshed in the background once it is older than
// gitRefresh; a repository that appears meanwhile is protected from the
// next refresh on.
type gitFinder struct {
	mu    sync.Mutex
	roots map[string]*gitList
}

type gitList struct {
	at         time.Time
	paths      []string
	refreshing bool
}

const (
	gitRefresh  = 10 * time.Second
	gitWalkDirs = 20000 // directories looked at per walk, at most
)

func (f *gitFinder) nested(root string) []string {
	f.mu.Lock()
	if f.roots == nil {
		f.roots = map[string]*gitList{}
	}
	l := f.roots[root]
	if l == nil {
		f.mu.Unlock()
		paths := findNestedGit(root, gitWalkDirs)
		f.mu.Lock()
		f.roots[root] = &gitList{at: time.Now(), paths: paths}
		f.mu.Unlock()
		return paths
	}
	paths := l.paths
	if time.Since(l.at) > gitRefresh && !l.refreshing {
		l.refreshing = true
		go func() {
			p := findNestedGit(root, gitWalkDirs)
			f.mu.Lock()
			l.paths, l.at, l.refreshing = p, time.Now(), false
			f.mu.Unlock()
		}()
	}
	f.mu.Unlock()
	return paths
}

// findNestedGit lists every .git (directory or file) below root but
// root's own, without following symbolic links, looking at no more than
// limit directories.
func findNestedGit(root string, limit int) []string {
	var out []string
	seen := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() && d.Name() != ".git" {
			return nil
		}
		if d.Name() == ".git" && p != root {
			if filepath.Dir(p) != root {
				out = append(out, p)
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if p != root && filepath.Dir(p) == root && d.Name() == ".agent" {
			return filepath.SkipDir
		}
		if seen++; seen > limit {
			return filepath.SkipAll
		}
		return nil
	})
	return out
}

// gitOnlyReadOnly are the parts of the top .git that stay read-only for a
// git-only line (which may write the rest): what runs or redirects code.
var gitOnlyReadOnly = []string{"hooks", "config", "commondir", "config.worktree", "modules", "worktrees", "info/attributes"}

// protection is what a workspace-write command's policy needs from the
// disk: the protected paths that exist (bound read-only) and those that
// do not (removed if the command creates them) — but those a person
// approved writing (Policy.Writable), which the command may write.
func protection(pol Policy, nested []string) (readOnly, absent []string) {
	if pol.Level != WorkspaceWrite || pol.Root == "" {
		return nil, nil
	}
	for _, n := range protectedNames {
		p := filepath.Join(pol.Root, n)
		if n == ".agent" && pol.State != "" {
			p = pol.State
		}
		if covered(p, pol.Writable) {
			continue // a person approved writing it: it is not protected from this command
		}
		fi, err := os.Lstat(p)
		if err != nil {
			if covered(p, []string{pol.Root}) {
				absent = append(absent, p)
			}
			continue
		}
		if n == ".git" && pol.GitOnly && fi.IsDir() {
			for _, sub := range gitOnlyReadOnly {
				if _, err := os.Lstat(filepath.Join(p, sub)); err == nil {
					readOnly = append(readOnly, filepath.Join(p, sub))
				}
			}
			continue
		}
		readOnly = append(readOnly, p)
	}
	for _, n := range nested {
		if !covered(n, pol.Writable) {
			readOnly = append(readOnly, n)
		}
	}
	return readOnly, absent
}

// covered: p is one of dirs or below one.
func covered(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

package permission

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSymlinks matches Linux's limit on links followed in one lookup.
const maxSymlinks = 40

// realPath resolves p as the kernel would when opening it: component by
// component, following every symlink (also a dangling one as the last
// component, which a write would create the target of) and applying ".."
// to the resolved directory, not lexically. The part of the path that does
// not exist is appended as written. p must be absolute.
func realPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("resolve %s: not an absolute path", p)
	}
	queue := strings.Split(filepath.ToSlash(p), "/")
	cur := string(filepath.Separator)
	links := 0
	missing := false // a component did not exist: no more links below it
	for len(queue) > 0 {
		comp := queue[0]
		queue = queue[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, comp)
		if missing {
			cur = next
			continue
		}
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			missing = true
			cur = next
			continue
		}
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		if links > maxSymlinks {
			return "", fmt.Errorf("resolve %s: too many symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		queue = append(strings.Split(filepath.ToSlash(target), "/"), queue...)
	}
	return cur, nil
}

// within reports whether p is dir or below it. Both are clean absolute
// paths. It is case-sensitive: on Linux /Proj is another directory than
// /proj, and treating it as inside would be unsafe.
func within(p, dir string) bool {
	if p == dir || dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, dir) && len(p) > len(dir) && p[len(dir)] == filepath.Separator
}

// place is where a path lands, judged against the project.
type place struct {
	given    string // as given, cleaned and absolute
	real     string // resolved; "" when it could not be resolved
	rel      string // project-relative slash path of real when inside, else ""
	inside   bool
	gitDir   bool // inside a .git directory, or the .git file itself
	agentCfg bool // Polly's project settings or an agent instruction file
	database bool // Polly's store
	why      string
}

// placer judges paths against one project.
type placer struct {
	root     string // as configured, clean
	realRoot string
	state    string // real path of the .agent directory
	home     string
}

func newPlacer(root, stateDir string) placer {
	pl := placer{root: filepath.Clean(root)}
	if r, err := realPath(pl.root); err == nil {
		pl.realRoot = r
	} else {
		pl.realRoot = pl.root
	}
	if stateDir == "" {
		stateDir = filepath.Join(pl.root, ".agent")
	}
	if s, err := realPath(filepath.Clean(stateDir)); err == nil {
		pl.state = s
	} else {
		pl.state = filepath.Clean(stateDir)
	}
	pl.home, _ = os.UserHomeDir()
	return pl
}

// abs makes p absolute against dir without cleaning it: "a/link/../b"
// must keep its ".." for realPath. "~" and "~/…" are the home directory.
func (pl placer) abs(p, dir string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if pl.home != "" {
			return pl.home + string(filepath.Separator) + strings.TrimPrefix(p[1:], "/")
		}
	}
	if filepath.IsAbs(p) {
		return p
	}
	return dir + string(filepath.Separator) + p
}

// place judges an absolute path. The lexical form and the resolved form
// are both checked for the protected names: a .git file in a worktree
// names a directory elsewhere, and a symlink can point into .git.
func (pl placer) place(p string) place {
	real, err := realPath(p)
	if err != nil {
		return place{given: filepath.Clean(p), why: err.Error()}
	}
	return pl.fill(p, real)
}

func (pl placer) fill(p, real string) place {
	pl0 := place{given: filepath.Clean(p), real: real}
	pl0.inside = within(real, pl.realRoot)
	if pl0.inside {
		if rel, err := filepath.Rel(pl.realRoot, real); err == nil {
			pl0.rel = filepath.ToSlash(rel)
		}
	}
	for _, cand := range []string{pl0.given, real} {
		if pl.isDatabase(cand) {
			pl0.database = true
		}
		if hasGitComponent(pl, cand) {
			pl0.gitDir = true
		}
		if pl.isAgentConfig(cand) {
			pl0.agentCfg = true
		}
	}
	return pl0
}

// instructionFiles are files at the project root that other agents (and a
// future Polly) read as instructions or settings; lower case.
var instructionFiles = map[string]bool{"agents.md": true, "claude.md": true, "claude.local.md": true, ".mcp.json": true}

// isAgentConfig: Polly's .agent directory (its config.json decides
// providers and permissions), .mcp.json, and agent instruction files at the
// project root (AGENTS.md, CLAUDE.md, .agents/, .claude/, .codex/,
// .opencode/: skills load from them). A write there
// could reconfigure the next run, so it is protected like .git. Case is
// ignored, as a case-insensitive file system would.
func (pl placer) isAgentConfig(p string) bool {
	if within(p, pl.state) {
		return true
	}
	for _, r := range []string{pl.realRoot, pl.root} {
		if !within(p, r) || p == r {
			continue
		}
		rel, err := filepath.Rel(r, p)
		if err != nil {
			continue
		}
		comps := strings.Split(filepath.ToSlash(rel), "/")
		switch first := strings.ToLower(comps[0]); {
		case strings.Contains(" .agent .agents .claude .codex .opencode ", " "+first+" "): // skills load from the last four
			return true
		case len(comps) == 1 && instructionFiles[first]:
			return true
		}
	}
	return false
}

// isDatabase: .agent/polly.db and its -wal, -shm and -journal files. Case
// is ignored, as a case-insensitive file system would.
func (pl placer) isDatabase(p string) bool {
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if !strings.EqualFold(dir, pl.state) && !strings.EqualFold(dir, filepath.Join(pl.root, ".agent")) {
		return false
	}
	return len(base) >= len("polly.db") && strings.EqualFold(base[:len("polly.db")], "polly.db")
}

// hasGitComponent: a path component named .git below the project root (or
// anywhere, for paths outside it): hooks, config and objects there decide
// what git runs. Case is ignored, as a case-insensitive file system would.
func hasGitComponent(pl placer, p string) bool {
	rel := p
	for _, r := range []string{pl.realRoot, pl.root} {
		if within(p, r) {
			if x, err := filepath.Rel(r, p); err == nil {
				rel = x
			}
			break
		}
	}
	for _, comp := range strings.Split(filepath.ToSlash(rel), "/") {
		if strings.EqualFold(comp, ".git") {
			return true
		}
	}
	return false
}

// covers reports whether removing or changing everything below dir would
// touch the protected path p (rm -rf . removes .agent/polly.db).
func covers(dir, p string) bool { return within(p, dir) }

package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

const (
	listDirCap     = 500
	globCap        = 200
	grepCap        = 200
	grepLineWidth  = 400     // bytes of a matching line shown
	grepMaxLine    = 1 << 20 // longer lines are matched on their first MiB only
	binarySniffLen = 8 << 10
)

// ignoreRules are the .gitignore patterns in force in one directory. Domains
// of the patterns are relative to base.
type ignoreRules struct {
	base string
	ps   []gitignore.Pattern
}

// newIgnoreRules collects the rules that apply inside dir: the project's
// .git/info/exclude and every .gitignore from the project root down to dir.
// Outside the root, or when dir itself is ignored (the model asked for it by
// name), dir becomes the base and only its own rules apply.
func newIgnoreRules(root, dir string) ignoreRules {
	rel, inside := relToRoot(root, dir)
	if !inside {
		return ignoreRules{base: dir}.enter(nil)
	}
	r := ignoreRules{base: root}.load(filepath.Join(root, ".git", "info", "exclude"), nil).enter(nil)
	parts := splitParts(rel)
	for i := range parts {
		if parts[i] == ".git" || r.ignored(parts[:i+1], true) {
			return ignoreRules{base: dir}.enter(nil)
		}
		r = r.enter(parts[:i+1])
	}
	return r
}

// enter adds the .gitignore of the directory at parts (relative to base).
func (r ignoreRules) enter(parts []string) ignoreRules {
	return r.load(filepath.Join(r.base, filepath.Join(parts...), ".gitignore"), parts)
}

func (r ignoreRules) load(file string, domain []string) ignoreRules {
	data, err := os.ReadFile(file)
	if err != nil {
		return r // no file (the usual case) or unreadable: nothing to add
	}
	// Cap the capacity so appends never write into a parent's slice.
	ps := r.ps[:len(r.ps):len(r.ps)]
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	r.ps = ps
	return r
}

// ignored reports whether the entry at parts (relative to base) is ignored.
// Later patterns win, as in git.
func (r ignoreRules) ignored(parts []string, isDir bool) bool {
	for i := len(r.ps) - 1; i >= 0; i-- {
		if m := r.ps[i].Match(parts, isDir); m != gitignore.NoMatch {
			return m == gitignore.Exclude
		}
	}
	return false
}

// partsFrom returns dir's path elements relative to base.
func partsFrom(base, dir string) []string {
	rel, err := filepath.Rel(base, dir)
	if err != nil {
		return nil
	}
	return splitParts(filepath.ToSlash(rel))
}

// walkFunc is called for each entry; depth is 1 for start's children. It
// may return fs.SkipDir (for a directory: don't descend) or fs.SkipAll.
type walkFunc func(abs string, d fs.DirEntry, depth int) error

// walkTree visits every entry below the directory start that .gitignore does
// not exclude, depth first in lexical order. .git is skipped and symlinked
// directories are not followed (no cycles).
func walkTree(ctx context.Context, root, start string, fn walkFunc) error {
	rules := newIgnoreRules(root, start)
	parts := partsFrom(rules.base, start)
	err := walkDir(ctx, rules, start, parts, len(parts), fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func walkDir(ctx context.Context, rules ignoreRules, dir string, parts []string, top int, fn walkFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil && len(ents) == 0 {
		if len(parts) == top {
			return fmt.Errorf("read directory %s: %w", dir, err)
		}
		return nil // an unreadable subdirectory is skipped, not fatal
	}
	depth := len(parts) - top + 1
	for _, e := range ents {
		name := e.Name()
		if name == ".git" {
			continue
		}
		// parts is reused as a stack: each level writes only its own slot.
		child := append(parts, name)
		if rules.ignored(child, e.IsDir()) {
			continue
		}
		abs := filepath.Join(dir, name)
		err := fn(abs, e, depth)
		if err == fs.SkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if e.IsDir() {
			if err := walkDir(ctx, rules.enter(child), abs, child, top, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// statDir checks that p is an existing directory, with errors that tell the
// model what to do instead.
func statDir(root, abs string) error {
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory %s does not exist%s", displayPath(root, abs), suggestNames(abs))
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", displayPath(root, abs), err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is a file, not a directory; use read_file to read it", displayPath(root, abs))
	}
	return nil
}

type listDirArgs struct {
	Path string `json:"path,omitempty" jsonschema:"directory to list, relative to the project root; default is the root"`
}

func listDir(_ context.Context, root string, a listDirArgs) (Result, error) {
	dir := resolvePath(root, a.Path)
	if err := statDir(root, dir); err != nil {
		return Result{}, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil && len(ents) == 0 {
		return Result{}, fmt.Errorf("read directory %s: %w", displayPath(root, dir), err)
	}
	rules := newIgnoreRules(root, dir)
	parts := partsFrom(rules.base, dir)
	var names []string
	hidden := 0
	for _, e := range ents {
		isDir := e.IsDir()
		if !isDir && e.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.IsDir() {
				isDir = true
			}
		}
		if e.Name() == ".git" || rules.ignored(append(parts, e.Name()), isDir) {
			hidden++
			continue
		}
		n := e.Name()
		if isDir {
			n += "/"
		}
		names = append(names, n)
	}
	var b strings.Builder
	header := displayPath(root, dir)
	if header == "" {
		header = "."
	}
	fmt.Fprintf(&b, "%s/\n", strings.TrimSuffix(header, "/"))
	for i, n := range names {
		if i == listDirCap {
			break
		}
		b.WriteString(n)
		b.WriteByte('\n')
	}
	switch {
	case len(names) == 0:
		b.WriteString("(empty)\n")
	case len(names) > listDirCap:
		fmt.Fprintf(&b, "[%d of %d entries shown; use glob with a narrower pattern to find the rest]\n", listDirCap, len(names))
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "(%d hidden: .git or .gitignored)\n", hidden)
	}
	return Result{Output: b.String()}, nil
}

type globArgs struct {
	Pattern string `json:"pattern" jsonschema:"glob such as **/*.go or src/*.ts or *.{js,ts}; ** matches any number of directories"`
	Path    string `json:"path,omitempty" jsonschema:"directory the pattern is relative to; default is the project root"`
}

func globFiles(ctx context.Context, root string, a globArgs) (Result, error) {
	pattern := strings.TrimPrefix(filepath.ToSlash(strings.TrimSpace(a.Pattern)), "./")
	if pattern == "" {
		return Result{}, errors.New("pattern is empty; give a glob such as **/*.go")
	}
	if !doublestar.ValidatePattern(pattern) {
		return Result{}, fmt.Errorf("invalid glob pattern %q (check unclosed [ or {)", a.Pattern)
	}
	// Start the walk at the pattern's literal prefix: src/**/*.go walks src only.
	base, pat := doublestar.SplitPattern(pattern)
	dir := resolvePath(root, a.Path)
	if filepath.IsAbs(base) {
		dir = filepath.Clean(base)
	} else if base != "." {
		dir = filepath.Join(dir, base)
	}
	if err := statDir(root, dir); err != nil {
		return Result{}, err
	}
	// Without ** a pattern has a fixed depth; don't walk deeper than that.
	maxDepth := -1
	if !strings.Contains(pat, "**") {
		maxDepth = strings.Count(pat, "/") + 1
	}
	type hit struct {
		path string
		mod  time.Time
	}
	var hits []hit
	err := walkTree(ctx, root, dir, func(abs string, d fs.DirEntry, depth int) error {
		if d.IsDir() {
			if maxDepth >= 0 && depth >= maxDepth {
				return fs.SkipDir
			}
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(abs, dir), string(filepath.Separator)))
		if !doublestar.MatchUnvalidated(pat, rel) {
			return nil
		}
		var mod time.Time
		if fi, err := d.Info(); err == nil {
			mod = fi.ModTime()
		}
		hits = append(hits, hit{displayPath(root, abs), mod})
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("glob %s: %w", a.Pattern, err)
	}
	if len(hits) == 0 {
		msg := fmt.Sprintf("no files match %q in %s", a.Pattern, shownDir(root, dir))
		if !strings.Contains(pattern, "/") {
			msg += fmt.Sprintf(" (a pattern without / matches only directly in that directory; try **/%s)", pattern)
		}
		return Result{Output: msg}, nil
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if !hits[i].mod.Equal(hits[j].mod) {
			return hits[i].mod.After(hits[j].mod)
		}
		return hits[i].path < hits[j].path
	})
	var b strings.Builder
	for i, h := range hits {
		if i == globCap {
			break
		}
		b.WriteString(h.path)
		b.WriteByte('\n')
	}
	if len(hits) > globCap {
		fmt.Fprintf(&b, "[%d files matched; showing the %d newest. Narrow the pattern or path to see the rest]\n", len(hits), globCap)
	}
	return Result{Output: b.String()}, nil
}

func shownDir(root, abs string) string {
	if d := displayPath(root, abs); d != "" && d != "." {
		return d
	}
	return "the project root"
}

type grepArgs struct {
	Pattern string `json:"pattern" jsonschema:"Go RE2 regular expression matched per line, e.g. func\\s+New or (?i)todo; escape literal ( [ . * + ?"`
	Path    string `json:"path,omitempty" jsonschema:"file or directory to search; default is the project root"`
	Glob    string `json:"glob,omitempty" jsonschema:"only search files matching this glob, e.g. *.go or src/**/*.ts"`
}

func grep(ctx context.Context, root string, a grepArgs) (Result, error) {
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return Result{}, fmt.Errorf("invalid regex %q: %v (Go RE2 syntax: no lookaround or backreferences; escape literal characters such as ( [ { . with \\)",
			a.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	filter := strings.TrimPrefix(filepath.ToSlash(a.Glob), "./")
	if filter != "" && !doublestar.ValidatePattern(filter) {
		return Result{}, fmt.Errorf("invalid glob %q (check unclosed [ or {)", a.Glob)
	}
	target := resolvePath(root, a.Path)
	fi, err := os.Stat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, fmt.Errorf("path %s does not exist%s", displayPath(root, target), suggestNames(target))
	}
	if err != nil {
		return Result{}, fmt.Errorf("stat %s: %w", displayPath(root, target), err)
	}
	g := &grepper{re: re, root: root, buf: bufio.NewReaderSize(nil, 64<<10)}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return Result{}, fmt.Errorf("%s is not a regular file (%s)", displayPath(root, target), fi.Mode().Type())
		}
		binary, err := g.file(target)
		if err != nil {
			return Result{}, err
		}
		if binary {
			return Result{}, fmt.Errorf("%s is a binary file", displayPath(root, target))
		}
		return g.result(a.Pattern, displayPath(root, target)), nil
	}
	err = walkTree(ctx, root, target, func(abs string, d fs.DirEntry, _ int) error {
		if d.IsDir() || !isRegular(abs, d) {
			return nil
		}
		if filter != "" && !globFilter(filter, root, target, abs) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := g.file(abs); err != nil {
			return nil // unreadable or vanished file: skip it like grep -s
		}
		if g.capped {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("grep %s: %w", a.Pattern, err)
	}
	return g.result(a.Pattern, shownDir(root, target)), nil
}

// isRegular reports whether d is a regular file or a symlink to one; FIFOs
// and devices would block or never end.
func isRegular(abs string, d fs.DirEntry) bool {
	if d.Type()&fs.ModeSymlink != 0 {
		fi, err := os.Stat(abs)
		return err == nil && fi.Mode().IsRegular()
	}
	return d.Type().IsRegular()
}

// globFilter applies grep's glob: a pattern without / matches the file name,
// otherwise the path relative to the search directory or to the root.
func globFilter(filter, root, dir, abs string) bool {
	if !strings.Contains(filter, "/") {
		return doublestar.MatchUnvalidated(filter, filepath.Base(abs))
	}
	if rel, err := filepath.Rel(dir, abs); err == nil && doublestar.MatchUnvalidated(filter, filepath.ToSlash(rel)) {
		return true
	}
	rel, ok := relToRoot(root, abs)
	return ok && doublestar.MatchUnvalidated(filter, rel)
}

// grepper holds the state of one search: matches so far and a reused reader.
type grepper struct {
	re     *regexp.Regexp
	root   string
	buf    *bufio.Reader
	line   []byte // assembles lines longer than the reader's buffer
	out    strings.Builder
	count  int
	capped bool
}

// file searches one file; it reports binary files without searching them.
func (g *grepper) file(abs string) (binary bool, err error) {
	f, err := os.Open(abs)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", displayPath(g.root, abs), err)
	}
	defer f.Close()
	g.buf.Reset(f)
	if head, _ := g.buf.Peek(binarySniffLen); bytes.IndexByte(head, 0) >= 0 {
		return true, nil
	}
	shown := displayPath(g.root, abs)
	for n := 1; ; n++ {
		line, err := g.readLine()
		if len(line) > 0 || err == nil {
			if loc := g.re.FindIndex(line); loc != nil {
				if g.count == grepCap {
					g.capped = true
					return false, nil
				}
				g.count++
				fmt.Fprintf(&g.out, "%s:%d: %s\n", shown, n, excerpt(line, loc[0], grepLineWidth))
			}
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read %s: %w", shown, err)
		}
	}
}

// readLine returns the next line without its newline, keeping at most
// grepMaxLine bytes of it.
func (g *grepper) readLine() ([]byte, error) {
	frag, err := g.buf.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return trimEOL(frag), err
	}
	g.line = append(g.line[:0], frag...)
	for err == bufio.ErrBufferFull {
		frag, err = g.buf.ReadSlice('\n')
		if room := grepMaxLine - len(g.line); room > 0 {
			g.line = append(g.line, frag[:min(room, len(frag))]...)
		}
	}
	return trimEOL(g.line), err
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

func (g *grepper) result(pattern, where string) Result {
	if g.count == 0 {
		return Result{Output: fmt.Sprintf("no matches for %q in %s", pattern, where)}
	}
	if g.capped {
		fmt.Fprintf(&g.out, "[stopped at %d matches; more exist. Narrow the pattern, path or glob]\n", grepCap)
	}
	return Result{Output: g.out.String()}
}

// excerpt shows at most width bytes of line, around the match at start when
// the line is long, cut on UTF-8 boundaries with … marking the cuts.
func excerpt(line []byte, start, width int) string {
	if len(line) <= width {
		return string(line)
	}
	from := max(0, start-width/4)
	to := min(len(line), from+width)
	for from > 0 && !utf8.RuneStart(line[from]) {
		from--
	}
	for to < len(line) && !utf8.RuneStart(line[to]) {
		to--
	}
	s := string(line[from:to])
	if from > 0 {
		s = "…" + s
	}
	if to < len(line) {
		s += fmt.Sprintf("… [line is %d bytes]", len(line))
	}
	return s
}

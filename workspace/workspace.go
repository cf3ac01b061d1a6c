package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"polly/workspace/atomicfile"

	"github.com/dustin/go-humanize"
)

// Names of the files the workspace is built around, relative to its root.
const (
	SoulFile            = "SOUL.md"
	ToolsFile           = "TOOLS.md"
	AgentsFile          = "AGENTS.md"
	MemoryFile          = "MEMORY.md"
	LearningsFile       = ".learnings/LEARNINGS.md"
	ErrorsFile          = ".learnings/ERRORS.md"
	FeatureRequestsFile = ".learnings/FEATURE_REQUESTS.md"
	LogDir              = "memory"
	LearningsDir        = ".learnings"

	lockFile = ".polly.lock"
	// readCap bounds what Read returns, so one workspace_read cannot flood the context.
	readCap = 256 << 10
)

// RequiredFiles lists the files the template must provide.
func RequiredFiles() []string {
	return []string{
		SoulFile, ToolsFile, AgentsFile, MemoryFile,
		LearningsFile, ErrorsFile, FeatureRequestsFile,
		LogDir + "/README.md",
	}
}

// Init creates dir and every file of template that is missing in it, plus the
// memory/ and .learnings/ directories. An existing file is never touched, so a
// user's edits survive; a deleted file comes back (empty it to switch it off).
// created lists the new files and directories (directories end in "/"),
// relative to dir.
func Init(template fs.FS, dir string) (created []string, err error) {
	if dir == "" {
		return nil, errors.New("init workspace: no directory given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("init workspace: %w", err)
	}
	for _, d := range []string{LogDir, LearningsDir} {
		made, err := mkdir(filepath.Join(dir, d))
		if err != nil {
			return created, fmt.Errorf("init workspace: %w", err)
		}
		if made {
			created = append(created, d+"/")
		}
	}
	if template == nil {
		return created, nil
	}
	err = fs.WalkDir(template, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			made, err := mkdir(target)
			if made {
				created = append(created, name+"/")
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		made, err := copyNew(template, name, target)
		if made {
			created = append(created, name)
		}
		return err
	})
	if err != nil {
		return created, fmt.Errorf("init workspace %s: %w", dir, err)
	}
	return created, nil
}

func mkdir(p string) (bool, error) {
	err := os.Mkdir(p, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := os.Stat(p); serr == nil && fi.IsDir() {
			return false, nil
		}
		return false, fmt.Errorf("%s exists and is not a directory", p)
	}
	return err == nil, err
}

// copyNew writes template file name to target unless target exists: a
// file another process created meanwhile is never replaced, and a crash
// never leaves half a file (atomicfile.WriteNew).
func copyNew(template fs.FS, name, target string) (bool, error) {
	if _, err := os.Lstat(target); err == nil {
		return false, nil
	}
	data, err := fs.ReadFile(template, name)
	if err != nil {
		return false, err
	}
	return atomicfile.WriteNew(target, data, 0o644)
}

// Workspace is an initialised workspace directory. It is safe for concurrent
// use.
type Workspace struct {
	dir      string // absolute, as given
	real     string // dir with symlinks resolved, for containment checks
	template fs.FS  // to recreate MEMORY.md or a log's shape when deleted
	now      func() time.Time
	project  string // the daily log's tag for this process's project ("" : none)

	writeMu sync.Mutex // one writer in this process; flock covers other processes

	cacheMu sync.Mutex
	cache   map[string]cached
	prompts map[string]assembled // the last system prompt per persona and project
}

// Open initialises dir from template (see Init) and returns the workspace.
// dir must already have "~" expanded.
func Open(dir string, template fs.FS) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	if _, err := Init(template, abs); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	return &Workspace{
		dir:      abs,
		real:     real,
		template: template,
		now:      time.Now,
		cache:    make(map[string]cached),
		prompts:  make(map[string]assembled),
	}, nil
}

// SetProject tags this process's daily-log entries with the project in
// dir (ProjectTag): the workspace is shared by every project, and a
// prompt shows only its own project's entries. Call it once, before use.
func (w *Workspace) SetProject(dir string) { w.project = ProjectTag(dir) }

// Dir is the workspace's absolute path.
func (w *Workspace) Dir() string { return w.dir }

func (w *Workspace) path(rel string) string {
	return filepath.Join(w.dir, filepath.FromSlash(rel))
}

// FileInfo describes one workspace file for the memory inspector.
type FileInfo struct {
	Name    string // relative to the workspace, slash-separated: "memory/2026-11-25.md"
	Path    string // absolute
	Size    int64
	ModTime time.Time
}

// Files lists the workspace files in the order the memory inspector shows
// them: SOUL.md, TOOLS.md, AGENTS.md, MEMORY.md, the .learnings/ files, the
// daily logs newest first (other files of memory/ after them), then what
// polly gc moved to archive/. Missing files are left out.
func (w *Workspace) Files() ([]FileInfo, error) {
	var out []FileInfo
	add := func(rel string) {
		fi, err := os.Stat(w.path(rel))
		if err != nil || !fi.Mode().IsRegular() {
			return
		}
		out = append(out, FileInfo{Name: rel, Path: w.path(rel), Size: fi.Size(), ModTime: fi.ModTime()})
	}
	for _, f := range []string{SoulFile, ToolsFile, AgentsFile, MemoryFile} {
		add(f)
	}

	learn, err := w.mdFiles(LearningsDir)
	if err != nil {
		return nil, err
	}
	known := []string{LearningsFile, ErrorsFile, FeatureRequestsFile}
	for _, f := range known {
		if slices.Contains(learn, f) {
			add(f)
		}
	}
	for _, f := range learn {
		if !slices.Contains(known, f) {
			add(f)
		}
	}

	logs, err := w.mdFiles(LogDir)
	if err != nil {
		return nil, err
	}
	var daily, other []string
	for _, f := range logs {
		if isLogName(path.Base(f)) {
			daily = append(daily, f)
		} else {
			other = append(other, f)
		}
	}
	slices.Reverse(daily) // names sort by date; newest first
	for _, f := range append(daily, other...) {
		add(f)
	}
	archived, err := w.mdFiles(ArchiveDir) // what polly gc moved out, in reverse name order
	if err != nil {
		return nil, err
	}
	slices.Reverse(archived)
	for _, f := range archived {
		add(f)
	}
	return out, nil
}

// mdFiles lists the *.md files of a workspace subdirectory, sorted by name.
func (w *Workspace) mdFiles(sub string) ([]string, error) {
	entries, err := os.ReadDir(w.path(sub))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list workspace %s: %w", sub, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			out = append(out, sub+"/"+e.Name())
		}
	}
	return out, nil
}

// isLogName reports whether name looks like "2026-11-25.md".
func isLogName(name string) bool {
	d, ok := strings.CutSuffix(name, ".md")
	if !ok {
		return false
	}
	_, err := time.Parse(time.DateOnly, d)
	return err == nil
}

// Read returns a workspace file for workspace_read. file is relative to the
// workspace ("MEMORY.md", "memory/2026-11-25.md") or an absolute path inside
// it. Paths that leave the workspace, directly or through a symlink, are
// refused. Files over 256 KB are cut with a note.
func (w *Workspace) Read(file string) (string, error) {
	p, err := w.resolve(file)
	if err != nil {
		return "", err
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("workspace_read: %s: %w", file, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("workspace_read: %s: %w", file, err)
	}
	if fi.IsDir() {
		var names []string
		if entries, err := os.ReadDir(p); err == nil {
			for _, e := range entries {
				if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
					names = append(names, e.Name())
				}
			}
		}
		return "", fmt.Errorf("workspace_read: %s is a directory; files in it: %s", file, strings.Join(names, ", "))
	}
	data, err := io.ReadAll(io.LimitReader(f, readCap))
	if err != nil {
		return "", fmt.Errorf("workspace_read: %s: %w", file, err)
	}
	s := string(data)
	if fi.Size() > readCap {
		s = cutAtLine(s)
		s += fmt.Sprintf("\n[%s is %s bytes; only the first 256 KB are shown]\n", file, humanize.Comma(fi.Size()))
	}
	return s, nil
}

// resolve maps a name given by the model to a real path inside the workspace.
func (w *Workspace) resolve(file string) (string, error) {
	file = strings.TrimSpace(file)
	if file == "" {
		return "", errors.New("workspace_read: file is empty; give a name such as MEMORY.md or .learnings/ERRORS.md")
	}
	p := filepath.FromSlash(file)
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.dir, p)
	}
	p = filepath.Clean(p)
	// Lexical check first, so "../../etc/passwd" is refused even if it does not exist.
	if !within(w.dir, p) && !within(w.real, p) {
		return "", fmt.Errorf("workspace_read: %s is outside the workspace %s", file, w.dir)
	}
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		files, _ := w.Files()
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.Name
		}
		return "", fmt.Errorf("workspace_read: %s does not exist; workspace files: %s", file, strings.Join(names, ", "))
	}
	if err != nil {
		return "", fmt.Errorf("workspace_read: %w", err)
	}
	if !within(w.real, real) {
		return "", fmt.Errorf("workspace_read: %s leads outside the workspace (symlink to %s)", file, real)
	}
	return real, nil
}

// within reports whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}

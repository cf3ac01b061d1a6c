package workspace

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
)

// Caps of the system prompt parts.
const (
	coreCap        = 16 << 10 // SOUL.md, TOOLS.md, AGENTS.md
	memoryCapBytes = 25 << 10
	memoryCapLines = 200
	projectCap     = 32 << 10
	// learningsReadCap bounds what is read of LEARNINGS.md and
	// FEATURE_REQUESTS.md to pick the few lines the prompt shows.
	learningsReadCap = 128 << 10
	nearCapPercent   = 80
	maxCacheItems    = 64
)

// PromptInput is what SystemPrompt needs besides the workspace files.
type PromptInput struct {
	PersonaPrompt string
	PersonaName   string
	ProjectDir    string    // the project root: its instruction files are read; "" skips them
	WorkDir       string    // where Polly was started, inside ProjectDir: instruction files down to here; "": the root
	Now           time.Time // picks today's and yesterday's logs; zero means now
}

// Prompt is an assembled system prompt and what went into it.
type Prompt struct {
	Text  string
	Parts []PromptPart
}

// PromptPart describes one loaded part, for the UI.
type PromptPart struct {
	Name      string // "SOUL.md", "persona", "memory/2026-11-25.md", "project AGENTS.md"
	Path      string // absolute; "" for the persona prompt
	Bytes     int    // bytes of the part's content in the prompt
	Truncated bool   // the file was cut to its cap
}

// MemoryBytes is how much of the prompt came from the memory files —
// MEMORY.md, the learnings and feature requests, the daily logs — as
// opposed to the instructions (SOUL, persona, TOOLS, AGENTS, the
// project's AGENTS.md): the token breakdown of `polly inspect` shows them
// apart.
func (p Prompt) MemoryBytes() int {
	n := 0
	for _, part := range p.Parts {
		switch {
		case part.Name == MemoryFile, part.Name == "learnings", part.Name == "feature requests", part.Name == "older logs",
			strings.HasPrefix(part.Name, LogDir+"/"):
			n += part.Bytes
		}
	}
	return n
}

// capSpec says how much of a file goes into the prompt.
type capSpec struct {
	bytes int
	lines int  // 0: no line cap
	tail  bool // keep the end (newest log entries) instead of the start
	near  bool // add a "tidy it" note at nearCapPercent
	hint  string
	// render, when set, turns what was read into the part's text and note
	// (summary lines instead of raw text); kind names it for the cache.
	render func(doc string, size int64) (text, note string)
	kind   string
	// imports: an instruction file, whose @path imports are found once
	// per read, not before every request.
	imports bool
}

// cached is a capped file as last read, valid while the file is unchanged.
type cached struct {
	info      fs.FileInfo
	text      string // the capped content, without note
	note      string // "" or the "[… only … shown]" line
	truncated bool
	imports   []string // the files it imports (spec.imports), resolved
}

// SystemPrompt assembles the system prompt in the order documented in the
// package comment. Files are re-read only when they change.
func (w *Workspace) SystemPrompt(in PromptInput) (Prompt, error) {
	now := in.Now
	if now.IsZero() {
		now = w.now()
	}
	pb := &promptBuilder{w: w}
	core := capSpec{bytes: coreCap, hint: "the rest is not loaded; keep this file short"}

	pb.workspaceFile(SoulFile, core)
	heading := "# Your persona"
	if in.PersonaName != "" {
		heading += ": " + in.PersonaName
	}
	pb.add("persona", "", heading, in.PersonaPrompt, "", false)
	pb.workspaceFile(ToolsFile, core)
	pb.workspaceFile(AgentsFile, core)
	pb.workspaceFile(MemoryFile, capSpec{
		bytes: memoryCapBytes, lines: memoryCapLines, near: true,
		hint: "read it with workspace_read; tidy it: merge duplicates, remove stale facts (polly gc moves the excess to archive/)",
	})
	pb.file("learnings", w.path(LearningsFile), fmt.Sprintf("# Learnings (%s — most-used and newest first)", w.path(LearningsFile)),
		capSpec{bytes: learningsReadCap, tail: true, render: renderLearnings, kind: "learnings"})
	pb.file("feature requests", w.path(FeatureRequestsFile),
		fmt.Sprintf("# Feature requests already filed for the user (%s — newest first; do not file them again)", w.path(FeatureRequestsFile)),
		capSpec{bytes: learningsReadCap, tail: true, render: renderFeatureRequests, kind: "features"})
	yesterday := now.AddDate(0, 0, -1).Format(time.DateOnly)
	if note := w.olderLogsNote(yesterday); note != "" {
		pb.add("older logs", w.path(LogDir), "# Daily logs of earlier days", note, "", false)
	}
	for _, day := range []struct{ label, date string }{
		{"yesterday", yesterday},
		{"today", now.Format(time.DateOnly)},
	} {
		rel := LogDir + "/" + day.date + ".md"
		p := w.path(rel)
		pb.file(rel, p, fmt.Sprintf("# Daily log: %s, %s — summary lines (%s)", day.label, day.date, p),
			capSpec{bytes: logReadCap, tail: true, render: renderLog(rel, ProjectTag(in.ProjectDir)), kind: "log\x00" + in.ProjectDir})
	}
	if in.ProjectDir != "" {
		pb.instructions(in.ProjectDir, cmp.Or(in.WorkDir, in.ProjectDir))
	}
	if pb.err != nil {
		return Prompt{}, pb.err
	}
	return w.assemble(in.PersonaName+"\x00"+in.ProjectDir+"\x00"+in.WorkDir, pb), nil
}

// instructions adds the project's instruction files, from the root down to
// the working directory: in each directory AGENTS.md, then CLAUDE.md (or
// .claude/CLAUDE.md; left out when it says exactly what AGENTS.md says),
// then CLAUDE.local.md, each followed by the files it imports with @path
// (up to maxImportHops deep, inside the project only, each file once).
func (pb *promptBuilder) instructions(root, dir string) {
	root, _ = filepath.Abs(root)
	dir, _ = filepath.Abs(dir)
	seen := map[string]bool{pb.w.path(AgentsFile): true} // started inside the workspace: loaded already
	for _, d := range instructionDirs(root, dir) {
		agents, agentsOK := pb.instruction(root, filepath.Join(d, "AGENTS.md"), "", seen)
		claude := filepath.Join(d, "CLAUDE.md")
		if !exists(claude) {
			claude = filepath.Join(d, ".claude", "CLAUDE.md")
		}
		if c, ok, _ := pb.w.load(claude, "CLAUDE.md", projectSpec); !(agentsOK && ok && c.text == agents) {
			pb.instruction(root, claude, "", seen)
		}
		pb.instruction(root, filepath.Join(d, "CLAUDE.local.md"), "", seen)
	}
}

// projectSpec caps each project instruction file.
var projectSpec = capSpec{bytes: projectCap, hint: "read the rest with read_file", imports: true}

// instruction adds one instruction file and, depth first, what it
// imports; it returns the file's (capped) text.
func (pb *promptBuilder) instruction(root, path, importedBy string, seen map[string]bool) (string, bool) {
	return pb.instructionAt(root, path, importedBy, seen, 0)
}

func (pb *promptBuilder) instructionAt(root, path, importedBy string, seen map[string]bool, hops int) (string, bool) {
	if pb.err != nil || seen[path] {
		return "", false
	}
	rel, _ := filepath.Rel(root, path)
	rel = filepath.ToSlash(rel)
	name, heading := "project "+rel, "# Project instructions: "+rel
	if importedBy != "" {
		name += " (imported by " + importedBy + ")"
		heading += ", imported by " + importedBy
	}
	c, ok, err := pb.w.load(path, name, projectSpec)
	if err != nil {
		pb.err = err
		return "", false
	}
	if !ok {
		return "", false
	}
	seen[path] = true
	note := c.note
	var later []string
	for _, imp := range c.imports {
		switch {
		case !inside(root, imp):
			note = joinNotes(note, fmt.Sprintf("[@%s is not imported: it is outside the project]", imp))
		case hops+1 > maxImportHops:
			note = joinNotes(note, fmt.Sprintf("[@%s is not imported: imports go at most %d files deep]", imp, maxImportHops))
		case !seen[imp] && exists(imp):
			later = append(later, imp)
		}
	}
	pb.add(name, path, fmt.Sprintf("%s (%s)", heading, path), c.text, note, c.truncated)
	for _, imp := range later {
		pb.instructionAt(root, imp, rel, seen, hops+1)
	}
	return c.text, true
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// assembled is a system prompt as last built and the pieces it was built
// from.
type assembled struct {
	pieces []string
	prompt Prompt
}

// assemble joins the builder's pieces, or returns the prompt last built
// under key when they are the same: the prompt is built before every
// request and its files rarely change, so the text (tens of KB) is not
// copied again, and callers comparing it with the last one find the same
// string at once. The pieces are the cached files' own strings, so the
// comparison is cheap. Parts is shared with earlier callers: read only.
func (w *Workspace) assemble(key string, pb *promptBuilder) Prompt {
	w.cacheMu.Lock()
	last, ok := w.prompts[key]
	w.cacheMu.Unlock()
	if ok && slices.Equal(last.pieces, pb.pieces) {
		return last.prompt
	}
	p := Prompt{Text: pb.text(), Parts: pb.parts}
	w.cacheMu.Lock()
	if len(w.prompts) >= maxCacheItems {
		clear(w.prompts)
	}
	w.prompts[key] = assembled{pieces: pb.pieces, prompt: p}
	w.cacheMu.Unlock()
	return p
}

// promptBuilder collects parts; the first error sticks and stops later reads.
type promptBuilder struct {
	w      *Workspace
	pieces []string // heading, text, note per part
	parts  []PromptPart
	err    error
}

func (pb *promptBuilder) workspaceFile(rel string, spec capSpec) {
	p := pb.w.path(rel)
	pb.file(rel, p, fmt.Sprintf("# Workspace memory: %s (%s)", rel, p), spec)
}

func (pb *promptBuilder) file(name, path, heading string, spec capSpec) {
	if pb.err != nil {
		return
	}
	c, ok, err := pb.w.load(path, name, spec)
	if err != nil {
		pb.err = err
		return
	}
	if ok {
		pb.add(name, path, heading, c.text, c.note, c.truncated)
	}
}

// add queues one part under its heading. Empty text (an emptied file, no
// persona prompt) adds nothing: emptying a file switches it off.
func (pb *promptBuilder) add(name, path, heading, text, note string, truncated bool) {
	if strings.TrimSpace(text) == "" {
		return
	}
	pb.pieces = append(pb.pieces, heading, strings.TrimRight(text, "\n"), note)
	pb.parts = append(pb.parts, PromptPart{Name: name, Path: path, Bytes: len(text), Truncated: truncated})
}

// text joins the queued parts, sized in one allocation.
func (pb *promptBuilder) text() string {
	n := 0
	for _, p := range pb.pieces {
		n += len(p) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for i := 0; i < len(pb.pieces); i += 3 {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(pb.pieces[i])
		b.WriteString("\n\n")
		b.WriteString(pb.pieces[i+1])
		if note := pb.pieces[i+2]; note != "" {
			b.WriteString("\n\n")
			b.WriteString(note)
		}
	}
	return b.String()
}

// load returns the capped content of path, from the cache when the file is
// unchanged. ok is false when the file is missing or not a regular file.
func (w *Workspace) load(path, name string, spec capSpec) (cached, bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return cached{}, false, nil
	}
	if err != nil {
		return cached{}, false, fmt.Errorf("system prompt: %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return cached{}, false, nil
	}
	key := fmt.Sprintf("%s\x00%d\x00%d\x00%t\x00%s", path, spec.bytes, spec.lines, spec.tail, spec.kind)
	w.cacheMu.Lock()
	c, hit := w.cache[key]
	w.cacheMu.Unlock()
	if hit && unchanged(c.info, fi) {
		return c, true, nil
	}

	c, err = readCapped(path, name, spec)
	if errors.Is(err, fs.ErrNotExist) {
		return cached{}, false, nil // deleted between Stat and Open
	}
	if err != nil {
		return cached{}, false, fmt.Errorf("system prompt: %w", err)
	}
	if spec.imports {
		c.imports = imports(c.text, filepath.Dir(path))
	}
	w.cacheMu.Lock()
	if len(w.cache) >= maxCacheItems {
		clear(w.cache) // old daily logs and projects pile up otherwise
	}
	w.cache[key] = c
	w.cacheMu.Unlock()
	return c, true, nil
}

// unchanged reports whether a cached read of old is still valid for cur.
// SameFile catches a file replaced by rename with the same size and mtime.
func unchanged(old, cur fs.FileInfo) bool {
	return old != nil && os.SameFile(old, cur) && old.Size() == cur.Size() && old.ModTime().Equal(cur.ModTime())
}

// markerSlack is how many times its cap is read of a file: provenance
// markers are taken out before the cap applies, as they cost no prompt
// space, so a file of short entries with long markers still fills its cap.
const markerSlack = 4

// readCapped reads path, shows it as the prompt does (promptView: markers
// out, entries of sessions that had read untrusted content flagged), keeps
// at most spec.bytes of that (the start, or the end when spec.tail) and
// builds the note that says what was left out.
func readCapped(path, name string, spec capSpec) (cached, error) {
	f, err := os.Open(path)
	if err != nil {
		return cached{}, fmt.Errorf("read %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return cached{}, fmt.Errorf("read %s: %w", name, err)
	}
	size := fi.Size()
	c := cached{info: fi}

	raw := int64(spec.bytes) * markerSlack
	off := int64(0)
	if spec.tail {
		off = max(size-raw, 0)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, off, min(size-off, raw)))
	if err != nil {
		return cached{}, fmt.Errorf("read %s: %w", name, err)
	}
	s := string(data)
	cut := off > 0 || int64(len(data)) < size
	if off > 0 { // start at a whole line (never mid-rune)
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	} else if int64(len(data)) < size {
		s = cutAtLine(s)
	}
	s = promptView(s)
	if len(s) > spec.bytes {
		cut = true
		if spec.tail {
			s = s[len(s)-spec.bytes:]
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
			}
		} else {
			s = cutAtLine(s[:spec.bytes])
		}
	}
	// The size the notes speak of: the text as shown, when it was all read.
	shown := int64(len(s))
	if cut {
		shown = size
	}

	if spec.render != nil {
		c.text, c.note = spec.render(s, shown)
		c.truncated = c.note != ""
		return c, nil
	}

	if spec.tail {
		if cut {
			c.truncated = true
			c.note = fmt.Sprintf("[%s is %s bytes; only the newest %s are shown — read the rest with workspace_read]",
				name, humanize.Comma(size), kb(spec.bytes))
		}
		c.text = s
		return c, nil
	}

	c.truncated = cut
	lines := strings.Count(s, "\n")
	if len(s) > 0 && !strings.HasSuffix(s, "\n") {
		lines++
	}
	if spec.lines > 0 && lines > spec.lines {
		s = firstLines(s, spec.lines)
		lines = spec.lines
		c.truncated = true
	}
	c.text = s

	limit := kb(spec.bytes)
	if spec.lines > 0 {
		limit = fmt.Sprintf("%d lines / %s", spec.lines, limit)
	}
	switch {
	case c.truncated:
		c.note = fmt.Sprintf("[%s is %s bytes; only the first %s are shown, the rest is in %s — %s]", name, humanize.Comma(size), limit, path, spec.hint)
	case spec.near:
		pct := 100 * int(shown) / spec.bytes
		if spec.lines > 0 {
			pct = max(pct, 100*lines/spec.lines)
		}
		if pct >= nearCapPercent {
			c.note = fmt.Sprintf("[%s is at %d%% of its cap (%d lines, %s bytes; cap %s) — tidy it soon: merge duplicates, remove stale facts]",
				name, pct, lines, humanize.Comma(shown), limit)
		}
	}
	return c, nil
}

// cutAtLine drops a partial last line, or at least a partial last rune.
func cutAtLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[:i+1]
	}
	for len(s) > 0 && !utf8.ValidString(s[max(len(s)-utf8.UTFMax, 0):]) {
		s = s[:len(s)-1]
	}
	return s
}

// firstLines returns the first n lines of s, each with its newline.
func firstLines(s string, n int) string {
	end := 0
	for range n {
		i := strings.IndexByte(s[end:], '\n')
		if i < 0 {
			return s
		}
		end += i + 1
	}
	return s[:end]
}

// kb formats a byte cap: 25600 → "25 KB".
func kb(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KB", n/1024)
	}
	return humanize.Comma(int64(n)) + " bytes"
}

package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"polly/workspace/atomicfile"
)

// Caps the tidy pass keeps the memory files under. MEMORY.md is brought
// back to 90% of its prompt cap so it does not hit the cap again the next
// day.
const (
	errorsCapEntries = 100
	memoryKeepLines  = memoryCapLines * 9 / 10
	memoryKeepBytes  = memoryCapBytes * 9 / 10
	ArchiveDir       = "archive"
)

// TidyFile is what the tidy pass did (or, dry, would do) to one file.
type TidyFile struct {
	Name    string // MemoryFile or ErrorsFile
	Merged  int    // duplicate entries merged into the one kept
	Moved   int    // entries moved to Archive
	Archive string // workspace-relative: "archive/ERRORS-2026-11-26.md"
}

// Changed reports whether the pass touched the file.
func (t TidyFile) Changed() bool { return t.Merged > 0 || t.Moved > 0 }

// Tidy merges duplicates in .learnings/ERRORS.md and MEMORY.md and moves
// the entries past their caps to a dated file in the workspace's archive/
// directory — never deleting any — leaving a line in the file that says
// what went where. ERRORS.md keeps the newest errorsCapEntries entries and
// one entry per tool and signature (the newest; older fixes for the same
// error are moved); MEMORY.md loses repeated facts of a section and, when
// over its cap, its oldest facts. With dry, nothing is written.
func (w *Workspace) Tidy(dry bool) ([]TidyFile, error) {
	day := w.now().Format(time.DateOnly)
	var out []TidyFile
	for _, f := range []struct {
		rel  string
		tidy func(doc, day string) (string, string, TidyFile)
	}{{ErrorsFile, tidyErrors}, {MemoryFile, tidyMemory}} {
		res := TidyFile{Name: f.rel}
		err := w.update(f.rel, func(old string, exists bool) (string, bool) {
			if !exists {
				return "", false
			}
			doc, moved, r := f.tidy(old, day)
			res = r
			res.Name = f.rel
			if dry || !r.Changed() {
				return "", false
			}
			if moved != "" {
				if err := w.appendArchive(r.Archive, moved); err != nil {
					res = TidyFile{Name: f.rel}
					return "", false
				}
			}
			return doc, true
		})
		if err != nil {
			return out, fmt.Errorf("tidy %s: %w", f.rel, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// appendArchive adds text to an archive file; the caller holds the
// workspace lock.
func (w *Workspace) appendArchive(rel, text string) error {
	p := w.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	old, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	doc := strings.TrimRight(string(old), "\n")
	if doc != "" {
		doc += "\n\n"
	}
	return atomicfile.Write(p, []byte(doc+text), 0o644)
}

// block is one "## " entry of a Markdown file, with its lines.
type block struct {
	head string
	text string // heading line and body, without trailing blank lines
}

// splitBlocks cuts doc into its preamble and its "## " entries.
func splitBlocks(doc string) (pre string, blocks []block) {
	lines := strings.Split(doc, "\n")
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "## ") {
		i++
	}
	pre = strings.Join(lines[:i], "\n")
	for i < len(lines) {
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "## ") {
			j++
		}
		blocks = append(blocks, block{head: lines[i], text: strings.TrimRight(strings.Join(lines[i:j], "\n"), "\n")})
		i = j
	}
	return pre, blocks
}

func tidyErrors(doc, day string) (string, string, TidyFile) {
	r := TidyFile{Archive: ArchiveDir + "/ERRORS-" + day + ".md"}
	pre, blocks := splitBlocks(doc)
	type parsed struct {
		b   block
		fix Fix
		ok  bool
	}
	ps := make([]parsed, len(blocks))
	for i, b := range blocks {
		fs := parseErrors(b.text)
		ps[i] = parsed{b: b, ok: len(fs) == 1}
		if ps[i].ok {
			ps[i].fix = fs[0]
		}
	}
	keep := make([]bool, len(ps))
	var moved []string
	seen := map[string]string{} // tool + signature → the kept entry's fix
	kept := 0
	for i := len(ps) - 1; i >= 0; i-- { // newest first
		p := ps[i]
		if !p.ok {
			keep[i] = true // not an entry this pass understands: leave it
			continue
		}
		key := p.fix.Tool + "\x00" + p.fix.Signature
		if fix, dup := seen[key]; dup {
			r.Merged++
			if oneLine(fix) != oneLine(p.fix.Fix) { // an older fix for the same error: archived, not lost
				moved = append(moved, p.b.text)
			}
			continue
		}
		if kept >= errorsCapEntries {
			r.Moved++
			moved = append(moved, p.b.text)
			continue
		}
		seen[key] = p.fix.Fix
		keep[i] = true
		kept++
	}
	if !r.Changed() {
		return doc, "", r
	}
	r.Moved = len(moved)
	slices.Reverse(moved)
	var b strings.Builder
	b.WriteString(strings.TrimRight(pre, "\n"))
	fmt.Fprintf(&b, "\n\n_%s: tidied by polly gc — %d duplicate entries merged, %d older entries moved to %s._\n", day, r.Merged, r.Moved, r.Archive)
	for i, p := range ps {
		if keep[i] {
			b.WriteString("\n" + p.b.text + "\n")
		}
	}
	archived := ""
	if len(moved) > 0 {
		archived = fmt.Sprintf("# Errors moved out of %s on %s\n\n%s\n", ErrorsFile, day, strings.Join(moved, "\n\n"))
	}
	return b.String(), archived, r
}

func tidyMemory(doc, day string) (string, string, TidyFile) {
	r := TidyFile{Archive: ArchiveDir + "/MEMORY-" + day + ".md"}
	lines := strings.Split(doc, "\n")
	type fact struct {
		line    int
		section string
		date    string // "" when undated
	}
	var facts []fact
	drop := make([]bool, len(lines))
	seen := map[string]bool{}
	section := ""
	for i, l := range outsideFences(lines) {
		if level, name := headingOf(l); level > 0 && level <= 2 {
			section = name
			if level == 1 {
				section = ""
			}
			continue
		}
		b, ok := cutBullet(l)
		if !ok || section == "" {
			continue
		}
		key := normHeading(section) + "\x00" + normFact(b)
		if seen[key] {
			drop[i] = true
			r.Merged++
			continue
		}
		seen[key] = true
		facts = append(facts, fact{line: i, section: section, date: stampOf(b)})
	}
	// Over the cap: the oldest dated facts go first, then undated ones from the top.
	// Sizes as the prompt counts them: provenance markers cost nothing there.
	size, count := len(stripMarkers(doc)), len(lines)
	for i := range drop {
		if drop[i] {
			size -= len(stripMarkers(lines[i])) + 1
			count--
		}
	}
	slices.SortStableFunc(facts, func(a, b fact) int {
		switch {
		case a.date == "" && b.date != "":
			return 1
		case a.date != "" && b.date == "":
			return -1
		}
		return strings.Compare(a.date, b.date)
	})
	movedBy := map[string][]string{}
	var order []string
	for _, f := range facts {
		if count <= memoryKeepLines && size <= memoryKeepBytes {
			break
		}
		drop[f.line] = true
		size -= len(stripMarkers(lines[f.line])) + 1
		count--
		r.Moved++
		if _, ok := movedBy[f.section]; !ok {
			order = append(order, f.section)
		}
		movedBy[f.section] = append(movedBy[f.section], lines[f.line])
	}
	if !r.Changed() {
		return doc, "", r
	}
	var kept []string
	for i, l := range lines {
		if !drop[i] {
			kept = append(kept, l)
		}
	}
	note := fmt.Sprintf("_%s: tidied by polly gc — %d duplicate facts merged, %d oldest facts moved to %s (over the cap of %d lines / %s)._",
		day, r.Merged, r.Moved, r.Archive, memoryCapLines, kb(memoryCapBytes))
	at := 0
	if len(kept) > 0 && strings.HasPrefix(kept[0], "# ") {
		at = 1
	}
	kept = slices.Insert(kept, at, "", note)
	archived := ""
	if r.Moved > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "# Facts moved out of %s on %s\n", MemoryFile, day)
		for _, s := range order {
			fmt.Fprintf(&b, "\n## %s\n%s\n", s, strings.Join(movedBy[s], "\n"))
		}
		archived = b.String()
	}
	return strings.Join(kept, "\n"), archived, r
}

// stampOf returns the date of a fact's " _(2026-11-25)_" stamp, or "".
func stampOf(fact string) string {
	t := strings.TrimSpace(fact)
	t = strings.TrimSpace(stripMarkers(t))
	if stripStamp(t) == t {
		return ""
	}
	return t[len(t)-len("2006-01-02)_") : len(t)-2]
}

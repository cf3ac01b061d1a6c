package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestSystemPromptOrderAndHeadings(t *testing.T) {
	w := open(t)
	project := t.TempDir()
	writeFile(t, filepath.Join(project, "AGENTS.md"), "Run make check before committing.\n")
	tag := ProjectTag(project)
	writeFile(t, w.path("memory/2026-11-24.md"), "# 2026-11-24\n\n- 09:00 ["+tag+"] yesterday's work\n")
	writeFile(t, w.path("memory/2026-11-25.md"), "# 2026-11-25\n\n- 09:00 ["+tag+"] today's work\n")
	writeFile(t, w.path("memory/2026-11-23.md"), "# 2026-11-23\n\nold work\n")

	p, err := w.SystemPrompt(PromptInput{PersonaPrompt: "You are coder.", PersonaName: "coder", ProjectDir: project, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	headings := []string{
		"# Workspace memory: SOUL.md (" + w.path(SoulFile) + ")",
		"# Your persona: coder\n\nYou are coder.",
		"# Workspace memory: TOOLS.md (" + w.path(ToolsFile) + ")",
		"# Workspace memory: AGENTS.md (" + w.path(AgentsFile) + ")",
		"# Workspace memory: MEMORY.md (" + w.path(MemoryFile) + ")",
		"# Daily logs of earlier days\n\n[1 older daily logs are not loaded (newest: memory/2026-11-23.md, …)",
		"# Daily log: yesterday, 2026-11-24 — summary lines (" + w.path("memory/2026-11-24.md") + ")",
		"# Daily log: today, 2026-11-25 — summary lines (" + w.path("memory/2026-11-25.md") + ")",
		"# Project instructions: AGENTS.md (" + filepath.Join(project, "AGENTS.md") + ")\n\nRun make check",
	}
	last := -1
	for _, h := range headings {
		i := strings.Index(p.Text, h)
		if i < 0 {
			t.Fatalf("heading %q missing from\n%s", h, p.Text)
		}
		if i <= last {
			t.Errorf("heading %q out of order", h)
		}
		last = i
	}
	if !strings.HasPrefix(p.Text, headings[0]) {
		t.Errorf("prompt does not start with SOUL.md")
	}
	if strings.Contains(p.Text, "old work") {
		t.Error("a log older than yesterday was loaded")
	}
	var names []string
	for _, part := range p.Parts {
		names = append(names, part.Name)
		if part.Bytes == 0 || part.Truncated {
			t.Errorf("part %+v", part)
		}
	}
	want := []string{"SOUL.md", "persona", "TOOLS.md", "AGENTS.md", "MEMORY.md", "older logs",
		"memory/2026-11-24.md", "memory/2026-11-25.md", "project AGENTS.md"}
	if !slices.Equal(names, want) {
		t.Errorf("parts = %v, want %v", names, want)
	}
}

func TestSystemPromptSkipsMissingAndEmptyFiles(t *testing.T) {
	w := open(t)
	os.Remove(w.path(ToolsFile))
	writeFile(t, w.path(AgentsFile), "  \n")
	p, err := w.SystemPrompt(PromptInput{ProjectDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"TOOLS.md (", "AGENTS.md (", "# Your persona", "Daily log", "Project instructions"} {
		if strings.Contains(p.Text, s) {
			t.Errorf("prompt contains %q", s)
		}
	}
	if len(p.Parts) != 2 {
		t.Errorf("parts = %+v, want SOUL.md and MEMORY.md", p.Parts)
	}
}

func TestSystemPromptCapsHugeMemory(t *testing.T) {
	w := open(t)
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "- fact number %d about the project _(2026-11-25)_\n", i)
	}
	huge := b.String()[:1<<20]
	writeFile(t, w.path(MemoryFile), huge)
	p, err := w.SystemPrompt(PromptInput{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	note := "[MEMORY.md is 1,048,576 bytes; only the first 200 lines / 25 KB are shown, the rest is in " + w.path(MemoryFile) + " — read it with workspace_read; tidy it: merge duplicates, remove stale facts (polly gc moves the excess to archive/)]"
	if !strings.Contains(p.Text, note) {
		t.Errorf("note missing; prompt tail:\n%s", p.Text[max(len(p.Text)-500, 0):])
	}
	if strings.Contains(p.Text, "fact number 200 ") || !strings.Contains(p.Text, "fact number 199 ") {
		t.Error("MEMORY.md not cut at 200 lines")
	}
	mem := p.Parts[len(p.Parts)-1]
	if mem.Name != MemoryFile || !mem.Truncated || mem.Bytes > memoryCapBytes {
		t.Errorf("memory part = %+v", mem)
	}
	if len(p.Text) > 64<<10 {
		t.Errorf("prompt is %d bytes with a 1 MB MEMORY.md", len(p.Text))
	}

	// One giant line: the byte cap applies too.
	writeFile(t, w.path(MemoryFile), strings.Repeat("x", 100<<10))
	p, err = w.SystemPrompt(PromptInput{})
	if err != nil {
		t.Fatal(err)
	}
	if mem := p.Parts[len(p.Parts)-1]; mem.Bytes > memoryCapBytes || !mem.Truncated {
		t.Errorf("memory part = %+v", mem)
	}
}

func TestSystemPromptNearCapNote(t *testing.T) {
	w := open(t)
	var b strings.Builder
	for i := range 170 {
		fmt.Fprintf(&b, "- fact %d\n", i)
	}
	writeFile(t, w.path(MemoryFile), b.String())
	p, err := w.SystemPrompt(PromptInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Text, "[MEMORY.md is at 85% of its cap") || !strings.Contains(p.Text, "tidy it soon") {
		t.Errorf("near-cap note missing:\n%s", p.Text[max(len(p.Text)-300, 0):])
	}
	writeFile(t, w.path(MemoryFile), "- one fact\n")
	if p, _ = w.SystemPrompt(PromptInput{}); strings.Contains(p.Text, "of its cap") {
		t.Error("near-cap note on a small MEMORY.md")
	}
}

func TestSystemPromptKeepsNewestLogSummaryLines(t *testing.T) {
	w := open(t)
	var b strings.Builder
	b.WriteString("# 2026-11-25\n")
	for i := 0; b.Len() < 30<<10; i++ {
		fmt.Fprintf(&b, "\n## entry %04d\nsomething happened\nwith a detail line that stays in the file\n", i)
	}
	fmt.Fprintf(&b, "- 18:00 coder: fix the test → completed: fixed\n  files: a.go · 3 tool calls\n")
	writeFile(t, w.path("memory/2026-11-25.md"), b.String())
	p, err := w.SystemPrompt(PromptInput{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	part := p.Parts[len(p.Parts)-1]
	if part.Name != "memory/2026-11-25.md" || !part.Truncated || part.Bytes > logSummaryCap {
		t.Fatalf("log part = %+v", part)
	}
	if strings.Contains(p.Text, "entry 0000") || strings.Contains(p.Text, "detail line") || strings.Contains(p.Text, "files: a.go") {
		t.Error("log not cut to its newest summary lines")
	}
	if !strings.Contains(p.Text, "[memory/2026-11-25.md: only the newest ") || !strings.Contains(p.Text, `workspace_read("memory/2026-11-25.md") has the older ones`) {
		t.Error("no note saying what was left out and where")
	}
	last := strings.LastIndex(b.String(), "## entry")
	if !strings.Contains(p.Text, "- "+b.String()[last+3:last+13]+": something happened\n- 18:00 coder: fix the test → completed: fixed") {
		t.Errorf("newest entries missing:\n%s", p.Text[max(len(p.Text)-600, 0):])
	}
}

func TestSystemPromptSeesEdits(t *testing.T) {
	w := open(t)
	if _, err := w.SystemPrompt(PromptInput{}); err != nil {
		t.Fatal(err)
	}
	mem := w.path(MemoryFile)
	writeFile(t, mem, "- the user likes tabs\n")
	p, _ := w.SystemPrompt(PromptInput{})
	if !strings.Contains(p.Text, "likes tabs") {
		t.Fatal("edit not picked up")
	}

	// Same size and same mtime, but a new file put in place by rename (as an
	// editor or SaveFact does): still picked up.
	fi, _ := os.Stat(mem)
	tmp := mem + ".new"
	writeFile(t, tmp, "- the user likes tab!\n")
	os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	if err := os.Rename(tmp, mem); err != nil {
		t.Fatal(err)
	}
	p, _ = w.SystemPrompt(PromptInput{})
	if !strings.Contains(p.Text, "likes tab!") {
		t.Error("replaced file with equal size and mtime not picked up")
	}

	if _, err := w.SaveFact(Provenance{}, "Preferences", "Answers in German"); err != nil {
		t.Fatal(err)
	}
	p, _ = w.SystemPrompt(PromptInput{})
	if !strings.Contains(p.Text, "Answers in German") {
		t.Error("SaveFact not visible in the next prompt")
	}
}

func TestSystemPromptCachesUnchangedFiles(t *testing.T) {
	w := open(t)
	a, _ := w.SystemPrompt(PromptInput{Now: testNow})
	// Corrupt the cache entry's text; an unchanged file must be served from it.
	w.cacheMu.Lock()
	for k, c := range w.cache {
		if strings.HasPrefix(k, w.path(SoulFile)+"\x00") {
			c.text = "CACHED SOUL"
			w.cache[k] = c
		}
	}
	w.cacheMu.Unlock()
	b, _ := w.SystemPrompt(PromptInput{Now: testNow})
	if a.Text == b.Text || !strings.Contains(b.Text, "CACHED SOUL") {
		t.Error("unchanged SOUL.md was read again")
	}
}

// TestSystemPromptReusedWhileUnchanged: with no file changed, the prompt
// is the text built last time (the same bytes, not a copy: built before
// every request, it is not assembled again); a persona, a project or a
// file that differs gets its own.
func TestSystemPromptReusedWhileUnchanged(t *testing.T) {
	w := open(t)
	in := PromptInput{PersonaPrompt: "You are coder.", PersonaName: "coder", Now: testNow}
	a, _ := w.SystemPrompt(in)
	b, _ := w.SystemPrompt(in)
	if a.Text != b.Text || unsafe.StringData(a.Text) != unsafe.StringData(b.Text) {
		t.Error("the unchanged prompt was assembled again")
	}
	other, _ := w.SystemPrompt(PromptInput{PersonaPrompt: "You review.", PersonaName: "reviewer", Now: testNow})
	if !strings.Contains(other.Text, "You review.") || strings.Contains(other.Text, "You are coder.") {
		t.Error("another persona got the first one's prompt")
	}
	writeFile(t, w.path(SoulFile), "# SOUL\nBe brief.\n")
	c, _ := w.SystemPrompt(in)
	if !strings.Contains(c.Text, "Be brief.") {
		t.Error("a changed SOUL.md did not reach the prompt")
	}
	if d, _ := w.SystemPrompt(in); unsafe.StringData(d.Text) != unsafe.StringData(c.Text) {
		t.Error("the prompt after the change was not reused")
	}
}

func BenchmarkSystemPrompt(b *testing.B) {
	w := open(b)
	project := b.TempDir()
	writeFile(b, filepath.Join(project, "AGENTS.md"), strings.Repeat("Project rule.\n", 500))
	writeFile(b, w.path("memory/2026-11-25.md"), "# 2026-11-25\n"+strings.Repeat("## 10:00\ndid a thing\n", 300))
	for i := range 150 {
		if _, err := w.SaveFact(Provenance{}, "Project Facts", fmt.Sprintf("fact %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	in := PromptInput{PersonaPrompt: strings.Repeat("persona text ", 200), PersonaName: "coder", ProjectDir: project, Now: testNow}
	if _, err := w.SystemPrompt(in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.SystemPrompt(in); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSystemPromptProjectIsWorkspace(t *testing.T) {
	w := open(t)
	p, err := w.SystemPrompt(PromptInput{ProjectDir: w.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(p.Text, "# AGENTS — delegation patterns") != 1 {
		t.Error("workspace AGENTS.md loaded twice")
	}
}

func TestSystemPromptCapsProjectAgents(t *testing.T) {
	w := open(t)
	project := t.TempDir()
	writeFile(t, filepath.Join(project, "AGENTS.md"), strings.Repeat("Always run the linter first.\n", 4000))
	p, err := w.SystemPrompt(PromptInput{ProjectDir: project})
	if err != nil {
		t.Fatal(err)
	}
	last := p.Parts[len(p.Parts)-1]
	if last.Name != "project AGENTS.md" || !last.Truncated || last.Bytes > projectCap {
		t.Errorf("project part = %+v", last)
	}
	if !strings.HasSuffix(p.Text, "[project AGENTS.md is 116,000 bytes; only the first 32 KB are shown, the rest is in "+filepath.Join(project, "AGENTS.md")+" — read the rest with read_file]") {
		t.Errorf("prompt ends with %q", p.Text[len(p.Text)-200:])
	}
}

// BenchmarkSystemPromptBigWorkspace: the prompt is built before every
// request; with 60 daily logs of 20 KB and a 100 KB MEMORY.md it is served
// from the cache while the files are unchanged.
func BenchmarkSystemPromptBigWorkspace(b *testing.B) {
	w, err := Open(b.TempDir(), os.DirFS("../.agent-template"))
	if err != nil {
		b.Fatal(err)
	}
	for d := range 60 {
		date := testNow.AddDate(0, 0, -d).Format("2006-01-02")
		var s strings.Builder
		s.WriteString("# " + date + "\n\n")
		for i := 0; s.Len() < 20<<10; i++ {
			fmt.Fprintf(&s, "- 10:%02d coder: task %d → completed: done\n  files: a.go · 3 tool calls\n", i%60, i)
		}
		os.WriteFile(w.path("memory/"+date+".md"), []byte(s.String()), 0o644)
	}
	os.WriteFile(w.path(MemoryFile), []byte(strings.Repeat("- a fact about the project _(2026-11-01)_\n", 2500)), 0o644)
	in := PromptInput{PersonaPrompt: "You are coder.", Now: testNow}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w.cacheMu.Lock()
			clear(w.cache)
			w.cacheMu.Unlock()
			if _, err := w.SystemPrompt(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := w.SystemPrompt(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Issue 27 #6: the daily log is shared by every project; each entry is
// tagged with its project, and a prompt shows only its own project's, short
// (no tag, no Markdown heading as the outcome).
func TestDailyLogPerProject(t *testing.T) {
	w := open(t)
	web, cli := filepath.Join(t.TempDir(), "webshop"), filepath.Join(t.TempDir(), "cli-tool")
	w.SetProject(web)
	if _, err := w.LogTaskEnd(TaskEntry{Persona: "coder", Asked: "fix the cart", Outcome: "completed: ## What I did\n\n1. **Fixed** the cart total", ToolCalls: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.DailyLog(Provenance{}, "the cart uses cents"); err != nil {
		t.Fatal(err)
	}
	other, err := Open(w.Dir(), template()) // the same workspace, another project's process
	if err != nil {
		t.Fatal(err)
	}
	other.now = w.now
	other.SetProject(cli)
	if _, err := other.LogTaskEnd(TaskEntry{Persona: "coder", Asked: "add a zebra subcommand", Outcome: "completed: added", ToolCalls: 2}); err != nil {
		t.Fatal(err)
	}
	day := testNow.Format("2006-01-02")
	raw, err := os.ReadFile(w.path("memory/" + day + ".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[webshop] coder: fix the cart → completed: 1. Fixed the cart total", "[webshop] note: the cart uses cents", "[cli-tool] coder: add a zebra subcommand"} {
		if !strings.Contains(string(raw), want) {
			t.Fatalf("log lacks %q:\n%s", want, raw)
		}
	}
	p, err := w.SystemPrompt(PromptInput{ProjectDir: web, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"coder: fix the cart → completed: 1. Fixed the cart total\n", "note: the cart uses cents", "1 entries of other projects are not shown"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("webshop's prompt lacks %q:\n%s", want, p.Text[max(len(p.Text)-800, 0):])
		}
	}
	for _, not := range []string{"zebra subcommand", "[webshop]", "## What I did"} {
		if strings.Contains(p.Text, not) {
			i := strings.Index(p.Text, not)
			t.Errorf("webshop's prompt shows %q: %q", not, p.Text[max(0, i-200):i+50])
		}
	}
}

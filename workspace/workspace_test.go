package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// template is the repository's real template, as main.go embeds it.
func template() fs.FS { return os.DirFS("../.agent-template") }

var testNow = time.Date(2026, 11, 25, 14, 3, 0, 0, time.Local)

// open returns a workspace in a temp dir with a fixed clock.
func open(t testing.TB) *Workspace {
	t.Helper()
	w, err := Open(filepath.Join(t.TempDir(), "ws"), template())
	if err != nil {
		t.Fatal(err)
	}
	w.now = func() time.Time { return testNow }
	return w
}

func writeFile(t testing.TB, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTemplateHasRequiredFiles(t *testing.T) {
	tmpl := template()
	if err := fstest.TestFS(tmpl, RequiredFiles()...); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range RequiredFiles() {
		b, err := fs.ReadFile(tmpl, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(strings.TrimSpace(string(b))) < 100 {
			t.Errorf("%s is almost empty (%d bytes)", f, len(b))
		}
		total += len(b)
	}
	// The core files go into every system prompt: keep the template lean.
	if total < 6<<10 || total > 12<<10 {
		t.Errorf("template is %d bytes; want roughly 8-12 KB", total)
	}
	mem, _ := fs.ReadFile(tmpl, MemoryFile)
	for _, s := range []string{"## Project Facts", "## Preferences", "## Data Sources", "## Decisions"} {
		if !strings.Contains(string(mem), "\n"+s+"\n") {
			t.Errorf("MEMORY.md lacks section %q", s)
		}
	}
	tools, _ := fs.ReadFile(tmpl, ToolsFile)
	for _, name := range []string{"read_tool_output", "grep_tool_output", "[output #", "task_plan", "delegate_task",
		"workspace_save_fact", "workspace_log_error", "workspace_log_learning", "workspace_request_feature",
		"workspace_daily_log", "workspace_read"} {
		if !strings.Contains(string(tools), name) {
			t.Errorf("TOOLS.md does not mention %s", name)
		}
	}
}

func TestInitEmptyDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "ws")
	created, err := Init(template(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range RequiredFiles() {
		if !slices.Contains(created, f) {
			t.Errorf("created = %v; missing %s", created, f)
		}
		want, _ := fs.ReadFile(template(), f)
		if got := readFile(t, filepath.Join(dir, f)); got != string(want) {
			t.Errorf("%s differs from the template", f)
		}
	}
	for _, d := range []string{LogDir, LearningsDir} {
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s/ not created: %v", d, err)
		}
	}
	// No temp files left behind.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temp file left: %s", p)
		}
		return nil
	})
}

func TestInitTwiceCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(template(), dir); err != nil {
		t.Fatal(err)
	}
	type state struct {
		mod  time.Time
		body string
	}
	before := map[string]state{}
	for _, f := range RequiredFiles() {
		p := filepath.Join(dir, f)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		before[f] = state{fi.ModTime(), readFile(t, p)}
	}
	time.Sleep(10 * time.Millisecond) // a rewrite would show in the mtime
	created, err := Init(template(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 0 {
		t.Errorf("second Init created %v", created)
	}
	for f, b := range before {
		p := filepath.Join(dir, f)
		fi, _ := os.Stat(p)
		if !fi.ModTime().Equal(b.mod) || readFile(t, p) != b.body {
			t.Errorf("%s was rewritten", f)
		}
	}
}

func TestInitKeepsUserEdits(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(template(), dir); err != nil {
		t.Fatal(err)
	}
	soul := filepath.Join(dir, SoulFile)
	writeFile(t, soul, "my own soul\n")
	os.Remove(filepath.Join(dir, ToolsFile))
	created, err := Init(template(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, soul); got != "my own soul\n" {
		t.Errorf("SOUL.md overwritten: %q", got)
	}
	if !slices.Equal(created, []string{ToolsFile}) {
		t.Errorf("created = %v, want only the deleted TOOLS.md", created)
	}
}

func TestInitRefusesFileAsDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, LogDir), "not a dir")
	if _, err := Init(template(), dir); err == nil {
		t.Fatal("Init succeeded with memory/ being a file")
	}
}

func TestFilesOrder(t *testing.T) {
	w := open(t)
	for _, d := range []string{"2026-11-23", "2026-11-25", "2026-11-24"} {
		writeFile(t, w.path(LogDir+"/"+d+".md"), "# "+d+"\n")
	}
	os.MkdirAll(w.path(ArchiveDir), 0o755)
	writeFile(t, w.path(ArchiveDir+"/ERRORS-2026-11-20.md"), "# Errors moved\n")
	writeFile(t, w.path(ArchiveDir+"/MEMORY-2026-11-21.md"), "# Facts moved\n")
	files, err := w.Files()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		if f.Size == 0 || f.ModTime.IsZero() || f.Path != w.path(f.Name) {
			t.Errorf("incomplete info %+v", f)
		}
	}
	want := []string{SoulFile, ToolsFile, AgentsFile, MemoryFile, LearningsFile, ErrorsFile, FeatureRequestsFile,
		"memory/2026-11-25.md", "memory/2026-11-24.md", "memory/2026-11-23.md", "memory/README.md",
		"archive/MEMORY-2026-11-21.md", "archive/ERRORS-2026-11-20.md"}
	if !slices.Equal(names, want) {
		t.Errorf("Files() =\n%v\nwant\n%v", names, want)
	}
}

func TestRead(t *testing.T) {
	w := open(t)
	got, err := w.Read("MEMORY.md")
	if err != nil || !strings.Contains(got, "## Project Facts") {
		t.Fatalf("Read(MEMORY.md) = %q, %v", got, err)
	}
	if _, err := w.Read(".learnings/ERRORS.md"); err != nil {
		t.Error(err)
	}
	if _, err := w.Read(w.path(SoulFile)); err != nil {
		t.Errorf("absolute path inside: %v", err)
	}

	outside := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, outside, "secret")
	if err := os.Symlink(outside, w.path("escape.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(w.path(MemoryFile), w.path("memory/link.md")); err != nil {
		t.Fatal(err)
	}
	if got, err := w.Read("memory/link.md"); err != nil || !strings.Contains(got, "## Decisions") {
		t.Errorf("symlink inside the workspace: %q, %v", got, err)
	}
	for _, bad := range []string{"../../etc/passwd", "/etc/passwd", outside, "escape.md", "memory/../../x", ""} {
		if got, err := w.Read(bad); err == nil {
			t.Errorf("Read(%q) = %q, want refusal", bad, got)
		} else if strings.Contains(got, "secret") {
			t.Errorf("Read(%q) leaked content", bad)
		}
	}
	if _, err := w.Read("nope.md"); err == nil || !strings.Contains(err.Error(), "MEMORY.md") {
		t.Errorf("missing file: %v (want an error listing the files)", err)
	}

	writeFile(t, w.path("big.md"), strings.Repeat("0123456789abcde\n", 40<<10)) // 640 KB
	got, err = w.Read("big.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > readCap+200 || !strings.Contains(got, "only the first 256 KB") {
		t.Errorf("big file: %d bytes, note missing or cap ignored", len(got))
	}
}

package workspace

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// section returns the lines under "## name" of doc, up to the next heading.
func section(t *testing.T, doc, name string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## "+name+"\n")
	if !ok {
		t.Fatalf("no section %q in\n%s", name, doc)
	}
	if i := strings.Index(rest, "\n#"); i >= 0 {
		rest = rest[:i]
	}
	return strings.Split(strings.TrimRight(rest, "\n"), "\n")
}

func TestSaveFact(t *testing.T) {
	w := open(t)
	where, err := w.SaveFact(Provenance{}, "project facts", "Backend is Go 1.26 with SQLite")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(where, "## Project Facts") || !strings.Contains(where, w.path(MemoryFile)) {
		t.Errorf("result %q does not say where", where)
	}
	for _, again := range []string{"Backend is Go 1.26 with SQLite", "  backend is go 1.26   with sqlite. ",
		"Backend is Go 1.26 with SQLite _(2025-01-01)_"} {
		res, err := w.SaveFact(Provenance{}, "Project Facts", again)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res, "already saved") {
			t.Errorf("SaveFact(%q) = %q, want already saved", again, res)
		}
	}
	if _, err := w.SaveFact(Provenance{}, "## Project Facts", "Tests run with go test -race"); err != nil {
		t.Fatal(err)
	}
	// Same text in another section is another fact.
	if res, _ := w.SaveFact(Provenance{}, "Decisions", "Backend is Go 1.26 with SQLite"); strings.Contains(res, "already") {
		t.Error("duplicate check crossed sections")
	}

	doc := readFile(t, w.path(MemoryFile))
	facts := section(t, doc, "Project Facts")
	want := []string{facts[0], // the template's comment stays first
		"- Backend is Go 1.26 with SQLite _(2026-11-25)_",
		"- Tests run with go test -race _(2026-11-25)_"}
	if strings.Join(facts, "\n") != strings.Join(want, "\n") || !strings.HasPrefix(facts[0], "<!--") {
		t.Errorf("Project Facts =\n%s", strings.Join(facts, "\n"))
	}
	if n := strings.Count(doc, "- Backend is Go"); n != 2 { // Project Facts and Decisions
		t.Errorf("fact saved %d times", n)
	}
	// The following section is intact and still follows.
	if !strings.Contains(doc, "_(2026-11-25)_\n\n## Preferences\n") {
		t.Errorf("layout broken:\n%s", doc)
	}
}

func TestSaveFactCreatesSection(t *testing.T) {
	w := open(t)
	if _, err := w.SaveFact(Provenance{}, "Clients", "Acme pays net 30\n(per the contract)"); err != nil {
		t.Fatal(err)
	}
	doc := readFile(t, w.path(MemoryFile))
	if !strings.HasSuffix(doc, "\n\n## Clients\n- Acme pays net 30 (per the contract) _(2026-11-25)_\n") {
		t.Errorf("section not appended at the end:\n%s", doc)
	}
	if _, err := w.SaveFact(Provenance{}, "CLIENTS", "Globex is new"); err != nil {
		t.Fatal(err)
	}
	if got := section(t, readFile(t, w.path(MemoryFile)), "Clients"); len(got) != 2 {
		t.Errorf("Clients = %q", got)
	}
}

func TestSaveFactRecreatesDeletedMemory(t *testing.T) {
	w := open(t)
	os.Remove(w.path(MemoryFile))
	if _, err := w.SaveFact(Provenance{}, "Preferences", "Short answers"); err != nil {
		t.Fatal(err)
	}
	if got := section(t, readFile(t, w.path(MemoryFile)), "Preferences"); !strings.HasPrefix(got[len(got)-1], "- Short answers") {
		t.Errorf("Preferences = %q", got)
	}
}

func TestSaveFactRejectsEmpty(t *testing.T) {
	w := open(t)
	for _, c := range [][2]string{{"", "a fact"}, {"  ", "a fact"}, {"Preferences", ""}, {"Preferences", " \n "}} {
		if _, err := w.SaveFact(Provenance{}, c[0], c[1]); err == nil {
			t.Errorf("SaveFact(%q, %q) succeeded", c[0], c[1])
		}
	}
}

func TestSaveFactThroughSymlink(t *testing.T) {
	w := open(t)
	real := filepath.Join(t.TempDir(), "dotfiles-MEMORY.md")
	writeFile(t, real, "# Mine\n\n## Preferences\n")
	os.Remove(w.path(MemoryFile))
	if err := os.Symlink(real, w.path(MemoryFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.SaveFact(Provenance{}, "Preferences", "Vim keys"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(w.path(MemoryFile)); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("symlink replaced by a file")
	}
	if !strings.Contains(readFile(t, real), "- Vim keys") {
		t.Error("fact not written to the symlink's target")
	}
}

func TestSaveFactConcurrent(t *testing.T) {
	w := open(t)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for g := range 2 {
		wg.Go(func() {
			for i := range 100 {
				if _, err := w.SaveFact(Provenance{}, "Project Facts", fmt.Sprintf("goroutine %d fact %d", g, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	doc := readFile(t, w.path(MemoryFile))
	for g := range 2 {
		for i := range 100 {
			if !strings.Contains(doc, fmt.Sprintf("- goroutine %d fact %d _(", g, i)) {
				t.Fatalf("lost goroutine %d fact %d", g, i)
			}
		}
	}
}

// TestHelperWriter is not a test: TestSaveFactTwoProcesses runs the test
// binary again with this env set, so two processes write one workspace.
func TestHelperWriter(t *testing.T) {
	dir := os.Getenv("POLLY_WS_WRITER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := os.Getenv("POLLY_WS_WRITER_ID")
	n, _ := strconv.Atoi(os.Getenv("POLLY_WS_WRITER_N"))
	for i := range n {
		if _, err := w.SaveFact(Provenance{}, "Project Facts", fmt.Sprintf("process %s fact %d", id, i)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.LogError(Provenance{}, "", fmt.Sprintf("error %s/%d", id, i), "fixed"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSaveFactTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	w := open(t)
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	const n = 60
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for _, id := range []string{"A", "B"} {
		cmd := exec.Command(exe, "-test.run=^TestHelperWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), "POLLY_WS_WRITER_DIR="+w.Dir(), "POLLY_WS_WRITER_ID="+id,
			"POLLY_WS_WRITER_N="+strconv.Itoa(n))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		outs = append(outs, out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer process: %v\n%s", err, outs[i])
		}
	}
	mem := readFile(t, w.path(MemoryFile))
	errs := readFile(t, w.path(ErrorsFile))
	for _, id := range []string{"A", "B"} {
		for i := range n {
			if !strings.Contains(mem, fmt.Sprintf("- process %s fact %d _(", id, i)) {
				t.Errorf("lost fact %s/%d", id, i)
			}
			if !strings.Contains(errs, fmt.Sprintf("- **Error:** error %s/%d\n", id, i)) {
				t.Errorf("lost error %s/%d", id, i)
			}
		}
	}
}

func TestLogError(t *testing.T) {
	w := open(t)
	where, err := w.LogError(Provenance{}, "", "go test: database is locked\n  at store.go:12", "open SQLite with _busy_timeout")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(where, w.path(ErrorsFile)) {
		t.Errorf("result %q", where)
	}
	doc := readFile(t, w.path(ErrorsFile))
	entry := "\n\n## 2026-11-25 14:03\n- **Signature:** go test: database is locked\n- **Error:** go test: database is locked\n    at store.go:12\n- **Fix:** open SQLite with _busy_timeout\n"
	if !strings.HasSuffix(doc, entry) || !strings.HasPrefix(doc, "# Errors and fixes") {
		t.Errorf("ERRORS.md =\n%s", doc)
	}
	if res, _ := w.LogError(Provenance{}, "", "go test: database is locked\n  at store.go:12", "open SQLite with _busy_timeout"); !strings.Contains(res, "already logged") {
		t.Errorf("same error and fix logged twice: %q", res)
	}
	if _, err := w.LogError(Provenance{}, "", "boom", ""); err == nil {
		t.Error("empty fix accepted")
	}
	if _, err := w.LogError(Provenance{}, "", "", "x"); err == nil {
		t.Error("empty error accepted")
	}
}

func TestLearningAndFeature(t *testing.T) {
	w := open(t)
	if _, err := w.LogLearning(Provenance{}, "Integration tests need docker compose up first"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.RequestFeature(Provenance{}, "A tool to render JavaScript pages"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, w.path(LearningsFile)); !strings.HasSuffix(got, "\n\n## 2026-11-25 14:03\nIntegration tests need docker compose up first\n") {
		t.Errorf("LEARNINGS.md =\n%s", got)
	}
	if got := readFile(t, w.path(FeatureRequestsFile)); !strings.HasSuffix(got, "## 2026-11-25 14:03\nA tool to render JavaScript pages\n") {
		t.Errorf("FEATURE_REQUESTS.md =\n%s", got)
	}
	for _, f := range []func(Provenance, string) (string, error){w.LogLearning, w.RequestFeature, w.DailyLog} {
		if _, err := f(Provenance{}, " "); err == nil {
			t.Error("empty entry accepted")
		}
	}
	big := strings.Repeat("é", entryCap)
	if _, err := w.LogLearning(Provenance{}, big); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, w.path(LearningsFile)); len(got) > 2*entryCap || !strings.Contains(got, "…[cut]") {
		t.Errorf("long insight not cut (%d bytes)", len(got))
	}
}

func TestDailyLogAndTaskEnd(t *testing.T) {
	w := open(t)
	if _, err := w.DailyLog(Provenance{}, "Chose CSV exports\nbecause the CRM imports them"); err != nil {
		t.Fatal(err)
	}
	where, err := w.LogTaskEnd(TaskEntry{
		Persona: "coder", Asked: "fix the\nfailing test", Outcome: "completed: Fixed an off-by-one; tests pass\n\nDetails: the loop ran once too often…",
		Files: []string{"a.go", "b.go", "c.go", "d.go", "e.go", "f.go"}, ToolCalls: 23, Session: "s-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	p := w.path("memory/2026-11-25.md")
	if !strings.Contains(where, p) {
		t.Errorf("result %q", where)
	}
	want := "# 2026-11-25\n\n- 14:03 note: Chose CSV exports\n  because the CRM imports them\n" +
		"- 14:03 coder: fix the failing test → completed: Fixed an off-by-one; tests pass\n" +
		"  files: a.go, b.go, c.go, d.go, e.go (+1 more) · 23 tool calls · session s-1\n"
	if got := readFile(t, p); got != want {
		t.Errorf("log =\n%s\nwant\n%s", got, want)
	}
	// A long request and answer still make two lines.
	before := readFile(t, p)
	w.LogTaskEnd(TaskEntry{Persona: "Polly", Asked: strings.Repeat("please do this ", 100), Outcome: "completed: " + strings.Repeat("done and ", 900)})
	added := strings.TrimPrefix(readFile(t, p), before)
	if n := strings.Count(added, "\n"); n != 2 || len(added) > 400 {
		t.Errorf("task entry is %d lines, %d bytes:\n%s", n, len(added), added)
	}
}

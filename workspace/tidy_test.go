package workspace

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestTidyErrorsMergesAndArchives(t *testing.T) {
	w := open(t)
	for i := range 130 {
		w.LogToolError(Provenance{}, "run_command", "command=make", fmt.Sprintf("error kind%c%c happened", 'a'+i/26, 'a'+i%26), fmt.Sprintf("fix %d", i))
	}
	doc := readFile(t, w.path(ErrorsFile))
	// Three exact copies (as an older Polly wrote them) and an older fix for a newer entry's error.
	dup := "## 2026-01-01 10:00\n- **Tool:** run_command\n- **Signature:** error kindez happened\n- **Error:** error kindez happened\n- **Fix:** fix 129\n"
	older := "## 2026-01-01 09:00\n- **Tool:** run_command\n- **Signature:** error kindey happened\n- **Error:** error kindey happened\n- **Fix:** an older fix\n"
	pre, rest, _ := strings.Cut(doc, "\n## ")
	writeFile(t, w.path(ErrorsFile), pre+"\n"+dup+"\n"+dup+"\n"+older+"\n## "+rest+"\n"+dup)
	before := readFile(t, w.path(ErrorsFile))

	dry, err := w.Tidy(true)
	if err != nil || readFile(t, w.path(ErrorsFile)) != before {
		t.Fatalf("dry run wrote: %v", err)
	}
	res, err := w.Tidy(false)
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != dry[0] || res[0].Name != ErrorsFile || res[0].Merged != 4 || res[0].Moved != 31 || res[0].Archive != "archive/ERRORS-2026-11-25.md" {
		t.Fatalf("tidy = %+v (dry %+v)", res[0], dry[0])
	}
	after := readFile(t, w.path(ErrorsFile))
	if n := len(parseErrors(after)); n != errorsCapEntries {
		t.Errorf("%d entries kept, want %d", n, errorsCapEntries)
	}
	if !strings.Contains(after, "_2026-11-25: tidied by polly gc — 4 duplicate entries merged, 31 older entries moved to archive/ERRORS-2026-11-25.md._") {
		t.Errorf("no line saying what moved where:\n%s", after[:600])
	}
	archived := readFile(t, w.path("archive/ERRORS-2026-11-25.md"))
	// Nothing is lost: every fix is in the file or the archive.
	for i := range 130 {
		fix := fmt.Sprintf("- **Fix:** fix %d\n", i)
		if !strings.Contains(after, fix) && !strings.Contains(archived, fix) {
			t.Errorf("fix %d lost", i)
		}
	}
	if !strings.Contains(archived, "an older fix") || strings.Contains(after, "an older fix") || strings.Count(after, "fix 129\n") != 1 {
		t.Errorf("duplicates not merged:\n%s", archived)
	}
	if _, ok := w.KnownFix("run_command", "exit code: 1\nerror kindez happened"); !ok {
		t.Error("the newest entry no longer matches")
	}
	if res, _ := w.Tidy(false); res[0].Changed() {
		t.Errorf("second pass changed ERRORS.md again: %+v", res[0])
	}
}

func TestTidyMemoryMergesAndArchivesOldest(t *testing.T) {
	w := open(t)
	var b strings.Builder
	b.WriteString("# MEMORY — durable facts\n\n## Project Facts\n")
	for i := range 150 {
		fmt.Fprintf(&b, "- project fact %03d _(2026-%02d-%02d)_\n", i, 1+i%11, 1+i%28)
	}
	b.WriteString("- project fact 007 _(2026-11-20)_\n- Project fact 008.\n\n## Preferences\n- the user writes no dates\n")
	for i := range 100 {
		fmt.Fprintf(&b, "- preference %03d _(2026-11-%02d)_\n", i, 1+i%25)
	}
	writeFile(t, w.path(MemoryFile), b.String())

	res, err := w.Tidy(false)
	if err != nil {
		t.Fatal(err)
	}
	m := res[1]
	if m.Name != MemoryFile || m.Merged != 2 || m.Moved == 0 || m.Archive != "archive/MEMORY-2026-11-25.md" {
		t.Fatalf("tidy = %+v", m)
	}
	after := readFile(t, w.path(MemoryFile))
	if lines := strings.Count(after, "\n"); lines > memoryCapLines || len(after) > memoryCapBytes {
		t.Errorf("MEMORY.md is still %d lines, %d bytes", lines, len(after))
	}
	if !strings.HasPrefix(after, "# MEMORY — durable facts\n\n_2026-11-25: tidied by polly gc — 2 duplicate facts merged, ") {
		t.Errorf("no line saying what moved where:\n%s", after[:300])
	}
	archived := readFile(t, w.path(m.Archive))
	if !strings.Contains(archived, "## Project Facts\n- project fact ") {
		t.Errorf("archive lacks section headings:\n%.300s", archived)
	}
	// Oldest first, undated last; nothing lost.
	if !strings.Contains(archived, "_(2026-01-01)_") || strings.Contains(archived, "writes no dates") || !strings.Contains(after, "preference 099") {
		t.Errorf("moved the wrong facts")
	}
	for i := range 150 {
		f := fmt.Sprintf("- project fact %03d _(", i)
		if strings.Count(after, f)+strings.Count(archived, f) != 1 {
			t.Errorf("project fact %d: %d in MEMORY.md, %d archived", i, strings.Count(after, f), strings.Count(archived, f))
		}
	}
	if _, err := os.Stat(w.path("archive")); err != nil {
		t.Fatal(err)
	}
}

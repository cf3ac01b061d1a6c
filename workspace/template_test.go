package workspace

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The template's history is complete: the current text of every versioned
// file is the one current.sha256 names. A changed template fails here
// until its previous text is added to templatehistory/ (so workspaces made
// from it are still recognised and updated) and current.sha256 updated.
func TestTemplateHistoryIsComplete(t *testing.T) {
	f, err := templateHistory.Open("templatehistory/current.sha256")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, sum, _ := strings.Cut(sc.Text(), " ")
		want[name] = sum
	}
	for _, name := range Versioned {
		b, err := os.ReadFile(filepath.Join("..", ".agent-template", name))
		if err != nil {
			t.Fatal(err)
		}
		if hashOf(b) != want[name] {
			t.Errorf("the template of %s changed: copy its previous text (git show HEAD:.agent-template/%s) to templatehistory/%s.%d and put %s in current.sha256",
				name, name, strings.ReplaceAll(name, "/", "_"), len(earlierTemplates(name))+1, hashOf(b))
		}
		if isEarlierTemplate(name, string(b)) {
			t.Errorf("%s: the current template is listed as an earlier one", name)
		}
	}
}

// Issue 27 #4: a workspace made from earlier templates. Files still as an
// earlier template are updated; a file the user changed keeps their text,
// with a notice (once) and a diff; applying it merges the template's
// change into their text (the text before archived); a clash leaves the
// file alone and the new template beside it.
func TestTemplateUpdates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	old := func(name string, n int) string {
		return earlierTemplates(name)[n-1]
	}
	writeFile(t, filepath.Join(dir, SoulFile), old(SoulFile, 1))
	writeFile(t, filepath.Join(dir, ToolsFile), old(ToolsFile, 1)+"\n## My own rule\nAlways run make lint.\n")
	writeFile(t, filepath.Join(dir, LogDir, "README.md"), old(LogDir+"/README.md", 1))
	w, err := Open(dir, template())
	if err != nil {
		t.Fatal(err)
	}
	w.now = func() time.Time { return testNow }
	got, err := w.SyncTemplate()
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string]TemplateUpdate{}
	for _, u := range got {
		byFile[u.File] = u
	}
	tmpl := func(name string) string {
		b, _ := os.ReadFile(filepath.Join("..", ".agent-template", name))
		return string(b)
	}
	for _, name := range []string{SoulFile, LogDir + "/README.md"} {
		if !byFile[name].Updated || read(t, w.path(name)) != tmpl(name) {
			t.Errorf("%s (an earlier template) was not updated: %+v", name, byFile[name])
		}
	}
	if strings.Contains(read(t, w.path(SoulFile)), "[TASK ANCHOR") {
		t.Error("SOUL.md still names the anchors Polly no longer sends")
	}
	u := byFile[ToolsFile]
	if u.Updated || !u.Notice || !strings.Contains(u.Diff, "-  step finishes or the plan changes; anchors and checkpoints read it.") ||
		!strings.Contains(u.Diff, "+  step finishes or the plan changes; the task block and the checkpoints read it.") {
		t.Fatalf("TOOLS.md: %+v", u)
	}
	if !strings.Contains(read(t, w.updatePath(ToolsFile)), "```diff") || w.UpdateFile(w.updatePath(ToolsFile)) != ToolsFile {
		t.Fatal("the pending update is not kept for the memory inspector")
	}
	if again, _ := w.SyncTemplate(); len(again) != 1 || again[0].Notice {
		t.Fatalf("a second start notified again: %+v", again)
	}
	msg, err := w.ApplyTemplateUpdate(ToolsFile)
	if err != nil || !strings.Contains(msg, "keeping your edits") {
		t.Fatal(msg, err)
	}
	tools := read(t, w.path(ToolsFile))
	if !strings.Contains(tools, "Always run make lint.") || !strings.Contains(tools, "the task block and the checkpoints read it") {
		t.Fatalf("merged TOOLS.md:\n%s", tools)
	}
	archived, _ := filepath.Glob(filepath.Join(dir, "archive", "TOOLS.md-template-*.md"))
	if len(archived) != 1 || !strings.Contains(read(t, archived[0]), "anchors and checkpoints read it") {
		t.Fatalf("the text before was not archived: %v", archived)
	}
	if _, err := os.Stat(w.updatePath(ToolsFile)); err == nil {
		t.Fatal("the applied update is still offered")
	}
	if again, _ := w.SyncTemplate(); len(again) != 0 {
		t.Fatalf("after applying: %+v", again)
	}

	// A clash: the user rewrote the very line the template changes.
	clash := strings.Replace(old(ToolsFile, 1), "anchors and checkpoints read it.", "my own words here.", 1)
	writeFile(t, w.path(ToolsFile), clash)
	os.Remove(filepath.Join(dir, templateStateFile))
	if msg, err := w.ApplyTemplateUpdate(ToolsFile); err != nil || !strings.Contains(msg, "left as it is") {
		t.Fatal(msg, err)
	}
	if read(t, w.path(ToolsFile)) != clash || read(t, w.path(ToolsFile)+".new") != tmpl(ToolsFile) {
		t.Fatal("a clash changed the file or wrote no new template beside it")
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The project root is the git root, else the nearest directory with
// .agent/, AGENTS.md or .mcp.json; ~ and / only when started there.
func TestProjectRoot(t *testing.T) {
	home := t.TempDir()
	repo := filepath.Join(home, "code", "repo")
	src := filepath.Join(repo, "src", "pkg")
	os.MkdirAll(src, 0o755)
	os.MkdirAll(filepath.Join(home, ".agent", "workspace"), 0o755) // the global workspace
	os.MkdirAll(filepath.Join(home, ".git"), 0o755)                // a dotfiles repository in ~
	if got := ProjectRoot(src, home); got != src {
		t.Fatalf("no marker below ~: %s, want the start dir", got)
	}
	writeFile(t, filepath.Join(repo, "AGENTS.md"), "rules")
	if got := ProjectRoot(src, home); got != repo {
		t.Fatalf("AGENTS.md marker: %s", got)
	}
	os.MkdirAll(filepath.Join(repo, "src", ".agent"), 0o755)
	if got := ProjectRoot(src, home); got != filepath.Join(repo, "src") {
		t.Fatalf("the nearest marker wins without git: %s", got)
	}
	writeFile(t, filepath.Join(repo, ".git"), "gitdir: /elsewhere\n") // a worktree's .git file
	if got := ProjectRoot(src, home); got != repo {
		t.Fatalf("the git root wins: %s", got)
	}
	if got := ProjectRoot(home, home); got != home {
		t.Fatalf("started in ~: %s", got)
	}
}

// Instruction files are read from the root down to the working directory:
// AGENTS.md, CLAUDE.md (not when it repeats AGENTS.md), CLAUDE.local.md,
// each followed by its @imports (inside the project, 5 hops, each once).
func TestInstructionFiles(t *testing.T) {
	w := open(t)
	root := t.TempDir()
	sub := filepath.Join(root, "src")
	writeFile(t, filepath.Join(root, "AGENTS.md"), "ROOT-AGENTS\n")
	writeFile(t, filepath.Join(root, "CLAUDE.md"), "ROOT-CLAUDE @docs/style.md and @AGENTS.md, not `@docs/secret.md`\n```\n@docs/fenced.md\n```\n")
	writeFile(t, filepath.Join(root, "CLAUDE.local.md"), "ROOT-LOCAL\n")
	writeFile(t, filepath.Join(root, "docs/style.md"), "STYLE @../../outside.md @hop1.md\n")
	writeFile(t, filepath.Join(root, "docs/secret.md"), "SECRET\n")
	writeFile(t, filepath.Join(root, "docs/fenced.md"), "FENCED\n")
	for i := 1; i <= 6; i++ {
		writeFile(t, filepath.Join(root, "docs", "hop"+string(rune('0'+i))+".md"), "HOP"+string(rune('0'+i))+" @hop"+string(rune('1'+i))+".md\n")
	}
	writeFile(t, filepath.Join(sub, "AGENTS.md"), "SUB-RULES\n")
	writeFile(t, filepath.Join(sub, "CLAUDE.md"), "SUB-RULES\n") // the same text: read once
	writeFile(t, filepath.Join(root, "other", "AGENTS.md"), "NOT-ON-THE-PATH\n")

	p, err := w.SystemPrompt(PromptInput{PersonaName: "coder", ProjectDir: root, WorkDir: sub, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"ROOT-AGENTS", "ROOT-CLAUDE", "STYLE", "HOP1", "HOP2", "HOP3", "HOP4", "ROOT-LOCAL", "SUB-RULES"}
	last := -1
	for _, want := range order {
		i := strings.Index(p.Text, want)
		if i <= last {
			t.Fatalf("%q missing or out of order in:\n%s", want, p.Text[strings.Index(p.Text, "# Project"):])
		}
		last = i
	}
	for _, absent := range []string{"SECRET", "FENCED", "NOT-ON-THE-PATH", "HOP5"} {
		if strings.Contains(p.Text, absent) {
			t.Errorf("%s was loaded", absent)
		}
	}
	if strings.Count(p.Text, "SUB-RULES") != 1 || strings.Count(p.Text, "ROOT-AGENTS") != 1 {
		t.Errorf("a file was loaded twice")
	}
	for _, note := range []string{"outside.md is not imported: it is outside the project", "hop5.md is not imported: imports go at most 5 files deep"} {
		if !strings.Contains(p.Text, note) {
			t.Errorf("no note %q", note)
		}
	}
	if !strings.Contains(p.Text, "# Project instructions: docs/style.md, imported by CLAUDE.md (") {
		t.Errorf("imported part heading missing")
	}
}

// A .agent/ or .git left in the temp directory does not make it the root
// of every project below it.
func TestProjectRootStopsAtTheTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	os.MkdirAll(filepath.Join(tmp, ".agent"), 0o755)
	os.MkdirAll(filepath.Join(tmp, ".git"), 0o755)
	proj := filepath.Join(tmp, "proj", "src")
	os.MkdirAll(proj, 0o755)
	if got := ProjectRoot(proj, ""); got != proj {
		t.Fatalf("root %s, want the start dir", got)
	}
	if got := ProjectRoot(tmp, ""); got != tmp {
		t.Fatalf("started in the temp dir itself: %s", got)
	}
}

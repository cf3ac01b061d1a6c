package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParse(t *testing.T) {
	m, body, err := Parse([]byte("---\nname: pdf\ndescription: >\n  Fill PDF forms.\n  Two lines.\nlicense: MIT\n---\n\n# PDF\nUse pdftk.\n"))
	if err != nil || m.Name != "pdf" || m.Description != "Fill PDF forms. Two lines." || body != "# PDF\nUse pdftk.\n" {
		t.Fatalf("m=%+v body=%q err=%v", m, body, err)
	}
	if _, body, err := Parse([]byte("---\r\nname: x\r\ndescription: y\r\n---")); err != nil || body != "" {
		t.Fatalf("CRLF, no body: body=%q err=%v", body, err)
	}
	for text, want := range map[string]string{
		"# no front matter\n":                        "no front matter",
		"---\nname: x\ndescription: y\n":             "not closed",
		"---\nname: [x\ndescription: y\n---\nbody\n": "name \"[x\" must be",
		"---\nname: x\n  bad: [\n---\nbody\n":        "not valid YAML",
		"---\ndescription: y\n---\n":                 "no name",
		"---\nname: x\n---\n":                        "no description",
		"---\nname: a b\ndescription: y\n---\n":      "without spaces",
		"---\nname: [1, 2]\ndescription: y\n---\n":   "cannot unmarshal",
	} {
		if _, _, err := Parse([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", text, err, want)
		}
	}
}

func TestDiscoverOrderDuplicatesAndBrokenFiles(t *testing.T) {
	project, home, ws := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(project, ".agents/skills/deploy/SKILL.md"), "---\nname: deploy\ndescription: Ship the app.\n---\nRun make ship.\n")
	write(t, filepath.Join(project, ".claude/skills/broken/SKILL.md"), "---\nname: broken\n---\n")
	write(t, filepath.Join(home, ".claude/skills/deploy/SKILL.md"), "---\nname: deploy\ndescription: The user's older deploy.\n---\n")
	write(t, filepath.Join(home, ".config/agents/skills/review/SKILL.md"), "---\nname: review\ndescription: Review a diff.\n---\nCheck tests.\n")
	write(t, filepath.Join(ws, "skills/notes/SKILL.md"), "---\nname: notes\ndescription: Keep notes.\n---\n")
	write(t, filepath.Join(ws, "skills/README.md"), "not a skill folder")
	write(t, filepath.Join(ws, "skills/empty/other.md"), "a folder without SKILL.md")

	set, warns := Discover(Roots(project, home, ws))
	var names []string
	for _, k := range set.All() {
		names = append(names, k.Name+"@"+k.Root)
	}
	if got := strings.Join(names, " "); got != "deploy@project .agents/skills review@~/.config/agents/skills notes@workspace skills/" {
		t.Fatalf("skills = %s", got)
	}
	joined := strings.Join(warns, "\n")
	if len(warns) != 2 || !strings.Contains(joined, filepath.Join(project, ".claude/skills/broken/SKILL.md")+": front matter has no description") ||
		!strings.Contains(joined, filepath.Join(home, ".claude/skills/deploy/SKILL.md")+`: the name "deploy" is taken by `) {
		t.Fatalf("warnings = %q", warns)
	}

	p := set.Prompt()
	if !strings.Contains(p, "- deploy: Ship the app. ("+filepath.Join(project, ".agents/skills/deploy/SKILL.md")+")") ||
		!strings.Contains(p, "call the skill tool") || strings.Contains(p, "Run make ship") {
		t.Fatalf("prompt = %s", p)
	}

	write(t, filepath.Join(home, ".config/agents/skills/review/scripts/check.sh"), "#!/bin/sh\n")
	k, body, files, err := set.Load("review")
	if err != nil || body != "Check tests.\n" || strings.Join(files, ",") != "SKILL.md,scripts/check.sh" || k.Name != "review" {
		t.Fatalf("Load = %q %q %v", body, files, err)
	}
	if _, _, _, err := set.Load("nope"); err == nil || !strings.Contains(err.Error(), "skills: deploy, review, notes") {
		t.Fatalf("unknown skill: %v", err)
	}
	if (&Set{}).Prompt() != "" || (*Set)(nil).Len() != 0 {
		t.Fatal("no skills must add nothing to the prompt")
	}
}

// The places Codex and opencode keep skills are read; a skill that breaks
// the spec (name case, name ≠ folder, unknown fields, a long description)
// is used with a warning that says what, as the peers do.
func TestPeerPlacesAndSpecWarnings(t *testing.T) {
	project, home, codex := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("CODEX_HOME", codex)
	write(t, filepath.Join(project, ".opencode/skills/release/SKILL.md"), "---\nname: release\ndescription: Cut a release.\nlicense: MIT\ncompatibility: opencode\n---\n")
	write(t, filepath.Join(project, ".codex/skills/lint/SKILL.md"), "---\nname: lint\ndescription: Lint it.\n---\n")
	write(t, filepath.Join(home, ".agents/skills/pdf/SKILL.md"), "---\nname: pdf\ndescription: PDFs.\nallowed-tools: Bash(pdftk:*)\nmetadata:\n  owner: me\n---\n")
	write(t, filepath.Join(home, ".config/opencode/skills/sheets/SKILL.md"), "---\nname: sheets\ndescription: Spreadsheets.\n---\n")
	write(t, filepath.Join(codex, "skills/My_Tool/SKILL.md"), "---\nname: My_Tool\ndescription: "+strings.Repeat("d", 1100)+"\nversion: 3\nauthor: x\n---\n")
	set, warns := Discover(Roots(project, home, ""))
	var names []string
	for _, k := range set.All() {
		names = append(names, k.Name)
	}
	if got := strings.Join(names, " "); got != "release lint pdf sheets My_Tool" {
		t.Fatalf("skills = %s (warnings %q)", got, warns)
	}
	joined := strings.Join(warns, "\n")
	for _, want := range []string{
		`skill My_Tool (` + filepath.Join(codex, "skills/My_Tool/SKILL.md") + `) breaks the Agent Skills spec: the name "My_Tool" should be lowercase letters`,
		"the description is 1100 characters (at most 1024",
		`unknown front matter field "author" ignored`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "skill pdf") || strings.Contains(joined, "skill release") {
		t.Errorf("spec fields (license, compatibility, allowed-tools, metadata) warned about:\n%s", joined)
	}
	write(t, filepath.Join(project, ".agents/skills/folder-a/SKILL.md"), "---\nname: other-name\ndescription: x\n---\n")
	if _, warns := Discover(Roots(project, "", "")); !strings.Contains(strings.Join(warns, "\n"), `the name "other-name" should match its folder "folder-a"`) {
		t.Errorf("a name that is not its folder: %q", warns)
	}
}

// A front matter field no skill format defines is warned about once and
// ignored; the skill loads.
func TestUnknownFrontMatterFieldWarnedOnce(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a/SKILL.md"), "---\nname: a\ndescription: A.\nlicense: MIT\npriority: high\n---\nbody\n")
	write(t, filepath.Join(root, "b/SKILL.md"), "---\nname: b\ndescription: B.\npriority: low\nallowed-tools: Read\n---\nbody\n")
	set, warnings := Discover([]Root{{root, "test"}})
	if set.Len() != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], `unknown front matter field "priority" ignored`) {
		t.Fatalf("len=%d warnings=%q", set.Len(), warnings)
	}
}

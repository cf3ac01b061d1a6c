package commands

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiscover(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	write(t, filepath.Join(project, ".claude/commands/review.md"), "---\ndescription: Review a PR\nargument-hint: [pr] [priority]\nallowed-tools: Bash(gh pr view:*), Read\ncolor: blue\n---\nReview PR #$1 with priority $2.\n")
	write(t, filepath.Join(project, ".claude/commands/frontend/component.md"), "Make a component named $ARGUMENTS.\n")
	write(t, filepath.Join(project, ".opencode/command/test.md"), "---\nagent: coder\nmodel: gpt-4o\n---\nRun the tests.\n")
	write(t, filepath.Join(home, ".claude/commands/review.md"), "the user's review, shadowed\n")
	write(t, filepath.Join(home, ".claude/commands/standup.md"), "# Standup notes\n\nWrite my standup.\n")
	write(t, filepath.Join(home, ".claude/commands/broken.md"), "---\ndescription: \"unclosed\n  nested: [\n---\nx\n")
	write(t, filepath.Join(home, ".claude/commands/empty.md"), "---\ndescription: nothing\n---\n")
	write(t, filepath.Join(home, ".claude/commands/notes.txt"), "not markdown")
	set, warnings := Discover(Dirs(project, home))
	var names []string
	for _, c := range set.All() {
		names = append(names, c.Name+"@"+c.Source)
	}
	if got := strings.Join(names, " "); got != "frontend:component@project .claude/commands review@project .claude/commands standup@~/.claude/commands test@project .opencode/command" {
		t.Fatalf("commands: %s", got)
	}
	w := strings.Join(warnings, "\n")
	for _, want := range []string{`unknown front matter field "color" ignored`, "command /broken skipped", "not valid YAML", "command /empty skipped", "its body is empty",
		"/review in " + filepath.Join(home, ".claude/commands/review.md") + " is not used"} {
		if !strings.Contains(w, want) {
			t.Fatalf("warnings lack %q:\n%s", want, w)
		}
	}
	r, _ := set.Find("review")
	if r.Description != "Review a PR" || r.ArgumentHint != "[pr] [priority]" || strings.Join(r.AllowedTools, "|") != "Bash(gh pr view:*)|Read" {
		t.Fatalf("review = %+v", r)
	}
	if s, _ := set.Find("standup"); s.Description != "Standup notes" {
		t.Fatalf("a command without description is described by its first line: %+v", s)
	}
	if tc, _ := set.Find("test"); tc.Agent != "coder" || tc.Model != "gpt-4o" {
		t.Fatalf("test = %+v", tc)
	}
}

func TestExpand(t *testing.T) {
	c := Command{Name: "review", ArgumentHint: "[pr] [priority]", Body: "Review PR #$1 with priority $2 (\\$1 stays). All: $ARGUMENTS; first again: $ARGUMENTS[0].\n"}
	got, err := c.Expand(`42 "very high"`)
	if want := `Review PR #42 with priority very high (\$1 stays). All: 42 "very high"; first again: 42.`; err != nil || got != strings.Replace(want, `\$1`, `$1`, 1) {
		t.Fatalf("got %q, %v", got, err)
	}
	_, err = c.Expand("42")
	var missing *MissingArgsError
	if !errors.As(err, &missing) || missing.Need != 2 || missing.Got != 1 ||
		err.Error() != "/review needs 2 arguments, got 1 (usage: /review [pr] [priority]); nothing was sent" {
		t.Fatalf("missing argument: %v", err)
	}
	plain := Command{Name: "standup", Body: "Write my standup.\n"}
	if got, _ := plain.Expand("for monday"); got != "Write my standup.\n\nARGUMENTS: for monday" {
		t.Fatalf("appended arguments: %q", got)
	}
	if got, _ := plain.Expand(""); got != "Write my standup." {
		t.Fatalf("no arguments: %q", got)
	}
	set := &Set{list: []Command{c, plain}}
	if c, args, ok := set.Lookup("  /review 7 low "); !ok || c.Name != "review" || args != "7 low" {
		t.Fatalf("lookup: %v %q %v", c.Name, args, ok)
	}
	if _, _, ok := set.Lookup("/etc/hosts is broken"); ok {
		t.Fatal("a path is not a command")
	}
}

package personas

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Must show (issue 28 #7): Markdown agents (Claude Code's sub-agent files)
// are personas beside the JSON ones: front matter for name, description,
// tools (Claude Code's names too), model, temperature; the body is the
// prompt. Broken files are skipped with a warning; the rest loads.
func TestMarkdownAgents(t *testing.T) {
	ws, project, home := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, ws, "seo.json", `{"id": "seo", "name": "SEO", "system_prompt": "You optimise pages."}`)
	agents := filepath.Join(project, ".claude", "agents")
	os.MkdirAll(agents, 0o755)
	write(t, agents, "code-reviewer.md", "---\nname: code-reviewer\ndescription: Expert code reviewer. Use after writing code.\ntools: Read, Grep, Glob, Bash, WebSearch, Write\ndisallowedTools: Write\nmodel: sonnet\ncolor: blue\nmemory: project\n---\nYou are a senior reviewer.\nCheck errors are handled.\n")
	write(t, agents, "coder.md", "---\ndescription: The project's own coder.\ntemperature: 0.1\n---\nYou write Rust only.\n")
	write(t, agents, "broken.md", "---\nname: [unclosed\n  x: {\n---\nbody\n")
	write(t, agents, "seo.md", "---\nname: seo\n---\nshadowed by the JSON file\n")
	userAgents := filepath.Join(home, ".agents", "agents")
	os.MkdirAll(userAgents, 0o755)
	write(t, userAgents, "code-reviewer.md", "---\nname: code-reviewer\n---\nthe user's, shadowed by the project's\n")
	write(t, userAgents, "writer.md", "---\nname: writer\ntools: [Read, Write]\nmodel: gpt-4o-mini\n---\nYou write docs.\n")

	set, errs := Load(ws, MarkdownDirs(project, home)...)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`unknown front matter field "memory" ignored`, "broken.md", "not valid YAML", `"WebSearch"`,
		`model "sonnet" is a Claude Code alias`, `seo.md: id "seo" is already defined by`, `code-reviewer.md: id "code-reviewer" is already defined by`} {
		if !strings.Contains(all, want) {
			t.Fatalf("errors lack %q:\n%s", want, all)
		}
	}
	if got := strings.Join(set.IDs(), " "); got != "default web_scraper coder b2b_leadgen code-reviewer seo writer" {
		t.Fatalf("ids: %s", got)
	}
	r, _ := set.Find("code-reviewer")
	if r.SystemPrompt != "You are a senior reviewer.\nCheck errors are handled.\n" || r.Description != "Expert code reviewer. Use after writing code." ||
		strings.Join(r.Tools, ",") != "read_file,grep,glob,run_command" || r.Model != "" || r.Source != filepath.Join(agents, "code-reviewer.md") {
		t.Fatalf("code-reviewer = %+v", r)
	}
	c, _ := set.Find("coder")
	if c.SystemPrompt != "You write Rust only.\n" || c.Temperature != 0.1 || !c.Allows("run_command") || c.Key != "alt+3" {
		t.Fatalf("an agent file over a built-in keeps what it does not set: %+v", c)
	}
	if w, _ := set.Find("writer"); w.Model != "gpt-4o-mini" || strings.Join(w.Tools, ",") != "read_file,write_file" {
		t.Fatalf("writer = %+v", w)
	}
	if s, _ := set.Find("seo"); s.SystemPrompt != "You optimise pages." {
		t.Fatalf("the JSON persona must keep working: %+v", s)
	}
}

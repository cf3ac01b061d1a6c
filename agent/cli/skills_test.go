package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Must show (issue 15 #2): a skill in .agents/skills is listed by its
// description in the first request and its body is not; after the model
// reads its SKILL.md the body is in the next request; the skill tool
// loads a user skill with its files; a broken SKILL.md is skipped with a
// warning naming it.
func TestSkillsProgressiveDisclosure(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("read_file", `{"path":".agents/skills/release-notes/SKILL.md"}`),
		llmtest.Call("skill", `{"name":"user-style"}`),
		llmtest.Text("done"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	writeFile(t, filepath.Join(env.Dir, ".agents/skills/release-notes/SKILL.md"),
		"---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n# Release notes\nBODY-MARKER-7: group commits by type.\n")
	writeFile(t, filepath.Join(env.Dir, ".claude/skills/bad/SKILL.md"), "---\nname: bad\ndescription: \"unclosed\n  more: [\n---\nbroken\n")
	writeFile(t, filepath.Join(env.Home, ".claude/skills/user-style/SKILL.md"),
		"---\nname: user-style\ndescription: The user's writing style.\n---\nUSER-BODY-3: short sentences.\n")
	writeFile(t, filepath.Join(env.Home, ".claude/skills/user-style/examples/good.md"), "example\n")

	r := polly("-p", "write the release notes")
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	bad := filepath.Join(env.Dir, ".claude/skills/bad/SKILL.md")
	if !strings.Contains(r.stderr, "warning: skill skipped: "+bad+": front matter is not valid YAML") {
		t.Fatalf("no warning naming the broken file:\n%s", r.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	sys := reqs[0].Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "- release-notes: Write release notes from the git log.") ||
		!strings.Contains(sys.Content, "- user-style: The user's writing style.") || !strings.Contains(sys.Content, "call the skill tool") {
		t.Fatalf("system prompt does not list the skills:\n%s", sys.Content)
	}
	for _, m := range reqs[0].Messages {
		if strings.Contains(m.Content, "BODY-MARKER-7") || strings.Contains(m.Content, "USER-BODY-3") || strings.Contains(m.Content, "name: bad") {
			t.Fatalf("first request carries a skill body or a broken skill: %q", m.Content)
		}
	}
	if !contains(reqs[0].Tools, "skill") {
		t.Fatalf("skill tool not offered: %v", reqs[0].Tools)
	}
	if got := reqs[1].LastTurn(); got.Role != "tool" || !strings.Contains(got.Content, "BODY-MARKER-7") {
		t.Fatalf("after read_file the body is not in the request: %+v", got)
	}
	got := reqs[2].LastTurn().Content
	if !strings.Contains(got, "USER-BODY-3: short sentences.") || !strings.Contains(got, "- examples/good.md") || strings.Contains(got, "description:") {
		t.Fatalf("skill tool result = %q", got)
	}

	r = polly("skills")
	if r.code != 0 || !strings.Contains(r.stdout, "release-notes") || !strings.Contains(r.stdout, "~/.claude/skills") ||
		!strings.Contains(r.stderr, bad) {
		t.Fatalf("polly skills: code=%d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// A skill folder outside the project is read without a question even in
// ask mode headless (where a question would be a denial). The model takes
// the path from the listing in the system prompt, as a real one would.
func TestSkillReadOutsideProjectNeverAsks(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Func(func(req llmtest.Request) llmtest.Step {
			sys := req.Messages[0].Content
			_, rest, _ := strings.Cut(sys, "- lint: Lint the code. (")
			path, _, _ := strings.Cut(rest, ")")
			return llmtest.Call("read_file", `{"path":"`+path+`"}`)
		}),
		llmtest.Text("ok"),
	)
	env, polly := cliEnv(t, srv.URL(), map[string]string{"POLLY_MODE": "ask"})
	writeFile(t, filepath.Join(env.Home, ".config/agents/skills/lint/SKILL.md"), "---\nname: lint\ndescription: Lint the code.\n---\nLINT-BODY\n")
	r := polly("-p", "lint it")
	if r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if got := srv.Last().LastTurn(); !strings.Contains(got.Content, "LINT-BODY") {
		t.Fatalf("the read of a user skill did not return its body: %q", got.Content)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Issue 28 item 4: a loaded skill stays whole while its task runs. A 24 KB
// SKILL.md with scripts/ is loaded, then 20 more tool calls follow (past
// the stale rule's 15 messages and the offload limit): every request of
// the task carries the skill's last line, and the task block names the
// skill. The next task lets it shrink like any other output.
func TestLoadedSkillStaysWhole(t *testing.T) {
	var body strings.Builder
	body.WriteString("---\nname: pdf\ndescription: Fill, merge and split PDF files with the scripts in scripts/.\nlicense: Proprietary\n---\n\n# PDF processing\n\n")
	for i := 0; body.Len() < 24<<10; i++ {
		fmt.Fprintf(&body, "## Step %d\n\nRun `python scripts/fill_fields.py form.pdf fields.json out.pdf` and check field %d before you go on; never flatten a form twice.\n\n", i, i)
	}
	body.WriteString("LAST-LINE-OF-THE-PDF-SKILL: report the output path.\n")
	var steps []llmtest.Step
	steps = append(steps, llmtest.Call("skill", `{"name":"pdf"}`))
	for i := 0; i < 20; i++ {
		steps = append(steps, llmtest.Call("read_file", fmt.Sprintf(`{"path":"notes/%02d.txt"}`, i)))
	}
	steps = append(steps, llmtest.Text("filled"))
	srv := llmtest.NewServer(t, steps...)
	env, polly := cliEnv(t, srv.URL(), nil)
	writeFile(t, filepath.Join(env.Dir, ".agents/skills/pdf/SKILL.md"), body.String())
	writeFile(t, filepath.Join(env.Dir, ".agents/skills/pdf/scripts/fill_fields.py"), "print('fill')\n")
	for i := 0; i < 40; i++ {
		writeFile(t, filepath.Join(env.Dir, fmt.Sprintf("notes/%02d.txt", i)), fmt.Sprintf("note %d\n", i))
	}
	if r := polly("-p", "fill in form.pdf"); r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 22 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, req := range reqs[1:] {
		raw := string(req.Raw)
		if !strings.Contains(raw, "LAST-LINE-OF-THE-PDF-SKILL") || !strings.Contains(raw, "fill_fields.py form.pdf") {
			t.Fatalf("request %d after loading the skill lacks its body (offloaded or shrunk)", i+2)
		}
		if !strings.Contains(raw, "Skills loaded for this task: pdf") {
			t.Fatalf("request %d: the task block does not name the loaded skill", i+2)
		}
	}

	// A new task: the skill is no longer held, and 16 calls later it is a
	// stub like any stale output.
	steps = nil
	for i := 20; i < 37; i++ {
		steps = append(steps, llmtest.Call("read_file", fmt.Sprintf(`{"path":"notes/%02d.txt"}`, i)))
	}
	srv.Push(append(steps, llmtest.Text("listed"))...)
	if r := polly("-p", "now list the files again and again", "--continue"); r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if last := string(srv.Last().Raw); strings.Contains(last, "LAST-LINE-OF-THE-PDF-SKILL") || strings.Contains(last, "Skills loaded for this task") {
		t.Fatal("the skill is still held whole in a later task")
	}
}

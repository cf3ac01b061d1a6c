package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dustin/go-humanize"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/tools/permission"
	"polly/workspace"
)

// wired opens the whole stack in temp dirs: config, store, workspace from
// the real template, personas, tools; the model is the fake server.
func wired(t *testing.T, srv *llmtest.Server, mode string) (*App, *agent.Session, string) {
	t.Helper()
	return wiredAsking(t, srv, mode, nil)
}

// wiredAsking is wired with a person answering permission questions
// (nil: headless).
func wiredAsking(t *testing.T, srv *llmtest.Server, mode string, asker permission.Asker) (*App, *agent.Session, string) {
	t.Helper()
	project, home := t.TempDir(), t.TempDir()
	ws := filepath.Join(home, "ws")
	cfg, err := config.Load(config.LoadOptions{ProjectDir: project, Home: home, Flags: config.Flags{Workspace: &ws, Mode: &mode}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(context.Background(), Options{Config: cfg, ProjectDir: project, Template: os.DirFS("../../.agent-template"),
		LLM: llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k"}), Asker: asker})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	for _, w := range a.Warnings {
		t.Logf("warning: %s", w)
	}
	sess, err := a.Session(context.Background(), func(agent.Event) {}, "")
	if err != nil {
		t.Fatal(err)
	}
	return a, sess, project
}

// Must show (issue 4 #2): the first request of a run carries SOUL, the
// persona, MEMORY and the project's AGENTS.md in the documented order; a
// 1 MB MEMORY.md is capped with a note.
func TestSystemPromptOrderAndCaps(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("hi"))
	a, sess, project := wired(t, srv, "ask")
	os.WriteFile(filepath.Join(project, "AGENTS.md"), []byte("# Project rules\nUse tabs. PROJECT-MARKER\n"), 0o644)
	var big strings.Builder
	big.WriteString("# MEMORY\n\n## Project Facts\n")
	for big.Len() < 1<<20 {
		big.WriteString("- the build uses make and a long explanation of why it does so MEMORY-LINE\n")
	}
	os.WriteFile(filepath.Join(a.Workspace.Dir(), "MEMORY.md"), []byte(big.String()), 0o644)

	if _, err := sess.Send(context.Background(), "default", "hello"); err != nil {
		t.Fatal(err)
	}
	sys := srv.Requests()[0].Messages[0]
	if sys.Role != "system" {
		t.Fatalf("first message is %s", sys.Role)
	}
	text := sys.Content
	order := []string{"# Workspace memory: SOUL.md", "# Your persona: Polly", "You are **Polly**", "# Workspace memory: TOOLS.md", "# Workspace memory: AGENTS.md", "# Workspace memory: MEMORY.md", "# Project instructions: AGENTS.md", "PROJECT-MARKER"}
	last := -1
	for _, marker := range order {
		i := strings.Index(text, marker)
		if i < 0 {
			t.Fatalf("system prompt lacks %q", marker)
		}
		if i < last {
			t.Fatalf("%q is out of order", marker)
		}
		last = i
	}
	if n := strings.Count(text, "MEMORY-LINE"); n > 300 || n == 0 {
		t.Fatalf("MEMORY.md lines in the prompt: %d", n)
	}
	if !strings.Contains(text, "tidy it") {
		t.Fatal("no note about the capped MEMORY.md")
	}
	if len(text) > 100_000 {
		t.Fatalf("system prompt is %d bytes", len(text))
	}
	t.Logf("system prompt with a 1 MB MEMORY.md: %d bytes", len(text))
}

// Must show (issue 4 #3): the workspace tools through the real loop: a fact
// saved twice lands once under its section; ERRORS.md gets the error and
// its fix; today's log gets the harness's entry; a failure and a success
// of the same tool on different files are not paired.
func TestWorkspaceToolsThroughTheLoop(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("workspace_save_fact", `{"section":"Project Facts","fact":"The backend is Go 1.26 with SQLite."}`),
		llmtest.Call("workspace_save_fact", `{"section":"project facts","fact":"the backend is Go 1.26 with SQLite"}`),
		llmtest.Call("workspace_log_error", `{"error":"go test: undefined: sqlite.Open","fix":"import modernc.org/sqlite with a blank identifier"}`),
		llmtest.Call("edit_file", `{"path":"missing.go","old_string":"a","new_string":"b"}`),
		llmtest.Call("write_file", `{"path":"notes.txt","content":"x"}`),
		llmtest.Call("edit_file", `{"path":"notes.txt","old_string":"x","new_string":"y"}`),
		llmtest.Call("workspace_read", `{"file":"../../etc/passwd"}`),
		llmtest.Call("edit_file", `{"path":"other.go","old_string":"a","new_string":"b"}`),
		llmtest.Text("Saved."),
	)
	a, sess, _ := wired(t, srv, "yolo")
	out, err := sess.Send(context.Background(), "default", "remember our stack")
	if err != nil || out.Final != "Saved." {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	reqs := srv.Requests()
	if got := reqs[2].LastTurn().Content; !strings.Contains(got, "already saved") {
		t.Fatalf("second save: %q", got)
	}
	if got := reqs[7].LastTurn().Content; !strings.Contains(got, "error") || !strings.Contains(strings.ToLower(got), "outside") {
		t.Fatalf("workspace_read of ../../etc/passwd: %q", got)
	}
	// An edit of missing.go failed and an edit of notes.txt succeeded: not
	// the same target, so nothing was learned and nothing comes back.
	if got := reqs[8].LastTurn().Content; strings.Contains(got, "[known fix") {
		t.Fatalf("a false fix came back: %q", got)
	}
	mem, _ := os.ReadFile(filepath.Join(a.Workspace.Dir(), "MEMORY.md"))
	if n := strings.Count(strings.ToLower(string(mem)), "the backend is go 1.26 with sqlite"); n != 1 {
		t.Fatalf("fact stored %d times:\n%s", n, mem)
	}
	sec := strings.Index(string(mem), "## Project Facts")
	if sec < 0 || strings.Index(string(mem), "The backend is Go") < sec {
		t.Fatalf("fact not under its section:\n%s", mem)
	}
	errs, _ := os.ReadFile(filepath.Join(a.Workspace.Dir(), ".learnings", "ERRORS.md"))
	for _, want := range []string{"undefined: sqlite.Open", "import modernc.org/sqlite"} {
		if !strings.Contains(string(errs), want) {
			t.Errorf("ERRORS.md lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(string(errs), "missing.go") {
		t.Errorf("ERRORS.md paired a failure on missing.go with a success on notes.txt:\n%s", errs)
	}
	today := time.Now().Format(time.DateOnly)
	log, err := os.ReadFile(filepath.Join(a.Workspace.Dir(), "memory", today+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Polly: remember our stack → completed: Saved.", "notes.txt", "tool calls"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("daily log lacks %q:\n%s", want, log)
		}
	}
}

// PRODUCT §11: the first request before memory files (persona prompt +
// tool schemas as sent) stays within 16 KB, and the tool names are the
// contract of PRODUCT §6.
func TestFirstRequestSizeAndToolNames(t *testing.T) {
	srv := llmtest.NewServer(t)
	a, sess, _ := wired(t, srv, "ask")
	for i, p := range a.Personas.All() {
		srv.Push(llmtest.Text("hi"))
		if _, err := sess.Send(context.Background(), p.ID, "hello"); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(srv.Requests()[i].Raw, &body); err != nil {
			t.Fatal(err)
		}
		schemas := 0
		for _, tl := range body.Tools {
			schemas += len(tl)
		}
		size := schemas + len(p.SystemPrompt)
		t.Logf("%-12s %2d tools, schemas %5d bytes + persona prompt %4d = %5d bytes", p.ID, len(body.Tools), schemas, len(p.SystemPrompt), size)
		if size > 16<<10 {
			t.Errorf("%s: first request before memory files is %d bytes > 16 KB", p.ID, size)
		}
	}
	want := []string{"edit_file", "extract", "fetch_url", "glob", "grep", "leads_export", "leads_save", "list_dir", "read_file", "run_command",
		"workspace_daily_log", "workspace_log_error", "workspace_log_learning", "workspace_read", "workspace_request_feature", "workspace_save_fact", "write_file"}
	got := a.Deps.Tools.Names()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("tool %s is not registered (have %v)", w, got)
		}
	}
	first := srv.Requests()[0]
	for _, bound := range []string{"task_plan", "read_tool_output", "grep_tool_output", "delegate_task"} {
		if !slices.Contains(first.Tools, bound) {
			t.Errorf("Polly's first request lacks %s", bound)
		}
	}
}

// Issue 5 #4 through the whole stack: a persona file in the workspace
// overrides a built-in's prompt; a broken one is reported by name and
// skipped while the built-ins still load.
func TestPersonaOverrideAndBrokenFile(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	ws := filepath.Join(home, "ws")
	os.MkdirAll(filepath.Join(ws, "personas"), 0o755)
	os.WriteFile(filepath.Join(ws, "personas", "coder.json"), []byte(`{"id":"coder","system_prompt":"You are the OVERRIDDEN coder."}`), 0o644)
	os.WriteFile(filepath.Join(ws, "personas", "broken.json"), []byte(`{"id": "broken", "temperature": `), 0o644)
	cfg, err := config.Load(config.LoadOptions{ProjectDir: project, Home: home, Flags: config.Flags{Workspace: &ws}})
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t, llmtest.Text("hi"))
	a, err := Open(context.Background(), Options{Config: cfg, ProjectDir: project, Template: os.DirFS("../../.agent-template"),
		LLM: llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k"})})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	warned := strings.Join(a.Warnings, "\n")
	if !strings.Contains(warned, "broken.json") {
		t.Fatalf("the broken persona file is not reported: %q", warned)
	}
	if got := len(a.Personas.All()); got != 4 {
		t.Fatalf("%d personas loaded, want the 4 built-ins", got)
	}
	sess, _ := a.Session(context.Background(), nil, "")
	if _, err := sess.Send(context.Background(), "coder", "hello"); err != nil {
		t.Fatal(err)
	}
	if sys := srv.Last().Messages[0].Content; !strings.Contains(sys, "You are the OVERRIDDEN coder.") || strings.Contains(sys, "You are **coder**") {
		t.Fatalf("the override did not replace the coder prompt: %.300q", sys)
	}
}

// Issue 19 must show 4: a workspace with 60 daily logs of 20 KB and a
// 100 KB MEMORY.md. The first request's system prompt, as the server
// received it, keeps every part under its cap, and the notes say what was
// left out and where it is.
func TestSystemPromptCapsWithHonestNotes(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("hi"))
	a, sess, _ := wired(t, srv, "ask")
	ws := a.Workspace.Dir()
	today := time.Now()
	onDisk := 0
	for d := range 60 {
		date := today.AddDate(0, 0, -d).Format(time.DateOnly)
		var b strings.Builder
		b.WriteString("# " + date + "\n\n")
		for i := 0; b.Len() < 20<<10; i++ {
			fmt.Fprintf(&b, "- %02d:%02d [%s] coder: task %d of %s → completed: done LOG-LINE\n  files: a.go, b.go · 4 tool calls · session s%d DETAIL-LINE\n", i/60%24, i%60, workspace.ProjectTag(a.ProjectDir), i, date, i)
		}
		os.WriteFile(filepath.Join(ws, "memory", date+".md"), []byte(b.String()), 0o644)
		onDisk += b.Len()
	}
	var mem strings.Builder
	mem.WriteString("# MEMORY\n\n## Project Facts\n")
	for i := 0; mem.Len() < 100<<10; i++ {
		fmt.Fprintf(&mem, "- fact %04d: the service talks to the billing API through a retrying client MEMORY-LINE _(2026-11-01)_\n", i)
	}
	os.WriteFile(filepath.Join(ws, "MEMORY.md"), []byte(mem.String()), 0o644)
	onDisk += mem.Len()

	if _, err := sess.Send(context.Background(), "default", "hello"); err != nil {
		t.Fatal(err)
	}
	sys := srv.Requests()[0].Messages[0].Content
	part := func(heading string) string {
		t.Helper()
		i := strings.Index(sys, heading)
		if i < 0 {
			t.Fatalf("no part %q in the system prompt", heading)
		}
		rest := sys[i:]
		if loc := nextPart.FindStringIndex(rest[len(heading):]); loc != nil {
			rest = rest[:len(heading)+loc[0]]
		}
		return rest
	}
	memPart := part("# Workspace memory: MEMORY.md")
	if n := strings.Count(memPart, "MEMORY-LINE"); n == 0 || n > 200 || len(memPart) > 25<<10+600 {
		t.Errorf("MEMORY.md part: %d facts, %d bytes", n, len(memPart))
	}
	memNote := fmt.Sprintf("[MEMORY.md is %s bytes; only the first 200 lines / 25 KB are shown, the rest is in %s — read it with workspace_read",
		humanize.Comma(int64(mem.Len())), filepath.Join(ws, "MEMORY.md"))
	if !strings.Contains(memPart, memNote) {
		t.Errorf("MEMORY.md note missing; part ends %q", memPart[max(len(memPart)-400, 0):])
	}
	older := part("# Daily logs of earlier days")
	if !strings.Contains(older, "[58 older daily logs are not loaded (newest: memory/"+today.AddDate(0, 0, -2).Format(time.DateOnly)+".md") ||
		!strings.Contains(older, "they are in "+filepath.Join(ws, "memory")) {
		t.Errorf("older logs note: %q", older)
	}
	for _, d := range []time.Time{today.AddDate(0, 0, -1), today} {
		name := "memory/" + d.Format(time.DateOnly) + ".md"
		p := part("# Daily log: " + map[bool]string{true: "today", false: "yesterday"}[d.Equal(today)] + ", " + d.Format(time.DateOnly))
		if strings.Contains(p, "DETAIL-LINE") || len(p) > 3<<10+500 {
			t.Errorf("%s part is %d bytes (detail lines: %v)", name, len(p), strings.Contains(p, "DETAIL-LINE"))
		}
		if !strings.Contains(p, "["+name+": only this project's newest ") || !strings.Contains(p, `workspace_read("`+name+`") has the older ones, the details and other projects']`) {
			t.Errorf("%s note missing: %q", name, p[max(len(p)-300, 0):])
		}
	}
	if len(sys) > 64<<10 {
		t.Errorf("system prompt is %d bytes", len(sys))
	}
	t.Logf("memory on disk %d bytes → system prompt %d bytes (MEMORY.md part %d, log lines %d)", onDisk, len(sys), len(memPart), strings.Count(sys, "LOG-LINE"))
}

// nextPart finds the heading of the next part of the system prompt.
var nextPart = regexp.MustCompile(`\n\n# (Workspace memory:|Your persona|Learnings \(|Feature requests|Daily log|Project instructions|Untrusted data)`)

// Issue 17: the description of every tool in every persona's first request,
// as the fake server received it, is the text of the tool's file
// (tools/descriptions/<tool>.md, or agent/descriptions/ for the tools the
// agent binds); a file with template actions matches with any value in
// their place.
func TestToolDescriptionsOnTheWireAreTheFiles(t *testing.T) {
	srv := llmtest.NewServer(t)
	a, sess, _ := wired(t, srv, "ask")
	seen := map[string]bool{}
	for i, p := range a.Personas.All() {
		srv.Push(llmtest.Text("hi"))
		if _, err := sess.Send(context.Background(), p.ID, "hello"); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Tools []struct {
				Function struct {
					Name        string `json:"name"`
					Description string `json:"description"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(srv.Requests()[i].Raw, &body); err != nil {
			t.Fatal(err)
		}
		for _, tl := range body.Tools {
			name, got := tl.Function.Name, tl.Function.Description
			file := descriptionFile(t, name)
			if !descriptionMatches(file, got) {
				t.Errorf("%s (persona %s): description on the wire\n%q\nis not the file's text\n%q", name, p.ID, got, file)
			}
			seen[name] = true
		}
	}
	for _, name := range []string{"read_file", "run_command", "fetch_url", "leads_export", "task_plan", "delegate_task", "workspace_save_fact"} {
		if !seen[name] {
			t.Errorf("no request offered %s", name)
		}
	}
}

// descriptionFile reads the description file of a tool, from the tools
// package or the agent package.
func descriptionFile(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range []string{"../../tools/descriptions", "../descriptions"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".md"))
		if err == nil {
			return strings.TrimRight(string(b), "\n")
		}
	}
	t.Fatalf("tool %s has no description file", name)
	return ""
}

// descriptionMatches compares a description with its file, where each
// {{…}} action of the file stands for a non-empty value without a newline.
func descriptionMatches(file, got string) bool {
	action := regexp.MustCompile(`\{\{[^}]*\}\}`)
	literals := action.Split(file, -1)
	for i, l := range literals {
		literals[i] = regexp.QuoteMeta(l)
	}
	return regexp.MustCompile(`^` + strings.Join(literals, `[^\n{}]+`) + `$`).MatchString(got)
}

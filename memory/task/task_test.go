package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 27 #3: the approach as 20 real models state it is captured as
// the expanded understanding; acknowledgements and answers are not.
func TestIsPlanLike(t *testing.T) {
	plans := []string{
		// the seed's own example
		"I'll implement: A) login, B) signup, C) reset, D) profile",
		"Sure! Here's my plan:\n1. Read the parser\n2. Split the lexer out\n3. Run the tests",
		"- read main.go\n- find the handler\n- add the flag and a test for it",
		"I will first read the parser to see how tokens flow, then split the lexer into its own file, and finally run the tests to make sure nothing broke.",
		"Plan:\n1) inspect the failing test\n2) fix the off-by-one\n3) rerun",
		"Here's what I'll do:\n* inspect the schema\n* write the migration\n* update the queries",
		"I'll: read the config, fix the parser and run the tests.",
		"First I'll read config.go, then I'll patch the loader.",
		"Let me start by reading the handler, then I will add the validation.",
		"Step 1: reproduce the crash.\nStep 2: find the nil map.\nStep 3: add a test.",
		"### Step 1 — reproduce\nRun the failing command.\n### Step 2 — fix\nPatch the nil check.",
		"a. list the endpoints\nb. check each for auth\nc. report the gaps",
		"To do this I'll (1) grep for the flag (2) remove the dead branch (3) update the docs.",
		"- [ ] read the spec\n- [ ] implement the parser\n- [ ] add fuzz tests",
		"**1.** Read the logs\n**2.** Find the timeout\n**3.** Raise it",
		"The approach: scan the repo for TODOs, group them by package, and write a report.",
		"read the failing test → find the regression → fix it → rerun the suite",
		"1️⃣ Read the code\n2️⃣ Write the fix\n3️⃣ Test it",
		"I'm going to do three things: update the Dockerfile, pin the base image, and rebuild.",
		"Okay. My approach is to reproduce the bug with a small test first, and then bisect the commits until I find the change that introduced it; after that I will write the fix.",
	}
	notPlans := []string{
		"Let me look.",
		"I'll read the file first.",
		"Let me read main.go to understand the structure.",
		"The answer is 42. It comes from the config file where the value is set explicitly by the team.",
		"Done! The file now compiles and the test passes on my machine.",
		"Reading the configuration file now to check the port setting.",
	}
	if len(plans) != 20 {
		t.Fatalf("%d plan shapes", len(plans))
	}
	for _, p := range plans {
		if !IsPlanLike(p) {
			t.Errorf("not captured: %q", p)
		}
		var s State
		s.Begin("do it", time.Now())
		s.Observe(p)
		if s.Understanding != strings.TrimSpace(p) {
			t.Errorf("understanding = %q", s.Understanding)
		}
	}
	for _, p := range notPlans {
		if IsPlanLike(p) {
			t.Errorf("captured: %q", p)
		}
	}
}

// Must show (issue 3 #2): the expanded understanding comes from the first
// plan-like reply, not from the raw request; a follow-up does not replace
// the original request.
func TestUnderstandingAndFollowUps(t *testing.T) {
	var s State
	req := "Refactor the parser so the lexer is separate."
	if !s.IsNewTask(req) {
		t.Fatal("the first message must start a task")
	}
	s.Begin(req, time.Now())
	s.Observe("Let me look at the code.")
	if s.Understanding != "" {
		t.Fatalf("captured a non-plan reply: %q", s.Understanding)
	}
	plan := "My plan:\n1. Read parser.go\n2. Move the lexer to lexer.go\n3. Run go test"
	s.Observe(plan)
	s.Observe("Another plan:\n1. something else\n2. entirely")
	if s.Understanding != plan {
		t.Fatalf("understanding = %q, want the first plan-like reply", s.Understanding)
	}
	if strings.Contains(s.Understanding, req) {
		t.Fatal("understanding copied the raw request")
	}

	// Mid-task follow-ups never start a new task.
	for _, msg := range []string{"also keep the old API", "yes", "continue please"} {
		if s.IsNewTask(msg) {
			t.Fatalf("%q started a new task mid-task", msg)
		}
		s.FollowUp(msg)
	}
	// After a finished task, a bare continuation is still a follow-up…
	s.Finished = true
	if s.IsNewTask("ok, go ahead") {
		t.Fatal("a continuation started a new task")
	}
	// …and so is an answer to the model's question…
	s.LastReplyAsked = true
	if s.IsNewTask("Use the v2 API and keep both entry points working for now") {
		t.Fatal("an answer to a question started a new task")
	}
	// …and so is anything while plan steps remain open.
	s.LastReplyAsked = false
	s.SetPlan([]Step{{Title: "read", Status: Done}, {Title: "move", Status: InProgress}})
	if s.IsNewTask("Now write a changelog entry for the release") {
		t.Fatal("a new message started a task while the plan is open")
	}
	if s.OriginalRequest != req {
		t.Fatalf("original request replaced: %q", s.OriginalRequest)
	}
	// A finished task with a done plan: a new request starts a new task.
	s.SetPlan([]Step{{Title: "read", Status: Done}, {Title: "move", Status: Done}})
	if !s.IsNewTask("Now write a changelog entry for the release") {
		t.Fatal("a new request after a finished task did not start a task")
	}
}

func TestPlanBecomesUnderstandingWhenNoTextPlan(t *testing.T) {
	var s State
	s.Begin("do it", time.Now())
	s.SetPlan([]Step{{Title: "first", Status: InProgress}, {Title: "second", Status: Todo}})
	if !strings.Contains(s.Understanding, "1. first") {
		t.Fatalf("understanding = %q", s.Understanding)
	}
	i, st, ok := s.CurrentStep()
	if !ok || i != 0 || st.Title != "first" {
		t.Fatalf("current step = %d %+v %v", i, st, ok)
	}
}

func TestRecordKeepsTheLast20(t *testing.T) {
	var s State
	for i := 0; i < 50; i++ {
		s.Record(Action{Tool: "grep", Brief: "pattern=x", OK: true}, []string{"a.go", "b.go"}, nil)
	}
	if s.ToolCalls != 50 || len(s.Recent) != MaxRecent || len(s.Files) != 2 {
		t.Fatalf("calls=%d recent=%d files=%v", s.ToolCalls, len(s.Recent), s.Files)
	}
}

func TestCheckpointIsWrittenAtomicallyWithEverySection(t *testing.T) {
	dir := t.TempDir()
	s := State{OriginalRequest: "Build the thing\nwith details", Understanding: "1. a\n2. b", ToolCalls: 31}
	s.SetPlan([]Step{{Title: "a", Status: Done}, {Title: "b", Status: Todo}})
	s.Record(Action{Tool: "edit_file", Brief: "path=x.go", OK: false, Note: "old_string not found", At: time.Now()}, []string{"x.go"}, nil)
	path, _, err := Write(dir, &s, Checkpoint{AgentID: "coder#2", Persona: "coder", Session: "s1", Reason: "periodic", SavedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "coder_2", "active_task.md") {
		t.Fatalf("path = %s", path)
	}
	b, _ := os.ReadFile(path)
	for _, sec := range []string{"## Original Goal", "## Full Original Request", "## Initial Plan / Understanding", "## Plan", "## Recent Tool Activity", "## Files Touched", "## Stats", "1. [DONE] a", "2. [TODO] b", "✗ edit_file path=x.go — old_string not found", "- x.go", "Tool calls: 32"} {
		if !strings.Contains(string(b), sec) {
			t.Errorf("checkpoint lacks %q", sec)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}

func TestCheckpointUnwritableDir(t *testing.T) {
	dir := t.TempDir()
	block := filepath.Join(dir, "file")
	os.WriteFile(block, []byte("x"), 0o644)
	s := State{OriginalRequest: "x"}
	if _, _, err := Write(block, &s, Checkpoint{AgentID: "a"}); err == nil {
		t.Fatal("writing under a file succeeded")
	}
}

// Issue 27 #6: active_task.md is the current task's; a new task (another
// session's) never overwrites a task that is not finished: that one is
// kept beside it by session, and comes back when its session writes again.
// A finished task's checkpoint is simply replaced.
func TestCheckpointPerTask(t *testing.T) {
	dir := t.TempDir()
	long := State{OriginalRequest: "LONG-TASK: audit every handler", ToolCalls: 140, StartedAt: time.Unix(1000, 0)}
	path, aside, err := Write(dir, &long, Checkpoint{AgentID: "default", Session: "sessA", Reason: "end"})
	if err != nil || aside != "" {
		t.Fatal(err, aside)
	}
	hi := State{OriginalRequest: "hi", StartedAt: time.Unix(2000, 0), Finished: true}
	_, aside, err = Write(dir, &hi, Checkpoint{AgentID: "default", Session: "sessB", Reason: "end"})
	if err != nil || aside != filepath.Join(dir, "default", "active_task.sessA.md") {
		t.Fatalf("aside %q, %v", aside, err)
	}
	if b, _ := os.ReadFile(aside); !strings.Contains(string(b), "LONG-TASK") || !strings.Contains(string(b), "Tool calls: 140") {
		t.Fatalf("the long task's checkpoint was not kept:\n%s", b)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "> hi") {
		t.Fatalf("active_task.md is not the current task's:\n%s", b)
	}
	// The long task resumes: its checkpoint is current again; the finished
	// one is replaced, and the copy beside it goes.
	long.ToolCalls = 141
	if _, aside, err = Write(dir, &long, Checkpoint{AgentID: "default", Session: "sessA", Reason: "periodic"}); err != nil || aside != "" {
		t.Fatalf("aside %q, %v", aside, err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "LONG-TASK") {
		t.Fatal("the resumed task's checkpoint is not current")
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "default"))
	if len(entries) != 1 {
		t.Fatalf("files: %v", entries)
	}
	// A legacy checkpoint (no marker) of another session is kept too.
	os.WriteFile(path, []byte("# Active task — default\n\n_Written by Polly (end) at 2026-11-20T10:00:00Z. Session old1, persona default._\n"), 0o644)
	if _, aside, _ = Write(dir, &hi, Checkpoint{AgentID: "default", Session: "sessB"}); aside != filepath.Join(dir, "default", "active_task.old1.md") {
		t.Fatalf("legacy checkpoint: aside %q", aside)
	}
}

// Task boundaries: a finished task is followed by a new one unless the
// message refers to it (its files or its distinctive words).
func TestFinishedTaskReopensOnlyWhenReferredTo(t *testing.T) {
	var s State
	s.Begin("Audit the config loader in config/load.go for unchecked errors", time.Now())
	s.Record(Action{Tool: "read_file"}, nil, []string{"config/load.go"})
	s.Record(Action{Tool: "write_file"}, []string{"notes/file7.md"}, nil)
	s.Finished = true
	cases := []struct {
		msg    string
		reopen bool
	}{
		{"also check file7.md again", true},                             // names a file
		{"look at load.go once more", true},                             // base name of a file read
		{"also audit the parser", true},                                 // "also" + a distinctive word (audit)
		{"the config loader misses unchecked errors in main too", true}, // two distinctive words
		{"Write a haiku about autumn", false},
		{"What is the capital of France?", false},
	}
	for _, c := range cases {
		if got := !s.IsNewTask(c.msg); got != c.reopen {
			t.Errorf("%q: reopen = %v, want %v", c.msg, got, c.reopen)
		}
	}
	s.Begin("Write a haiku about autumn", time.Now())
	if s.Previous != "Previous task: Audit the config loader in config/load.go for unchecked errors (done)" ||
		len(s.Files)+len(s.FilesRead)+s.ToolCalls != 0 {
		t.Fatalf("new task state: %+v", s)
	}
}

// Every follow-up is kept whole, with the id of a stored long one.
func TestEveryFollowUpIsKept(t *testing.T) {
	var s State
	s.Begin("task", time.Now())
	for i := 0; i < 8; i++ {
		s.FollowUp(strings.Repeat("f", i+1))
	}
	s.SetLastFollowUpID(99)
	if len(s.FollowUps) != 8 || s.FollowUps[0] != "f" || s.FollowUpIDs[7] != 99 || s.FollowUpIDs[0] != 0 {
		t.Fatalf("follow-ups %q ids %v", s.FollowUps, s.FollowUpIDs)
	}
}

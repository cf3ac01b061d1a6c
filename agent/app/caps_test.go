package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dustin/go-humanize"

	"polly/agent/llmtest"
)

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
			fmt.Fprintf(&b, "- %02d:%02d coder: task %d of %s → completed: done LOG-LINE\n  files: a.go, b.go · 4 tool calls · session s%d DETAIL-LINE\n", i/60%24, i%60, i, date, i)
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
		if !strings.Contains(p, "["+name+": only the newest ") || !strings.Contains(p, `workspace_read("`+name+`") has the older ones and the details]`) {
			t.Errorf("%s note missing: %q", name, p[max(len(p)-300, 0):])
		}
	}
	if len(sys) > 64<<10 {
		t.Errorf("system prompt is %d bytes", len(sys))
	}
	t.Logf("memory on disk %d bytes → system prompt %d bytes (MEMORY.md part %d, log lines %d)", onDisk, len(sys), len(memPart), strings.Count(sys, "LOG-LINE"))
}

// nextPart finds the heading of the next part of the system prompt.
var nextPart = regexp.MustCompile(`\n\n# (Workspace memory:|Your persona|Learnings \(|Feature requests|Daily log|Project instructions)`)

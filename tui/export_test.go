package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"polly/agent/llmtest"
)

// /export writes the session as Markdown: the user's messages, the
// replies, each call with its status and the start of its output, the
// user's ! commands.
func TestExportMarkdown(t *testing.T) {
	h := newHarness(t, harnessOpts{},
		llmtest.Call("run_command", `{"command":"echo boom; exit 3"}`),
		llmtest.Text("It failed with **exit 3**."))
	h.prompt("/export")
	if !strings.Contains(h.screen(), "nothing to export yet") {
		t.Fatalf("an empty session exported:\n%s", h.screen())
	}
	h.prompt("run the thing")
	h.until("idle", h.idle)
	h.prompt("!echo from me")
	h.until("idle", h.idle)
	if err := os.MkdirAll(filepath.Join(h.dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.prompt("/export notes/out.md")
	h.until("the export", func() bool { return hasItem(h.m.current().tr, kSystem, "exported this session") })
	b, err := os.ReadFile(filepath.Join(h.dir, "notes", "out.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"# Polly session " + h.m.sessID + ": run the thing", "## Polly", "### You\n\nrun the thing",
		"**run_command** `command=echo boom; exit 3`: failed, exit 3", "```text\nexit code: 3\nboom\n```",
		"### Polly\n\nIt failed with **exit 3**.", "**You ran** `echo from me`", "from me"} {
		if !strings.Contains(md, want) {
			t.Fatalf("the export lacks %q:\n%s", want, md)
		}
	}
	h.prompt("/export")
	want := filepath.Join(h.dir, "polly-session-"+h.m.sessID+".md")
	h.until("the default file", func() bool { _, err := os.Stat(want); return err == nil })
}

// A turn that ran long ends with the bell (or an OSC 9 notification) while
// the terminal is not focused; never while it is, nor with notify off.
func TestLongTurnNotifies(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"), llmtest.Text("four"))
	h.m.notify, h.m.notifyAfter = "bell", 0
	h.prompt("focused")
	h.until("idle", h.idle)
	if len(h.raw) != 0 {
		t.Fatalf("rang while focused: %q", h.raw)
	}
	h.send(tea.BlurMsg{})
	h.prompt("away")
	h.until("the bell", func() bool { return len(h.raw) == 1 })
	if h.raw[0] != "\a" {
		t.Fatalf("sent %q", h.raw[0])
	}
	h.m.notify = "osc9"
	h.prompt("away again")
	h.until("the notification", func() bool { return len(h.raw) == 2 })
	if h.raw[1] != "\x1b]9;Polly: Polly finished\a" {
		t.Fatalf("sent %q", h.raw[1])
	}
	h.m.notifyAfter = time.Hour // a short turn is not announced
	h.prompt("short")
	h.until("idle", h.idle)
	h.settle(50 * time.Millisecond)
	if len(h.raw) != 2 {
		t.Fatalf("a short turn was announced: %q", h.raw)
	}
}

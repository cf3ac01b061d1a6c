package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"polly/agent"
	"polly/memory/chat"
	"polly/memory/task"
	"polly/tools"
	"polly/tools/permission"
)

// richTranscript fills the current persona with one item of every kind,
// and a status with every segment.
func richTranscript(h *harness) {
	d := hdr("default")
	exit := 2
	long := strings.Repeat("a very long line that must wrap and never overflow the terminal width ", 4)
	sub := agent.Header{Session: "s1", Agent: "coder", Persona: "coder", Parent: "default"}
	h.send(eventsMsg{items: []any{
		agent.MessageDone{Header: d, Message: chat.Message{Role: chat.Assistant, Content: "# Plan\n\n1. read `main.go`\n2. fix it\n\n```go\nfunc main() { fmt.Println(\"" + long + "\") }\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"}},
		agent.ToolStarted{Header: d, CallID: "1", Tool: "edit_file", Brief: "path=" + strings.Repeat("deep/", 30) + "main.go"},
		agent.ToolFinished{Header: d, CallID: "1", Tool: "edit_file", Duration: 3 * time.Millisecond, OutputChars: 10, OutputLines: 1, Diff: "--- a/main.go\n+++ b/main.go\n@@ -1,2 +1,2 @@\n-" + long + "\n+" + long + "\n"},
		agent.ToolStarted{Header: d, CallID: "2", Tool: "run_command", Brief: "command=go test ./..."},
		agent.ToolFinished{Header: d, CallID: "2", Tool: "run_command", Duration: 1500 * time.Millisecond, OutputChars: 52000, OutputLines: 900, IsError: true, ExecID: 77, Offloaded: true, ExitCode: &exit, Preview: long},
		agent.ToolStarted{Header: d, CallID: "3", Tool: "delegate_task", Brief: "agent=coder"},
		agent.SubAgentStarted{Header: sub, CallID: "3", Task: long, ChildSession: "k"},
		agent.SubAgentProgress{Header: sub, Tool: "read_file", Brief: "path=" + long, Elapsed: 2 * time.Second, ToolCalls: 3, Usage: chat.Usage{PromptTokens: 5000, CompletionTokens: 200}, Cost: 0.01},
		agent.AnchorInjected{Header: d, Number: 1, ToolCalls: 5, Text: "[TASK ANCHOR]\n" + long},
		agent.SummaryFinished{Header: d, TokensBefore: 41000, TokensAfter: 9000, Replaced: 30, Kept: 15, Accepted: true, Added: []string{long}},
		agent.Retrying{Header: d, Attempt: 1, Wait: time.Second, Reason: "429 " + long},
		agent.ErrorEvent{Header: d, Kind: "network", Message: long, Hint: long},
		agent.StatusUpdate{Header: d, Status: agent.Status{Persona: "default", Model: "gpt-4.1-with-a-long-model-name", ContextTokens: 23456, Threshold: 40000,
			ToolCalls: 12, AnchorIn: 3, CheckpointIn: 18, Compactions: 2, Usage: chat.Usage{PromptTokens: 123456, CompletionTokens: 7890}, Cost: 1.2345, HasPrices: true,
			Plan: []task.Step{{Title: "read", Status: task.Done}, {Title: long, Status: task.InProgress}, {Title: "test", Status: task.Todo}}, Anchor: long, OriginalRequest: long}},
	}})
	h.m.current().tr.add(&item{kind: kUser, text: long})
}

// checkScreen: exactly h lines, none wider than w; tabs on top; the status
// bar is the last line, one line, exactly w wide.
func checkScreen(t *testing.T, name, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Errorf("%s: %d lines, want %d", name, len(lines), h)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("%s: line %d is %d wide (> %d): %q", name, i, lw, w, ansi.Strip(l))
		}
	}
	if !strings.Contains(lines[0], "Polly") {
		t.Errorf("%s: first line is not the tabs: %q", name, ansi.Strip(lines[0]))
	}
	last := lines[len(lines)-1]
	if ansi.StringWidth(last) != w || !strings.Contains(ansi.Strip(last), " • ") {
		t.Errorf("%s: last line is not a full-width status bar: %q", name, ansi.Strip(last))
	}
}

func TestLayoutNothingOverflows(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {200, 60}, {60, 16}} {
		w, hh := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, hh), func(t *testing.T) {
			h := newHarness(t, harnessOpts{w: w, h: hh})
			h.m.noColor = false
			h.send(tea.BackgroundColorMsg{})
			richTranscript(h)
			checkScreen(t, "chat", h.m.View().Content, w, hh)
			h.key("ctrl+x") // expanded block
			checkScreen(t, "expanded", h.m.View().Content, w, hh)
			h.key("pgup")
			checkScreen(t, "scrolled", h.m.View().Content, w, hh)
			h.typeText("/")
			checkScreen(t, "completion", h.m.View().Content, w, hh)
			h.m.input.Reset()

			for _, k := range []string{"f1", "ctrl+t", "ctrl+g", "ctrl+o", "ctrl+s", "ctrl+y"} {
				h.key(k)
				h.settle(50 * time.Millisecond)
				checkScreen(t, "panel "+k, h.m.View().Content, w, hh)
				if k == "ctrl+g" {
					h.key("enter")
					checkScreen(t, "child transcript", h.m.View().Content, w, hh)
					h.key("esc")
				}
				h.key("esc")
			}
			ask := &asker{b: h.b}
			go ask.Ask(t.Context(), permission.Request{Tool: "edit_file", Reason: "writes outside the project (" + strings.Repeat("x/", 80) + ")",
				Access: tools.Access{Kind: tools.AccessWrite, Preview: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n" + strings.Repeat("+line\n", 100)}})
			h.until("the dialog", func() bool { return len(h.m.perm.asks) == 1 })
			h.answerable()
			checkScreen(t, "dialog", h.m.View().Content, w, hh)
			h.key("n")
			checkScreen(t, "dialog reason", h.m.View().Content, w, hh)
			h.key("esc")

			// Resize: caches are rebuilt at the new width.
			h.send(tea.WindowSizeMsg{Width: w / 2, Height: hh})
			checkScreen(t, "resized", h.m.View().Content, w/2, hh)
		})
	}
}

// Golden screens at 80×24 and 200×60 (go test ./tui -run Golden -update
// rewrites them). Escape codes are stripped: the files are for reading.
func TestGoldenScreens(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			h := newHarness(t, harnessOpts{w: size[0], h: size[1]})
			h.m.now = func() time.Time { return time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) }
			h.m.r.now = h.m.now
			d := hdr("default")
			h.m.current().tr.add(&item{kind: kUser, text: "fix the failing parser test"})
			h.send(eventsMsg{items: []any{
				agent.MessageDone{Header: d, Message: chat.Message{Role: chat.Assistant, Content: "I'll run the tests first.\n\n- `go test ./parser`\n- then fix it"}},
				agent.ToolStarted{Header: d, CallID: "1", Tool: "run_command", Brief: "command=go test ./parser"},
				agent.ToolFinished{Header: d, CallID: "1", Tool: "run_command", Duration: 1200 * time.Millisecond, OutputChars: 3400, OutputLines: 80, IsError: true, ExecID: 12, Offloaded: true, Preview: "--- FAIL: TestParse (0.00s)"},
				agent.ToolStarted{Header: d, CallID: "2", Tool: "edit_file", Brief: "path=parser/parse.go"},
				agent.ToolFinished{Header: d, CallID: "2", Tool: "edit_file", Duration: 4 * time.Millisecond, OutputChars: 30, OutputLines: 1, Diff: "--- a/parser/parse.go\n+++ b/parser/parse.go\n@@ -10,3 +10,3 @@\n func parse(s string) {\n-\treturn nil\n+\treturn &Node{}\n }\n"},
				agent.StatusUpdate{Header: d, Status: agent.Status{Persona: "default", Model: "gpt-4.1", ContextTokens: 12300, Threshold: 40000, ToolCalls: 2, AnchorIn: 3, CheckpointIn: 28, Usage: chat.Usage{PromptTokens: 24000, CompletionTokens: 800}}},
			}})
			golden.RequireEqual(t, []byte(ansi.Strip(h.m.View().Content)))
		})
	}
}

package tui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"polly/agent"
	"polly/agent/llmtest"
)

// transcriptText renders every item of a transcript at width w, without
// colours: what the chat shows, scrolled through.
func transcriptText(h *harness, tr *transcript, w int) string {
	var out []string
	for _, it := range tr.items {
		for _, l := range h.m.r.lines(it, w) {
			out = append(out, strings.TrimRight(ansi.Strip(l), " "))
		}
	}
	return strings.Join(out, "\n")
}

// Must show (issue 29 #5): a session resumed from the store looks as it
// did live — a collapsed paste, a failed command with its exit code and
// duration, an edit's diff, a ! command, a sub-agent's block, a reply the
// user cancelled (kept, marked) — and its token totals count the
// sub-agent as they did live.
func TestResumedTranscriptMatchesLive(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 100, h: 40},
		llmtest.Call("run_command", `{"command":"echo boom; exit 1"}`),
		llmtest.Call("write_file", `{"path":"notes.txt","content":"one\ntwo\n"}`),
		llmtest.Text("Done: **notes.txt** is written."),
		llmtest.Call("delegate_task", `{"agent":"coder","task":"say hi"}`),
		llmtest.Text("hi from coder"),
		llmtest.Text("coder said hi"),
		llmtest.Stall{AfterText: "Here is the start of a long answer"},
		llmtest.Text("going on"),
	)
	h.typeText("look at: ")
	h.send(tea.PasteMsg{Content: strings.Repeat("a pasted line\n", 12)})
	h.key("enter")
	h.until("the first turn", h.idle)
	h.prompt("ask coder")
	h.until("the delegation", h.idle)
	h.prompt("!echo from the shell")
	h.until("the command", h.idle)
	h.prompt("go on")
	h.until("the partial reply", func() bool { return strings.Contains(h.screen(), "Here is the start") })
	h.key("esc")
	h.until("the cancel", h.idle)

	live := transcriptText(h, h.m.current().tr, 100)
	liveTokens := h.m.current().status.Usage
	for _, want := range []string{"[pasted 12 lines #1]", "✗ exit 1 · ", "+one", "▾ ! echo from the shell", "Here is the start of a long answer", "cut short", "cancelled; the session is saved"} {
		if !strings.Contains(live, want) {
			t.Fatalf("the live transcript lacks %q:\n%s", want, live)
		}
	}

	id := h.m.sessID
	h.send(resumeSessionMsg{id: id})
	h.until("the resumed session", func() bool { return h.idle() && len(h.m.current().tr.items) > 1 })
	resumed := transcriptText(h, h.m.current().tr, 100)
	resumed = strings.TrimSuffix(resumed, "\n\n  resumed session "+id)
	if resumed != live {
		t.Fatalf("resumed transcript differs from the live one\n--- live\n%s\n--- resumed\n%s", live, resumed)
	}
	if got := h.m.current().status.Usage; got != liveTokens {
		t.Fatalf("tokens live %+v, resumed %+v", liveTokens, got)
	}
	golden.RequireEqual(t, durations.ReplaceAll([]byte(strings.ReplaceAll(resumed, id, "SESSION1")), []byte("DUR")))
	// The model sees the cut reply, marked, before the next message.
	h.prompt("please finish")
	h.until("the reply", h.idle)
	msgs := h.srv.Last().Messages
	var partial string
	for _, m := range msgs {
		if m.Role == "assistant" && strings.HasPrefix(m.Content, "Here is the start") {
			partial = m.Content
		}
	}
	if partial != "Here is the start of a long answer"+agent.PartialMark {
		t.Fatalf("the model got the cut reply as %q", partial)
	}
}

// An undo's note to the model comes back as a note, not as a message the
// user wrote.
func TestResumedUndoNoteIsANote(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 100, h: 30},
		llmtest.Call("write_file", `{"path":"a.txt","content":"one\n"}`), llmtest.Text("wrote a"))
	h.prompt("write a")
	h.until("idle", h.idle)
	h.prompt("/undo")
	h.until("the undo block", func() bool { return strings.Contains(h.screen(), "undid turn 1") })
	id := h.m.sessID
	h.send(resumeSessionMsg{id: id})
	h.until("the resumed session", func() bool { return h.idle() && len(h.m.current().tr.items) > 2 })
	tr := h.m.current().tr
	if hasItem(tr, kUser, "NOTE from Polly") || hasItem(tr, kUser, "the user ran undo") {
		t.Fatalf("the undo note is shown as a user message:\n%s", h.screen())
	}
	if !hasItem(tr, kNotice, "the user ran undo. Turn 1 (\"write a\")") {
		t.Fatalf("no undo note:\n%s", h.screen())
	}
}

// /model NAME is remembered with the session: resuming it (after /clear
// went back to the default) talks to that model again; /model --default
// saves it to the user's config.
func TestModelRememberedPerSession(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"))
	var saved string
	h.m.saveDefault = func(m string) (string, error) { saved = m; return "/home/u/.config/polly/config.json", nil }
	h.prompt("/model gpt-4.1-mini") // before the session has an id: remembered after the first turn
	h.until("the switch", h.idle)
	h.prompt("hi")
	h.until("idle", h.idle)
	id := h.m.sessID
	h.until("the choice stored", func() bool {
		got, err := h.app.Store.SessionModels(context.Background(), id)
		return err == nil && got["default"] == "gpt-4.1-mini"
	})
	h.prompt("/model gpt-4.1")
	h.until("the switch back", h.idle)
	h.prompt("/clear")
	h.until("the new session", h.idle)
	h.prompt("/model gpt-4.1-nano") // another session, another choice
	h.until("the switch", h.idle)
	h.prompt("hello")
	h.until("idle", h.idle)
	h.send(resumeSessionMsg{id: id})
	h.until("the resumed session", func() bool { return h.idle() && h.m.sessID == id })
	h.prompt("again")
	h.until("idle", h.idle)
	if got := h.srv.Last().Model; got != "gpt-4.1" {
		t.Fatalf("the resumed session asked %q, want its last choice gpt-4.1", got)
	}
	h.prompt("/model --default gpt-4.1-mini")
	h.until("the switch", h.idle)
	if saved != "gpt-4.1-mini" || !strings.Contains(h.screen(), "default model saved: gpt-4.1-mini") {
		t.Fatalf("saved %q:\n%s", saved, h.screen())
	}
}

// The answers given in the dialog come back with a resumed session, each
// after its call, as they showed live.
func TestResumedAnswersMatchLive(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: "ask", w: 100, h: 40},
		llmtest.Call("write_file", `{"path":"a.txt","content":"one\n"}`),
		llmtest.Call("run_command", `{"command":"touch b.txt"}`),
		llmtest.Call("run_command", `{"command":"touch c.txt"}`),
		llmtest.Text("two of three"))
	h.prompt("make three files")
	answer := func(keys ...string) {
		h.until("the dialog", func() bool { return h.m.perm.open() })
		h.answerable()
		for _, k := range keys {
			if k == " " {
				h.key("space")
				continue
			}
			h.typeText(k)
		}
	}
	answer("y")
	answer("a")
	answer("n", "not", " ", "that")
	h.key("enter")
	h.until("the turn", h.idle)
	live := transcriptText(h, h.m.current().tr, 100)
	for _, want := range []string{"write_file allowed once", "run_command allowed for this session", "run_command denied: not that"} {
		if !strings.Contains(live, want) {
			t.Fatalf("live lacks %q:\n%s", want, live)
		}
	}
	id := h.m.sessID
	h.send(resumeSessionMsg{id: id})
	h.until("the resumed session", func() bool { return h.idle() && len(h.m.current().tr.items) > 3 })
	resumed := strings.TrimSuffix(transcriptText(h, h.m.current().tr, 100), "\n\n  resumed session "+id)
	if resumed != live {
		t.Fatalf("resumed transcript differs\n--- live\n%s\n--- resumed\n%s", live, resumed)
	}
}

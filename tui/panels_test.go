package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"polly/agent/app"
	"polly/agent/llmtest"
)

// The tool-output browser lists the session's big outputs, / searches
// them, and Enter shows one whole.
func TestOutputsBrowser(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Call("run_command", `{"command":"seq 1 5000"}`), llmtest.Text("counted"))
	h.prompt("count to 5000")
	h.until("idle", h.idle)
	if !strings.Contains(h.screen(), "offloaded") {
		t.Fatalf("the big output is not marked offloaded:\n%s", h.screen())
	}
	h.key("ctrl+o")
	h.until("the list", func() bool { return len(outs(h).rows) == 1 })
	if !outs(h).rows[0].offloaded || outs(h).rows[0].persona != "Polly" {
		t.Errorf("row = %+v", outs(h).rows[0])
	}
	if scr := h.screen(); !strings.Contains(scr, "run_command") || !strings.Contains(scr, "seq 1 5000") || !strings.Contains(scr, "offloaded") {
		t.Fatalf("list:\n%s", scr)
	}
	h.key("enter")
	h.until("the output", func() bool { return outs(h).showing })
	h.key("end")
	if scr := h.screen(); !strings.Contains(scr, "4999") || !strings.Contains(scr, "5000") {
		t.Errorf("the end of the whole output is not shown:\n%s", scr)
	}
	h.key("esc")
	h.key("/")
	h.typeText("4321")
	h.key("enter")
	h.until("the search", func() bool { return outs(h).results })
	if scr := h.screen(); !strings.Contains(scr, "1 output matches \"4321\"") || !strings.Contains(scr, "[4321]") {
		t.Errorf("search:\n%s", scr)
	}
	// The hit opens at the match, highlighted.
	h.key("enter")
	h.until("the hit", func() bool { return outs(h).showing })
	scr := h.screen()
	if !strings.Contains(scr, "4321") || strings.Contains(scr, "\n1\n") || outs(h).vp.YOffset() < 4000 {
		t.Errorf("the hit is not opened at the match (offset %d):\n%s", outs(h).vp.YOffset(), scr)
	}
	h.m.noColor = false
	h.send(tea.BackgroundColorMsg{})
	if v := h.m.View().Content; !strings.Contains(v, outs(h).th.hl().Render("4321")) {
		t.Error("the match is not highlighted")
	}
	h.key("esc")
	h.key("esc") // back to all outputs
	h.until("the list again", func() bool { return !outs(h).results })
	h.key("esc")
	if h.m.panel != nil {
		t.Error("esc did not close the browser")
	}
}

// PgUp/PgDn and the wheel scroll the chat; back at the end it follows new
// text again.
func TestScrolling(t *testing.T) {
	h := newHarness(t, harnessOpts{w: 80, h: 24})
	tr := h.m.current().tr
	for i := range 60 {
		tr.add(&item{kind: kUser, text: "line " + string(rune('A'+i%26))})
	}
	tr.add(&item{kind: kSystem, text: "THE END"})
	if !strings.Contains(h.screen(), "THE END") {
		t.Fatal("the end is not shown")
	}
	h.key("pgup")
	if tr.follow || strings.Contains(h.screen(), "THE END") {
		t.Fatalf("pgup did not scroll:\n%s", h.screen())
	}
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	top := tr.top
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if tr.top <= top && tr.off == 0 {
		t.Errorf("wheel down did not move (top %d→%d)", top, tr.top)
	}
	for range 10 {
		h.key("pgdown")
	}
	if !tr.follow || !strings.Contains(h.screen(), "THE END") {
		t.Fatalf("pgdown did not come back to the end:\n%s", h.screen())
	}
	for range 50 {
		h.key("pgup")
	}
	if !strings.Contains(h.screen(), "line A") {
		t.Errorf("pgup does not reach the top:\n%s", h.screen())
	}
}

// Shift+Enter and Ctrl+J insert a newline; Enter sends both lines.
func TestMultilineInput(t *testing.T) {
	h := newHarness(t, harnessOpts{}, llmtest.Text("ok"))
	h.typeText("one")
	h.key("ctrl+j")
	h.typeText("two")
	h.key("shift+enter")
	h.typeText("three")
	if v := h.m.input.Value(); v != "one\ntwo\nthree" {
		t.Fatalf("input %q", v)
	}
	h.key("enter")
	h.until("idle", func() bool { return h.srv.Calls() == 1 && h.idle() })
	if got := h.srv.Last().LastTurn().Content; got != "one\ntwo\nthree" {
		t.Errorf("sent %q", got)
	}
}

// /model opens a filterable list of configured and discovered models
// (window, price, provider); Enter switches the current persona, and the
// next request on its tab names the picked model while Polly's stays.
func TestModelPickerSwitchesThePersonasModel(t *testing.T) {
	h := newHarness(t, harnessOpts{models: `{"data":[{"id":"gpt-4.1","max_model_len":16000},{"id":"qwen3-coder","max_model_len":32768}]}`},
		llmtest.Text("coder on qwen"), llmtest.Text("polly on the default"))
	h.until("the model list", func() bool { _, ok := h.m.app.Catalogue().Listing("openai"); return ok })

	h.prompt("/persona coder")
	h.prompt("/model")
	if h.m.kind != pModels {
		t.Fatalf("/model did not open the picker:\n%s", h.screen())
	}
	h.until("the list", func() bool { return strings.Contains(h.screen(), "openai/gpt-4.1") })
	scr := h.screen()
	for _, want := range []string{"openai/gpt-4.1", "16000 (discovered)", "openai/qwen3-coder", "32768 (discovered)", "—"} {
		if !strings.Contains(scr, want) {
			t.Fatalf("picker lacks %q:\n%s", want, scr)
		}
	}
	h.typeText("qwen")
	if scr := h.screen(); strings.Contains(scr, "openai/gpt-4.1 ") || !strings.Contains(scr, "openai/qwen3-coder") {
		t.Fatalf("filter 'qwen':\n%s", scr)
	}
	h.key("enter")
	if h.m.panel != nil {
		t.Fatalf("picker still open:\n%s", h.screen())
	}
	h.until("the switch", func() bool { return h.idle() && strings.Contains(h.screen(), "model: openai/qwen3-coder") })
	if !strings.Contains(h.screen(), "qwen3-coder") {
		t.Fatalf("status bar does not show the new model:\n%s", h.screen())
	}

	h.prompt("hello coder")
	h.until("the coder's reply", func() bool { return h.idle() && h.srv.Calls() == 1 })
	if got := h.srv.Last().Model; got != "qwen3-coder" {
		t.Fatalf("the coder's request named %q", got)
	}
	h.prompt("/persona default")
	h.prompt("hello polly")
	h.until("Polly's reply", func() bool { return h.idle() && h.srv.Calls() == 2 })
	if got := h.srv.Last().Model; got != "gpt-4.1" {
		t.Fatalf("Polly's request named %q after the coder's switch", got)
	}
}

// Must show 3 in the TUI: the coder persona's file names a model on a
// second provider; on its tab and as Polly's sub-agent its requests go to
// the second server, which Polly's own requests never reach.
func TestPersonaModelOnItsTabGoesToItsProvider(t *testing.T) {
	second := llmtest.NewServer(t, llmtest.Text("coder on the second server"), llmtest.Text("build is green"))
	h := newHarness(t, harnessOpts{
		config:   `{"providers": {"second": {"base_url": "` + second.URL() + `"}}}`,
		personas: map[string]string{"coder.json": `{"id": "coder", "model": "second/local-coder"}`},
	},
		llmtest.Call("delegate_task", `{"agent":"coder","task":"report the build status"}`),
		llmtest.Text("The coder says the build is green."))

	h.prompt("/persona coder")
	if !strings.Contains(h.screen(), "local-coder") {
		t.Fatalf("status bar does not show the coder's model:\n%s", h.screen())
	}
	h.prompt("hello coder")
	h.until("the coder's reply", func() bool { return h.idle() && second.Calls() == 1 })
	if h.srv.Calls() != 0 || second.Last().Model != "local-coder" {
		t.Fatalf("first server %d requests; second asked for %q", h.srv.Calls(), second.Last().Model)
	}

	h.prompt("/persona default")
	h.prompt("ask the coder about the build")
	h.until("Polly's answer", func() bool { return h.idle() && h.srv.Calls() == 2 })
	if second.Calls() != 2 || !strings.Contains(second.Last().LastTurn().Content, "report the build status") {
		t.Fatalf("the sub-agent's request did not reach the second server: %d requests", second.Calls())
	}
	for _, r := range h.srv.Requests() {
		if r.Model != "gpt-4.1" {
			t.Fatalf("first server got a request for %q", r.Model)
		}
	}
	h.key("ctrl+g")
	if scr := h.screen(); !strings.Contains(scr, "local-cod") {
		t.Fatalf("team panel does not show the sub-agent's model:\n%s", scr)
	}
}

// /undo shows what it did as one block; /rewind lists the turns with the
// files they changed, and c on a turn puts the files back to before it and
// continues in a forked session whose next request carries no later turn.
func TestUndoAndRewindInTheTUI(t *testing.T) {
	h := newHarness(t, harnessOpts{},
		llmtest.Call("write_file", `{"path":"a.txt","content":"one\n"}`), llmtest.Text("wrote a"),
		llmtest.Call("edit_file", `{"path":"a.txt","old_string":"one","new_string":"two"}`), llmtest.Text("edited a"),
	)
	read := func() string {
		b, err := os.ReadFile(filepath.Join(h.dir, "a.txt"))
		if err != nil {
			return "<missing>"
		}
		return string(b)
	}
	h.prompt("write a")
	h.until("idle", h.idle)
	h.prompt("edit a")
	h.until("idle", h.idle)
	if read() != "two\n" {
		t.Fatalf("a.txt = %q", read())
	}
	h.prompt("/undo")
	h.until("the undo block", func() bool { return strings.Contains(h.screen(), "restored  a.txt") })
	if scr := h.screen(); !strings.Contains(scr, `undid turn 2 "edit a"`) || read() != "one\n" {
		t.Fatalf("a.txt = %q, screen:\n%s", read(), scr)
	}
	h.prompt("/redo")
	h.until("the redo block", func() bool { return strings.Contains(h.screen(), "redid turn 2") })
	if read() != "two\n" {
		t.Fatalf("after redo a.txt = %q", read())
	}

	old := h.m.sessID
	h.prompt("/rewind")
	h.until("the turns", func() bool { return rewP(h).done })
	scr := h.screen()
	if !strings.Contains(scr, "write a") || !strings.Contains(scr, "edit a") || !strings.Contains(scr, "a.txt") {
		t.Fatalf("rewind panel:\n%s", scr)
	}
	h.key("up") // turn 1
	h.key("c")
	h.until("the fork", func() bool { return h.m.sessID != old && h.idle() })
	if read() != "<missing>" {
		t.Fatalf("a.txt after rewinding to before turn 1: %q", read())
	}
	if !strings.Contains(h.screen(), "rewound session "+old) || !strings.Contains(h.screen(), "removed   a.txt") {
		t.Fatalf("screen after rewind:\n%s", h.screen())
	}
	h.srv.Push(llmtest.Text("fresh start"))
	h.prompt("again")
	h.until("idle", h.idle)
	for _, m := range h.srv.Last().Messages[1:] { // the system prompt's daily log may mention them: that is memory, not the conversation
		for _, earlier := range []string{"write a", "edit a", "wrote a", "a.txt"} {
			if strings.Contains(m.Content, earlier) {
				t.Fatalf("the forked conversation still carries %q: %s message %q", earlier, m.Role, m.Content)
			}
		}
	}
	if last := h.srv.Last().Messages; len(last) < 2 || last[1].Role != "user" || last[1].Content != "again" {
		t.Fatalf("the forked conversation sent %+v", last)
	}
}

// The picker never offers a model that only embeds.
func TestModelPickerLeavesOutEmbeddingModels(t *testing.T) {
	got := chatRows([]app.ModelRow{{Ref: "ollama/llama3.1:latest"}, {Ref: "ollama/nomic-embed-text:latest", Embedding: true}})
	if len(got) != 1 || got[0].Ref != "ollama/llama3.1:latest" {
		t.Fatalf("picker rows %+v", got)
	}
}

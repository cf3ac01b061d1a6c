package tui

import (
	"strings"
	"testing"

	"polly/agent/llmtest"
)

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

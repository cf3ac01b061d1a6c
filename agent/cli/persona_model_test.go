package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// twoProviders is Polly on first (the default provider, through
// OPENAI_BASE_URL) with a provider "second" configured in the user file,
// and the coder persona overridden in the workspace to use
// personaModel.
func twoProviders(t *testing.T, first, second *llmtest.Server, personaModel string) func(args ...string) runResult {
	t.Helper()
	env, polly := cliEnv(t, first.URL(), nil)
	write := func(path, body string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(env.Home, ".config", "polly", "config.json"),
		`{"providers": {"second": {"base_url": "`+second.URL()+`", "models": {"local-coder": {"context_window": 8192}}}}}`)
	write(filepath.Join(env.Home, ".agent", "workspace", "personas", "coder.json"), `{"id": "coder", "model": "`+personaModel+`"}`)
	return polly
}

// Must show 3: a persona whose model names another provider talks to that
// provider — on its own (--persona, as on its tab) and as a sub-agent —
// and the default provider sees none of its requests.
func TestPersonaModelRoutesToItsProvider(t *testing.T) {
	first := llmtest.NewServer(t)
	second := llmtest.NewServer(t, llmtest.Text("coder here, on the second server"))
	polly := twoProviders(t, first, second, "second/local-coder")

	r := polly("-p", "who are you?", "--persona", "coder")
	if r.code != 0 || r.stdout != "coder here, on the second server\n" {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if first.Calls() != 0 || second.Calls() != 1 {
		t.Fatalf("first got %d requests, second %d", first.Calls(), second.Calls())
	}
	got := second.Last()
	if got.Model != "local-coder" {
		t.Fatalf("second server was asked for model %q", got.Model)
	}
	// The default provider's key never goes to another endpoint.
	if auth := got.Header.Get("Authorization"); auth != "" {
		t.Fatalf("second server got Authorization %q", auth)
	}

	// Its context numbers follow its model: the 8192 window configured for
	// local-coder, not the default's.
	second.Push(llmtest.Text("again"))
	r = polly("-p", "once more", "--persona", "coder", "--output-format", "stream-json")
	threshold := -1
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev struct {
			Type      string `json:"type"`
			Model     string `json:"model"`
			Threshold int    `json:"threshold"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "usage" && ev.Model == "local-coder" {
			threshold = ev.Threshold
		}
	}
	if threshold <= 0 || threshold >= 8192 {
		t.Fatalf("coder's threshold %d is not derived from its 8192 window:\n%s", threshold, r.stdout)
	}
	if first.Calls() != 0 || second.Calls() != 2 {
		t.Fatalf("first got %d requests, second %d", first.Calls(), second.Calls())
	}

	// As a sub-agent of Polly (who stays on the first server).
	first.Push(llmtest.Call("delegate_task", `{"agent":"coder","task":"report the build status"}`), llmtest.Text("The coder says the build is green."))
	second.Push(llmtest.Text("build is green"))
	r = polly("-p", "ask the coder about the build")
	if r.code != 0 || r.stdout != "The coder says the build is green.\n" {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if first.Calls() != 2 || second.Calls() != 3 {
		t.Fatalf("first got %d requests (want Polly's 2), second %d (want the coder's 3)", first.Calls(), second.Calls())
	}
	child := second.Last()
	if child.Model != "local-coder" || !strings.Contains(child.LastTurn().Content, "report the build status") {
		t.Fatalf("the coder's request on the second server: model %q, last message %q", child.Model, child.LastTurn().Content)
	}
	for _, req := range first.Requests() {
		if req.Model != "gpt-4.1" {
			t.Fatalf("first server got a request for %q", req.Model)
		}
		for _, m := range req.Messages {
			if m.Role == "user" && strings.Contains(m.Content, "Task from") {
				t.Fatalf("the sub-agent's request reached the first server: %q", m.Content)
			}
		}
	}
	if res := first.Last().LastTurn(); res.Role != "tool" || !strings.Contains(res.Content, "build is green") {
		t.Fatalf("Polly did not get the coder's answer: %+v", res)
	}
}

// Bad input: a persona naming a provider that is not configured is
// reported at start and refused when used, with nothing sent anywhere.
func TestPersonaWithUnknownProviderIsRefused(t *testing.T) {
	first := llmtest.NewServer(t, llmtest.Text("Polly is fine."))
	second := llmtest.NewServer(t)
	polly := twoProviders(t, first, second, "ollama/llama3")

	r := polly("-p", "hello", "--persona", "coder")
	if r.code != 1 || first.Calls() != 0 || second.Calls() != 0 {
		t.Fatalf("code %d, requests %d/%d, stderr %q", r.code, first.Calls(), second.Calls(), r.stderr)
	}
	for _, want := range []string{"warning: persona coder will be refused when used", `no provider "ollama" is configured`, "persona coder cannot run"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// The other personas work.
	r = polly("-p", "hello")
	if r.code != 0 || r.stdout != "Polly is fine.\n" || first.Calls() != 1 {
		t.Fatalf("default persona: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

// Must show 4: a local endpoint serving a model named like OpenAI's shows
// no cost (null in JSON), where OpenAI's own endpoint would price it.
func TestLocalEndpointShowsNoCost(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Reply{Text: "hi", Usage: &llmtest.Usage{Prompt: 100000, Completion: 50000}})
	_, polly := cliEnv(t, srv.URL(), nil)
	r := polly("-p", "hello", "--model", "gpt-4.1-mini", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("code %d stderr %q", r.code, r.stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %q", err, r.stdout)
	}
	if cost, ok := res["cost_usd"]; !ok || cost != nil {
		t.Fatalf("cost_usd = %v (present %v), want null: %s", cost, ok, r.stdout)
	}
	if srv.Last().Model != "gpt-4.1-mini" {
		t.Fatalf("model sent = %q", srv.Last().Model)
	}
	r = polly("config")
	if !strings.Contains(r.stdout, "unknown (no cost shown)") || strings.Contains(r.stdout, "input_price") {
		t.Fatalf("polly config shows a price for a local gpt-4.1-mini:\n%s", r.stdout)
	}
}

// With a configured price the same local model is priced: the price is
// the user's, so it applies.
func TestConfiguredPriceApplies(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Reply{Text: "hi", Usage: &llmtest.Usage{Prompt: 1000000, Completion: 0}})
	env, polly := cliEnv(t, srv.URL(), nil)
	cfg := filepath.Join(env.Home, ".config", "polly", "config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`{"providers": {"openai": {"models": {"my-model": {"input_price": 0.5, "output_price": 1}}}}}`), 0o644)
	r := polly("-p", "hello", "--model", "my-model", "--output-format", "json")
	var res struct {
		Cost *float64 `json:"cost_usd"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Cost == nil || *res.Cost != 0.5 {
		t.Fatalf("cost = %v (%v): %s %s", res.Cost, err, r.stdout, r.stderr)
	}
}

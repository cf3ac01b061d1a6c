package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// vllmList is what vLLM answers to GET /v1/models for the model in use.
const vllmList = `{"object":"list","data":[{"id":"gpt-4.1","object":"model","created":1,"owned_by":"vllm","root":"gpt-4.1","max_model_len":16000}]}`

// words is n characters of varied prose, so the tokenizer counts it like
// real text (about four characters a token).
func words(seed, n int) string {
	vocab := strings.Fields("the parser reads each record checks its fields and writes a clean row to the output table while counting errors per column so the report can list them later")
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(vocab[(i*7+seed)%len(vocab)])
		b.WriteByte(' ')
	}
	return b.String()
}

// growingTask is a model that writes a file of ~1,200 characters per step
// until it has written max of them, answering the summarizer (a request
// without tools) with a structured summary. It records the characters of
// the conversation in the last main request before the first summary.
func growingTask(max int, charsBeforeSummary *int) llmtest.Func {
	written, last := 0, 0
	return func(r llmtest.Request) llmtest.Step {
		if len(r.Tools) == 0 {
			if *charsBeforeSummary == 0 {
				*charsBeforeSummary = last
			}
			return llmtest.Text("## CURRENT TASK\nWrite the notes files.\n\n## DONE SO FAR\nWrote notes files one by one.\n\n## NEXT STEPS\nWrite the rest, then report.\n")
		}
		last = 0
		for _, m := range r.Messages { // the conversation, without the JSON around it
			last += len(m.Content)
			for _, c := range m.ToolCalls {
				last += len(c.Name) + len(c.Args)
			}
		}
		if written == max {
			return llmtest.Text("All notes written.")
		}
		written++
		args := fmt.Sprintf(`{"path":"notes/%02d.txt","content":%q}`, written, words(written, 1200))
		return llmtest.Call("write_file", args)
	}
}

// Must show 2: /v1/models says max_model_len 16000 for the model in use;
// with no window configured, the threshold derives from 16,000 — shown by
// `polly config` and by the summarizer request reaching the server before
// the conversation got near 16k tokens.
func TestDiscoveredWindowDrivesTheSummaryThreshold(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetModelsResponse(http.StatusOK, "application/json", vllmList)
	env, polly := cliEnv(t, srv.URL(), nil)

	r := polly("config")
	if r.code != 0 {
		t.Fatalf("polly config: %d %s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^context_window +16000 +default \(discovered\)$`).MatchString(r.stdout) {
		t.Fatalf("polly config shows no discovered window:\n%s", r.stdout)
	}
	m := regexp.MustCompile(`(?m)^summarize_threshold +(\d+) +.*16000`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("polly config shows no threshold derived from 16000:\n%s", r.stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n <= 0 || n >= 16000 {
		t.Fatalf("threshold %d is not below the 16000 window", n)
	}
	// The list was cached for the next start.
	if _, err := os.Stat(filepath.Join(env.Home, ".cache", "polly", "models", "openai.json")); err != nil {
		t.Fatalf("model list not cached: %v", err)
	}

	var before int
	srv.Serve(growingTask(60, &before))
	r = polly("-p", "write the notes files", "--mode", "auto-edit")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	summarizer := 0
	for _, req := range srv.Requests() {
		if len(req.Tools) == 0 {
			summarizer++
		}
	}
	// ~4 characters a token: the conversation before the summary was well
	// under 16k tokens.
	if summarizer == 0 || before == 0 || before/4 >= 16000 {
		t.Fatalf("%d summarizer requests; last request before it %d chars (~%d tokens)\n%s", summarizer, before, before/4, r.stderr)
	}
	t.Logf("summary after a last request of %d chars", before)
	if !strings.Contains(r.stderr, "context summarized") {
		t.Fatalf("no summary reported:\n%s", r.stderr)
	}
}

// The control: the same task against a server whose list gives no window
// runs with the 40,000 default and never summarizes.
func TestNoDiscoveredWindowNoEarlySummary(t *testing.T) {
	srv := llmtest.NewServer(t)
	_, polly := cliEnv(t, srv.URL(), nil)
	var before int
	srv.Serve(growingTask(60, &before))
	r := polly("-p", "write the notes files", "--mode", "auto-edit")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	for _, req := range srv.Requests() {
		if len(req.Tools) == 0 {
			t.Fatalf("a summary happened without a known window (last request %d chars)", before)
		}
	}
}

// Bad input: /v1/models answering HTML, 404 or garbage changes nothing —
// the run works with the window unknown — and leaves one debug-log line.
func TestBrokenModelListIsIgnored(t *testing.T) {
	for name, answer := range map[string]struct {
		status int
		body   string
	}{
		"html":    {http.StatusOK, "<html><body>Welcome to nginx!</body></html>"},
		"404":     {http.StatusNotFound, `{"detail":"Not Found"}`},
		"garbage": {http.StatusOK, "\x00\x17garbage{{"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Text("hello"))
			srv.SetModelsResponse(answer.status, "", answer.body)
			env, polly := cliEnv(t, srv.URL(), nil)
			r := polly("-p", "hi")
			if r.code != 0 || r.stdout != "hello\n" || strings.Contains(r.stderr, "warning") {
				t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			b, err := os.ReadFile(filepath.Join(env.Dir, ".agent", "debug.log"))
			if err != nil || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), "discovery for provider openai gave up") {
				t.Fatalf("debug log = %q, %v", b, err)
			}
			r = polly("config")
			if !regexp.MustCompile(`(?m)^context_window +unknown`).MatchString(r.stdout) {
				t.Fatalf("window after a broken list:\n%s", r.stdout)
			}
		})
	}
}

// polly models lists configured and discovered models with window, price
// and who lists them; a local gpt-4.1 has no price.
func TestModelsCommand(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetModelsResponse(http.StatusOK, "application/json",
		`{"data":[{"id":"gpt-4.1","max_model_len":16000},{"id":"qwen3-coder","max_model_len":32768}]}`)
	env, polly := cliEnv(t, srv.URL(), nil)
	cfg := filepath.Join(env.Home, ".config", "polly", "config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`{"providers": {"openai": {"models": {"tiny": {"context_window": 4096, "input_price": 0.1, "output_price": 0.2}}}}}`), 0o644)
	r := polly("models")
	if r.code != 0 {
		t.Fatalf("code %d stderr %s", r.code, r.stderr)
	}
	for _, re := range []string{
		`(?m)^\* openai/gpt-4\.1 +16000 \(discovered\) +— +provider$`,
		`(?m)^  openai/qwen3-coder +32768 \(discovered\) +— +provider$`,
		`(?m)^  openai/tiny +4096 \(config\) +\$0\.1/\$0\.2 +config$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("polly models lacks %s:\n%s", re, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "gpt-4o") {
		t.Errorf("OpenAI's table listed for a local endpoint:\n%s", r.stdout)
	}
}

// A context-length error's stated limit is learned for the model on that
// provider: `polly models` shows it as learned, over the discovered window.
func TestLearnedWindowShownByModels(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Fail{Status: 400, Code: "context_length_exceeded",
			Message: "This model's maximum context length is 12000 tokens. However, your messages resulted in 14000 tokens."},
		llmtest.Text("done"))
	srv.SetModelsResponse(http.StatusOK, "application/json", vllmList)
	env, polly := cliEnv(t, srv.URL(), nil)
	if r := polly("-p", "hello there, do the thing"); r.code != 0 {
		t.Fatalf("run: code %d stderr %s", r.code, r.stderr)
	}
	// One cache of learned limits, in the test's home, never the real user's.
	if _, err := os.Stat(filepath.Join(env.Home, ".cache", "polly", "learned-windows.json")); err != nil {
		t.Errorf("learned-windows.json not in the home's cache dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(env.Home, ".cache", "polly", "context-limits.json")); err == nil {
		t.Error("a second cache of learned limits was written")
	}
	r := polly("models")
	if r.code != 0 || !regexp.MustCompile(`(?m)^\* openai/gpt-4\.1 +12000 \(learned\)`).MatchString(r.stdout) {
		t.Fatalf("polly models does not show the learned window (code %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
}

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

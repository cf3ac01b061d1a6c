package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llmtest"
	"polly/agent/models"
	"polly/memory/window"
	"polly/personas"
)

// openLocal opens an App on a local provider served by srv, with its cache
// in home.
func openLocal(t *testing.T, srv *llmtest.Server, home string) *App {
	t.Helper()
	project := t.TempDir()
	ws := filepath.Join(home, "ws")
	base := srv.URL()
	cfg, err := config.Load(config.LoadOptions{ProjectDir: project, Home: home,
		Flags: config.Flags{Workspace: &ws, BaseURL: &base, Model: ptr("local-model")}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(context.Background(), Options{Config: cfg, ProjectDir: project, Template: os.DirFS("../../.agent-template"),
		DiscoveryWait: HeadlessDiscoveryWait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func ptr[T any](v T) *T { return &v }

// The binding an agent gets carries the discovered window and the
// threshold derived from it; a learned window then wins, also for the
// next process (it is kept in the cache directory).
func TestBindingFollowsDiscoveredThenLearnedWindow(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetModelsResponse(http.StatusOK, "application/json", `{"data":[{"id":"local-model","max_model_len":16000}]}`)
	home := t.TempDir()
	a := openLocal(t, srv, home)
	def, _ := a.Personas.Find(personas.DefaultID)

	b, err := a.ResolveModel(def)
	if err != nil {
		t.Fatal(err)
	}
	if b.Model.ContextWindow != 16000 || b.Model.HasPrices() {
		t.Fatalf("binding model = %+v", b.Model)
	}
	if th := b.Context.WithDefaults().Threshold(window.Budget(b.Model.ContextWindow, b.Model.MaxOutput, b.Model.SafetyMargin), 0); th >= 16000 || th <= 0 {
		t.Fatalf("threshold %d not derived from the 16000 window", th)
	}
	if err := a.LearnWindow("openai", "local-model", 9000); err != nil {
		t.Fatal(err)
	}
	if b, _ := a.ResolveModel(def); b.Model.ContextWindow != 9000 {
		t.Fatalf("after learning: window %d", b.Model.ContextWindow)
	}
	again := openLocal(t, srv, home)
	if m, _ := again.PersonaModel(personas.DefaultID); m.ContextWindow != 9000 || m.WindowSource != config.SourceLearned {
		t.Fatalf("next process: %d (%s)", m.ContextWindow, m.WindowSource)
	}
	// The second process used the cached list: one GET /v1/models in all.
	if n := srv.ModelListRequests(); n != 1 {
		t.Fatalf("%d model-list requests, want 1 (cached)", n)
	}
}

// A provider whose model list never answers holds Open for at most the
// wait it was given: nothing for the TUI, HeadlessDiscoveryWait for a
// headless run.
func TestDiscoveryNeverHoldsStartUp(t *testing.T) {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)
	for _, wait := range []time.Duration{0, HeadlessDiscoveryWait} {
		project, home := t.TempDir(), t.TempDir()
		ws := filepath.Join(home, "ws")
		os.MkdirAll(filepath.Join(home, ".config", "polly"), 0o755)
		os.WriteFile(filepath.Join(home, ".config", "polly", "config.json"),
			[]byte(`{"providers": {"slow": {"base_url": "`+slow.URL+`/v1"}}}`), 0o644)
		cfg, err := config.Load(config.LoadOptions{ProjectDir: project, Home: home, Flags: config.Flags{Workspace: &ws}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a, err := Open(context.Background(), Options{Config: cfg, ProjectDir: project, DiscoveryWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		a.Close()
		if took > wait+time.Second {
			t.Errorf("Open with wait %v took %v", wait, took)
		}
	}
}

// /model on Polly's tab and on a persona's tab reach the wire: after the
// switch (and the session reopened by id, as the TUI does) the request
// names the chosen model; "" gives a persona its configured model back;
// an unknown provider or persona is refused and changes nothing.
func TestModelSwitchesReachTheWire(t *testing.T) {
	srv := llmtest.NewServer(t)
	a := openLocal(t, srv, t.TempDir())
	ctx := context.Background()
	sess, err := a.Session(ctx, func(agent.Event) {}, "")
	if err != nil {
		t.Fatal(err)
	}
	id := sess.ID()
	sent := func(persona string) string {
		t.Helper()
		s, err := a.Session(ctx, func(agent.Event) {}, id)
		if err != nil {
			t.Fatal(err)
		}
		srv.Push(llmtest.Text("ok"))
		if _, err := s.Send(ctx, persona, "which model?"); err != nil {
			t.Fatal(err)
		}
		return srv.Last().Model
	}
	if got := sent("default"); got != "local-model" {
		t.Fatalf("before any switch the model is %q", got)
	}

	for name, want := range map[string]string{
		"":          "no model name given",
		"nowhere/x": `no provider "nowhere" is configured`,
	} {
		if err := a.SetModel(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SetModel(%q) = %v, want %q", name, err, want)
		}
	}
	if err := a.SetPersonaModel("nobody", "local-small"); err == nil || !strings.Contains(err.Error(), `unknown persona "nobody"`) {
		t.Errorf("SetPersonaModel(nobody) = %v", err)
	}
	if err := a.SetPersonaModel("coder", "nowhere/x"); err == nil {
		t.Error("a persona took a model of a provider that is not configured")
	}
	if got := sent("default"); got != "local-model" {
		t.Fatalf("refused switches changed the model to %q", got)
	}

	if err := a.SetPersonaModel("default", "local-small"); err != nil { // Polly's tab: the default model
		t.Fatal(err)
	}
	if err := a.SetPersonaModel("coder", "local-coder"); err != nil {
		t.Fatal(err)
	}
	if got := sent("default"); got != "local-small" {
		t.Errorf("default persona sent %q after /model local-small", got)
	}
	if got := sent("coder"); got != "local-coder" {
		t.Errorf("coder sent %q after its /model local-coder", got)
	}
	if err := a.SetPersonaModel("coder", ""); err != nil {
		t.Fatal(err)
	}
	if got := sent("coder"); got != "local-small" {
		t.Errorf("coder sent %q after /model with no name, want the default local-small", got)
	}
}

// The model list (polly models, the TUI picker) shows what the provider's
// /v1/models listed, with the window it stated; the built-in table's
// OpenAI rows are not offered on somebody else's endpoint.
func TestModelRowsShowTheDiscoveredList(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetModelsResponse(http.StatusOK, "application/json", `{"data":[{"id":"local-model","max_model_len":16000},{"id":"local-small"}]}`)
	home := t.TempDir()
	a := openLocal(t, srv, home)
	rows := a.ModelRows()
	got := map[string]ModelRow{}
	for _, r := range rows {
		got[r.Ref] = r
		if !r.Discovered {
			t.Errorf("%s is listed but was not discovered on a local endpoint", r.Ref)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("rows %+v, want the two discovered models", rows)
	}
	if r := got["openai/local-model"]; WindowText(r.Info) != "16000 (discovered)" || PriceText(r.Info) != "—" {
		t.Errorf("local-model: window %s, price %s", WindowText(r.Info), PriceText(r.Info))
	}
	if r := got["openai/local-small"]; WindowText(r.Info) != "unknown" {
		t.Errorf("local-small: window %s, want unknown (the list did not say)", WindowText(r.Info))
	}
	if a.Catalogue() == nil {
		t.Fatal("no catalogue")
	}

	// Without an App (polly models, polly config): the same list, from the
	// cache the App's discovery wrote.
	base := srv.URL()
	cfg, err := config.Load(config.LoadOptions{ProjectDir: t.TempDir(), Home: home, Flags: config.Flags{BaseURL: &base, Model: ptr("local-model")}})
	if err != nil {
		t.Fatal(err)
	}
	before := srv.ModelListRequests()
	cat := DiscoverModels(context.Background(), cfg, HeadlessDiscoveryWait)
	if rows := ModelRows(cfg, cat); len(rows) != 2 {
		t.Errorf("DiscoverModels rows %+v", rows)
	}
	if m := cfg.ResolveModel("local-model"); m.ContextWindow != 16000 {
		t.Errorf("the config does not see the discovered window: %d", m.ContextWindow)
	}
	if after := srv.ModelListRequests(); after != before {
		t.Errorf("DiscoverModels asked the provider again (%d → %d requests), the cache is fresh", before, after)
	}
}

func TestPriceText(t *testing.T) {
	if got := PriceText(config.ModelInfo{Price: &config.Price{Input: 2, Output: 8}}); got != "$2/$8" {
		t.Errorf("PriceText = %q", got)
	}
}

// Learned context limits have one cache, the model catalogue's: what the
// agent learns through the app's LimitStore is kept in the cache dir's
// learned-windows.json, a new catalogue reads it back, and a corrupt file
// is replaced on the next write.
func TestLearnedLimitsOneCache(t *testing.T) {
	dir := t.TempDir()
	l := learnedLimits{models.New(models.Options{CacheDir: dir})}
	if l.Limit("openai", "m") != 0 {
		t.Fatal("a limit before any was stored")
	}
	if err := l.SaveLimit("openai", "m", 30000); err != nil {
		t.Fatal(err)
	}
	again := learnedLimits{models.New(models.Options{CacheDir: dir})}
	if n := again.Limit("openai", "m"); n != 30000 || again.cat.LearnedWindow("openai", "m") != 30000 {
		t.Fatalf("Limit = %d", n)
	}
	if again.Where() != filepath.Join(dir, "learned-windows.json") {
		t.Fatal(again.Where())
	}
	os.WriteFile(again.Where(), []byte("{broken"), 0o644)
	broken := learnedLimits{models.New(models.Options{CacheDir: dir})}
	if broken.Limit("openai", "m") != 0 {
		t.Fatal("a corrupt file gave a limit")
	}
	if err := broken.SaveLimit("openai", "m", 1000); err != nil {
		t.Fatal(err)
	}
	if n := (learnedLimits{models.New(models.Options{CacheDir: dir})}).Limit("openai", "m"); n != 1000 {
		t.Fatal(n)
	}
	if _, err := os.Stat(filepath.Join(dir, "context-limits.json")); err == nil {
		t.Fatal("a second cache file was written")
	}
}

// The name the user gives finds the id the server lists ("local-model" is
// the server's "local-model:latest"), so its window drives the threshold;
// an embedding model is listed by `polly models` but never offered in the
// picker's rows as a chat model.
func TestTaglessNameFindsTheListedWindow(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetModelsResponse(http.StatusOK, "application/json",
		`{"data":[{"id":"local-model:latest","max_model_len":16000},{"id":"nomic-embed-text:latest","max_model_len":8192}]}`)
	a := openLocal(t, srv, t.TempDir())
	if m := a.Config.ResolveModel("local-model"); m.ContextWindow != 16000 || m.WindowSource != config.SourceDiscovered {
		t.Fatalf("local-model resolved to window %d (%s), want 16000 discovered from local-model:latest", m.ContextWindow, m.WindowSource)
	}
	embedding := map[string]bool{}
	for _, r := range a.ModelRows() {
		embedding[r.Ref] = r.Embedding
	}
	if !embedding["openai/nomic-embed-text:latest"] || embedding["openai/local-model:latest"] {
		t.Fatalf("embedding marks %v", embedding)
	}
}

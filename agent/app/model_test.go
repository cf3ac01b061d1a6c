package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"polly/agent/config"
	"polly/agent/llmtest"
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
	if th := b.Context.WithDefaults().Threshold(b.Model.ContextWindow); th >= 16000 || th <= 0 {
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

package models

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer answers the given paths with JSON bodies (status 200) and
// 404 elsewhere; it counts requests and keeps the last Authorization.
type fakeServer struct {
	*httptest.Server
	hits atomic.Int32
	auth atomic.Value
	show map[string]string // model → /api/show body
}

func newFake(t *testing.T, routes map[string]string) *fakeServer {
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.auth.Store(r.Header.Get("Authorization"))
		if r.URL.Path == "/api/show" && f.show != nil {
			var req struct{ Model string }
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &req)
			if body, ok := f.show[req.Model]; ok && r.Method == http.MethodPost {
				w.Write([]byte(body))
				return
			}
		}
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(body, "<") {
			w.Header().Set("Content-Type", "text/html")
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(f.Close)
	return f
}

func discover(t *testing.T, f *fakeServer) (Listing, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return Discover(ctx, nil, Endpoint{BaseURL: f.URL + "/v1", APIKey: "sk-x"})
}

func TestDiscoverWindowFields(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"vllm max_model_len", `{"object":"list","data":[{"id":"m","object":"model","max_model_len":16000}]}`},
		{"openrouter context_length", `{"data":[{"id":"m","context_length":16000,"pricing":{"prompt":"0.000001"}}]}`},
		{"context_window", `{"data":[{"id":"m","context_window":16000}]}`},
		{"top_provider", `{"data":[{"id":"m","top_provider":{"context_length":16000}}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, map[string]string{"/v1/models": tt.body})
			l, err := discover(t, f)
			if err != nil || l.Window("m") != 16000 || l.Via != "/models" {
				t.Fatalf("listing %+v, %v", l, err)
			}
			if f.auth.Load() != "Bearer sk-x" {
				t.Errorf("Authorization = %v", f.auth.Load())
			}
		})
	}
}

func TestDiscoverLlamaCppProps(t *testing.T) {
	f := newFake(t, map[string]string{
		"/v1/models": `{"object":"list","data":[{"id":"qwen.gguf","object":"model","meta":{"n_ctx_train":131072}}]}`,
		"/props":     `{"default_generation_settings":{"n_ctx":8192},"total_slots":1}`,
	})
	l, err := discover(t, f)
	if err != nil || l.Window("qwen.gguf") != 8192 || l.Via != "/props" {
		t.Fatalf("listing %+v, %v", l, err)
	}
}

func TestDiscoverLMStudio(t *testing.T) {
	f := newFake(t, map[string]string{
		"/v1/models":     `{"object":"list","data":[{"id":"qwen2.5-coder-7b","object":"model","owned_by":"organization_owner"}]}`,
		"/api/v0/models": `{"object":"list","data":[{"id":"qwen2.5-coder-7b","state":"loaded","max_context_length":32768}]}`,
	})
	l, err := discover(t, f)
	if err != nil || l.Window("qwen2.5-coder-7b") != 32768 || l.Via != "/api/v0/models" {
		t.Fatalf("listing %+v, %v", l, err)
	}
}

func TestDiscoverOllamaShow(t *testing.T) {
	f := newFake(t, map[string]string{"/v1/models": `{"object":"list","data":[{"id":"llama3:8b"},{"id":"qwen3:4b"}]}`})
	f.show = map[string]string{
		"llama3:8b": `{"parameters":"stop \"<|eot_id|>\"\nnum_ctx 8192","model_info":{"llama.context_length":131072}}`,
		"qwen3:4b":  `{"parameters":"","model_info":{"qwen3.context_length":40960,"general.architecture":"qwen3"}}`,
	}
	l, err := discover(t, f)
	if err != nil || l.Window("llama3:8b") != 8192 || l.Window("qwen3:4b") != 40960 || l.Via != "/api/show" {
		t.Fatalf("listing %+v, %v", l, err)
	}
}

// HTML, 404 and garbage: discovery fails with an error; nothing else.
func TestDiscoverGivesUpOnJunk(t *testing.T) {
	for name, routes := range map[string]map[string]string{
		"html":    {"/v1/models": "<html><body>Welcome to nginx</body></html>"},
		"404":     {},
		"garbage": {"/v1/models": "\x00\x01not json"},
		"no data": {"/v1/models": `{"models":[]}`},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, routes)
			if l, err := discover(t, f); err == nil || len(l.Models) != 0 {
				t.Fatalf("listing %+v, err %v", l, err)
			}
		})
	}
}

func TestCatalogueCachesWithTTL(t *testing.T) {
	f := newFake(t, map[string]string{"/v1/models": `{"data":[{"id":"m","max_model_len":16000}]}`})
	dir := t.TempDir()
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ep := map[string]Endpoint{"local": {BaseURL: f.URL + "/v1"}}

	c := New(Options{CacheDir: dir, Now: clock})
	<-c.Refresh(context.Background(), ep)
	if c.DiscoveredWindow("local", "m") != 16000 || f.hits.Load() != 1 {
		t.Fatalf("window %d after %d requests", c.DiscoveredWindow("local", "m"), f.hits.Load())
	}
	if _, err := os.Stat(filepath.Join(dir, "models", "local.json")); err != nil {
		t.Fatal(err)
	}
	// A new process within the TTL reads the cache: no request.
	c2 := New(Options{CacheDir: dir, Now: clock})
	<-c2.Refresh(context.Background(), ep)
	if c2.DiscoveredWindow("local", "m") != 16000 || f.hits.Load() != 1 {
		t.Fatalf("cached window %d after %d requests", c2.DiscoveredWindow("local", "m"), f.hits.Load())
	}
	// After the TTL it asks again.
	now = now.Add(DefaultTTL + time.Minute)
	c3 := New(Options{CacheDir: dir, Now: clock})
	<-c3.Refresh(context.Background(), ep)
	if f.hits.Load() != 2 {
		t.Fatalf("%d requests after the TTL, want 2", f.hits.Load())
	}
	// Another base URL under the same provider name is another endpoint.
	g := newFake(t, map[string]string{"/v1/models": `{"data":[{"id":"m","max_model_len":4096}]}`})
	c4 := New(Options{CacheDir: dir, Now: clock})
	<-c4.Refresh(context.Background(), map[string]Endpoint{"local": {BaseURL: g.URL + "/v1"}})
	if c4.DiscoveredWindow("local", "m") != 4096 {
		t.Fatalf("window after a base URL change = %d", c4.DiscoveredWindow("local", "m"))
	}
}

// A failed discovery logs one debug line, is remembered (no retry on the
// next start within the hour) and changes nothing else.
func TestCatalogueFailureIsQuiet(t *testing.T) {
	f := newFake(t, map[string]string{"/v1/models": "<html>502 Bad Gateway</html>"})
	dir := t.TempDir()
	var lines []string
	c := New(Options{CacheDir: dir, Debug: func(l string) { lines = append(lines, l) }})
	<-c.Refresh(context.Background(), map[string]Endpoint{"p": {BaseURL: f.URL + "/v1"}})
	if len(lines) != 1 || !strings.Contains(lines[0], "provider p gave up") {
		t.Fatalf("debug lines = %q", lines)
	}
	if c.DiscoveredWindow("p", "m") != 0 {
		t.Fatal("a window appeared from a failed discovery")
	}
	c2 := New(Options{CacheDir: dir})
	<-c2.Refresh(context.Background(), map[string]Endpoint{"p": {BaseURL: f.URL + "/v1"}})
	if f.hits.Load() != 1 {
		t.Fatalf("%d requests: the failure was retried at once", f.hits.Load())
	}
}

// A server that never answers does not hold the caller past the timeout.
func TestCatalogueDiscoveryIsBounded(t *testing.T) {
	srv := silentServer(t)
	c := New(Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	select {
	case <-c.Refresh(context.Background(), map[string]Endpoint{"slow": {BaseURL: srv.URL + "/v1"}}):
	case <-time.After(5 * time.Second):
		t.Fatal("discovery ignored its timeout")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("discovery took %v", d)
	}
}

func TestLearnedWindowPersists(t *testing.T) {
	dir := t.TempDir()
	c := New(Options{CacheDir: dir})
	if err := c.Learn("local", "m", 30000); err != nil {
		t.Fatal(err)
	}
	if got := New(Options{CacheDir: dir}).LearnedWindow("local", "m"); got != 30000 {
		t.Fatalf("learned window after restart = %d", got)
	}
}

// Discovery stopped by its caller (Polly closing) records no failure, so
// the next start asks again.
func TestCancelledDiscoveryRecordsNothing(t *testing.T) {
	srv := silentServer(t)
	dir := t.TempDir()
	c := New(Options{CacheDir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	done := c.Refresh(ctx, map[string]Endpoint{"p": {BaseURL: srv.URL + "/v1"}})
	cancel()
	<-done
	if _, ok := c.Listing("p"); ok {
		t.Fatal("a cancelled discovery left a listing")
	}
	if _, err := os.Stat(filepath.Join(dir, "models", "p.json")); !os.IsNotExist(err) {
		t.Fatalf("a cancelled discovery was cached: %v", err)
	}
}

// A Refresh that comes while a provider's discovery is in flight joins it:
// the server sees one request, and both callers see its listing.
func TestCatalogueConcurrentRefreshSharesOneDiscovery(t *testing.T) {
	var hits atomic.Int32
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			close(arrived)
		}
		<-release
		io.WriteString(w, `{"data":[{"id":"m","max_model_len":16000}]}`)
	}))
	defer srv.Close()
	c := New(Options{Timeout: 10 * time.Second})
	ep := map[string]Endpoint{"local": {BaseURL: srv.URL + "/v1"}}
	first := c.Refresh(context.Background(), ep)
	<-arrived // the first discovery is in flight
	second := c.Refresh(context.Background(), ep)
	close(release)
	<-first
	<-second
	if n := hits.Load(); n != 1 || c.DiscoveredWindow("local", "m") != 16000 {
		t.Fatalf("%d requests for two racing refreshes (want 1); window %d", n, c.DiscoveredWindow("local", "m"))
	}
}

// silentServer never answers: each request waits until its client gives up
// or the test ends.
func silentServer(t *testing.T) *httptest.Server {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(block); srv.Close() })
	return srv
}

// A name matches the id the server lists: exactly, then without the tag
// (Ollama lists "llama3.1:latest" for "llama3.1"), then as a unique
// prefix; never a guess between two.
func TestFindMatchesListedIDs(t *testing.T) {
	l := Listing{Models: []Model{
		{ID: "llama3.1:latest", Window: 4096},
		{ID: "qwen3:4b", Window: 40960},
		{ID: "qwen3:32b", Window: 40960 * 2},
		{ID: "mistral", Window: 32768},
		{ID: "deepseek-coder-v2:16b-lite-instruct-q4_K_M", Window: 163840},
		{ID: "phi4", Window: 16384},
		{ID: "phi4-mini", Window: 131072},
	}}
	for _, tt := range []struct {
		name string
		want string // "" = no match
	}{
		{"llama3.1:latest", "llama3.1:latest"},
		{"llama3.1", "llama3.1:latest"}, // tag-less → :latest
		{"mistral:latest", "mistral"},   // :latest → the tag-less listing
		{"qwen3", ""},                   // two tags, no :latest: ambiguous
		{"qwen3:4b", "qwen3:4b"},        // exact
		{"deepseek-coder-v2", "deepseek-coder-v2:16b-lite-instruct-q4_K_M"}, // the only one of that base
		{"deepseek", "deepseek-coder-v2:16b-lite-instruct-q4_K_M"},          // unique prefix
		{"phi4", "phi4"}, // exact beats the prefix of phi4-mini
		{"phi", ""},      // prefix of two
		{"gpt-4.1", ""},
		{"", ""},
	} {
		m, ok := l.Find(tt.name)
		if got := m.ID; ok != (tt.want != "") || got != tt.want {
			t.Errorf("Find(%q) = %q %v, want %q", tt.name, got, ok, tt.want)
		}
		if tt.want != "" && l.Window(tt.name) == 0 {
			t.Errorf("Window(%q) = 0", tt.name)
		}
	}
	// llama.cpp serves one model whatever the request names.
	one := Listing{Via: "/props", Models: []Model{{ID: "qwen.gguf", Window: 8192}}}
	if one.Window("local") != 8192 {
		t.Errorf("llama.cpp's only model: Window(local) = %d", one.Window("local"))
	}
	if (Listing{Via: "/models", Models: []Model{{ID: "qwen.gguf", Window: 8192}}}).Window("local") != 0 {
		t.Error("a one-model vLLM listing matched a name it does not list")
	}
}

// Ollama: a loaded model's context (/api/ps) wins over the trained length
// /api/show gives, because Ollama cuts prompts to it without an error.
// The recorded shapes are Ollama 0.12's.
func TestDiscoverOllamaLoadedContextWins(t *testing.T) {
	f := newFake(t, map[string]string{
		"/v1/models": `{"object":"list","data":[{"id":"llama3.1:latest","object":"model","created":1731000000,"owned_by":"library"},{"id":"qwen3:4b","object":"model","owned_by":"library"},{"id":"nomic-embed-text:latest","object":"model","owned_by":"library"}]}`,
		"/api/ps":    `{"models":[{"name":"llama3.1:latest","model":"llama3.1:latest","size":6654289920,"digest":"46e0c10c039e","details":{"format":"gguf","family":"llama","parameter_size":"8.0B","quantization_level":"Q4_K_M"},"expires_at":"2026-11-26T14:00:00Z","size_vram":6654289920,"context_length":4096}]}`,
	})
	f.show = map[string]string{
		"llama3.1:latest":         `{"parameters":"stop \"<|eot_id|>\"","model_info":{"general.architecture":"llama","llama.context_length":131072},"capabilities":["completion","tools"]}`,
		"qwen3:4b":                `{"parameters":"","model_info":{"qwen3.context_length":40960},"capabilities":["completion","tools","thinking"]}`,
		"nomic-embed-text:latest": `{"parameters":"num_ctx 8192","model_info":{"nomic-bert.context_length":2048},"capabilities":["embedding"]}`,
	}
	l, err := discover(t, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Window("llama3.1"); got != 4096 || l.Via != "/api/ps" {
		t.Errorf("llama3.1: window %d via %s, want the loaded 4096 via /api/ps", got, l.Via)
	}
	if got := l.Window("qwen3:4b"); got != 40960 {
		t.Errorf("qwen3:4b (not loaded): window %d, want the trained 40960", got)
	}
	for _, m := range l.Models {
		if m.Embedding != (m.ID == "nomic-embed-text:latest") {
			t.Errorf("%s: embedding = %v", m.ID, m.Embedding)
		}
	}
}

// vLLM lists a LoRA adapter with its parent and no window of its own: it
// has its parent's. LM Studio says which models embed.
func TestDiscoverAdaptersAndEmbeddings(t *testing.T) {
	f := newFake(t, map[string]string{
		"/v1/models": `{"object":"list","data":[` +
			`{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model","owned_by":"vllm","root":"meta-llama/Llama-3.1-8B-Instruct","parent":null,"max_model_len":32768},` +
			`{"id":"sql-lora","object":"model","owned_by":"vllm","root":"/adapters/sql-lora","parent":"meta-llama/Llama-3.1-8B-Instruct","max_model_len":null},` +
			`{"id":"BAAI/bge-m3","object":"model","owned_by":"vllm","max_model_len":8192}]}`,
	})
	l, err := discover(t, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Window("sql-lora"); got != 32768 {
		t.Errorf("the adapter's window %d, want its parent's 32768", got)
	}
	if m, _ := l.Find("BAAI/bge-m3"); !m.Embedding {
		t.Error("bge-m3 not marked as an embedding model")
	}
	lm := newFake(t, map[string]string{
		"/v1/models":     `{"object":"list","data":[{"id":"qwen2.5-coder-7b","object":"model"},{"id":"text-model-x","object":"model"}]}`,
		"/api/v0/models": `{"object":"list","data":[{"id":"qwen2.5-coder-7b","type":"llm","state":"loaded","max_context_length":32768},{"id":"text-model-x","type":"embeddings","state":"not-loaded","max_context_length":2048}]}`,
	})
	l, err = discover(t, lm)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := l.Find("text-model-x"); !m.Embedding {
		t.Error("LM Studio's type embeddings not read")
	}
	if m, _ := l.Find("qwen2.5-coder-7b"); m.Embedding {
		t.Error("an LM Studio llm marked as embedding")
	}
}

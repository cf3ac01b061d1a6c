package config_test

import (
	"path/filepath"
	"testing"

	"polly/agent/config"
)

// facts is a fixed ModelFacts.
type facts struct{ learned, discovered map[string]int }

func (f facts) LearnedWindow(provider, model string) int    { return f.learned[provider+"/"+model] }
func (f facts) DiscoveredWindow(provider, model string) int { return f.discovered[provider+"/"+model] }

// Window precedence: learned > config > discovered > built-in (official
// endpoint only) > unknown.
func TestWindowPrecedence(t *testing.T) {
	user := `{"providers": {
		"local": {"base_url": "http://127.0.0.1:8000/v1", "models": {"cfg": {"context_window": 9000}}},
		"openai": {"models": {"gpt-4o": {"context_window": 64000}}}}}`
	c, err := newFixture(t, user, "").load(nil, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetModelFacts(facts{
		learned:    map[string]int{"local/learned": 5000, "local/cfg": 7000},
		discovered: map[string]int{"local/learned": 16000, "local/cfg": 16000, "local/disc": 16000, "openai/o3": 100000},
	})
	for _, tt := range []struct {
		name, src string
		window    int
	}{
		{"local/learned", config.SourceLearned, 5000},
		{"local/cfg", config.SourceLearned, 7000}, // learned beats config
		{"local/disc", config.SourceDiscovered, 16000},
		{"local/gpt-4o", config.SourceUnknown, 0}, // an OpenAI name elsewhere is not OpenAI
		{"local/nothing", config.SourceUnknown, 0},
		{"openai/gpt-4o", config.SourceConfig, 64000}, // config beats built-in
		{"openai/o3", config.SourceDiscovered, 100000},
		{"openai/gpt-4.1", config.SourceBuiltin, 1047576},
	} {
		m := c.ResolveModel(tt.name)
		if m.ContextWindow != tt.window || m.WindowSource != tt.src {
			t.Errorf("%s: window %d (%s), want %d (%s)", tt.name, m.ContextWindow, m.WindowSource, tt.window, tt.src)
		}
	}
	c.SetModelFacts(facts{})
	if m := c.ResolveModel("local/cfg"); m.ContextWindow != 9000 || m.WindowSource != config.SourceConfig {
		t.Errorf("config window: %+v", m)
	}
}

// Prices come from the config or the built-in table for the vendor's
// official endpoint, never from a model name alone.
func TestPricesOnlyWhereKnown(t *testing.T) {
	user := `{"providers": {
		"local": {"base_url": "http://127.0.0.1:8000/v1", "models": {"priced": {"input_price": 1, "output_price": 2}}},
		"anthropic": {"base_url": "https://api.anthropic.com/v1/"}}}`
	c, err := newFixture(t, user, "").load(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, config.Flags{Model: ptr("gpt-4.1-mini")})
	if err != nil {
		t.Fatal(err)
	}
	if m := c.ActiveModel(); m.Price != nil || m.PriceSource != config.SourceUnknown || m.ContextWindow != 0 {
		t.Errorf("gpt-4.1-mini on a local OPENAI_BASE_URL: price %+v (%s), window %d", m.Price, m.PriceSource, m.ContextWindow)
	}
	if m := c.ResolveModel("local/priced"); m.Price == nil || m.Price.Input != 1 || m.PriceSource != config.SourceConfig {
		t.Errorf("configured price: %+v", m)
	}
	if m := c.ResolveModel("anthropic/claude-sonnet-4-5"); m.Price == nil || m.Price.Input != 3 || m.PriceSource != config.SourceBuiltin || m.ContextWindow != 200000 {
		t.Errorf("official Anthropic endpoint: %+v", m)
	}
	official, err := newFixture(t, "", "").load(nil, config.Flags{Model: ptr("gpt-4.1-mini")})
	if err != nil {
		t.Fatal(err)
	}
	if m := official.ActiveModel(); m.Price == nil || m.Price.Input != 0.40 || m.PriceSource != config.SourceBuiltin {
		t.Errorf("official OpenAI endpoint: %+v", m)
	}
}

func TestCacheDirFollowsXDG(t *testing.T) {
	f := newFixture(t, "", "")
	c, err := f.load(nil, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(f.home, ".cache", "polly"); c.CacheDir() != want {
		t.Errorf("CacheDir = %q, want %q", c.CacheDir(), want)
	}
	x := t.TempDir()
	c, err = f.load(map[string]string{"XDG_CACHE_HOME": x}, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(x, "polly"); c.CacheDir() != want {
		t.Errorf("CacheDir = %q, want %q", c.CacheDir(), want)
	}
}

package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"polly/agent/config"
)

// fixture is a home directory and a project directory with optional
// config files.
type fixture struct {
	home, project string
}

func newFixture(t *testing.T, user, project string) fixture { return newFixtureTB(t, user, project) }

func newFixtureTB(t testing.TB, user, project string) fixture {
	t.Helper()
	f := fixture{home: t.TempDir(), project: t.TempDir()}
	if user != "" {
		writeFile(t, filepath.Join(f.home, ".config", "polly", "config.json"), user)
	}
	if project != "" {
		writeFile(t, filepath.Join(f.project, ".agent", "config.json"), project)
	}
	return f
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) load(env map[string]string, flags config.Flags) (*config.Config, error) {
	return config.Load(config.LoadOptions{
		ProjectDir: f.project,
		Home:       f.home,
		Getenv:     func(k string) string { return env[k] },
		Flags:      flags,
		Version:    "1.2.3",
	})
}

// trust records the user's trust in the project file as it is now.
func (f fixture) trust(t *testing.T) fixture {
	t.Helper()
	c, err := f.load(nil, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.TrustProject(); err != nil {
		t.Fatal(err)
	}
	return f
}

func ptr[T any](v T) *T { return &v }

const (
	userFile    = "~/.config/polly/config.json"
	projectFile = ".agent/config.json"
)

func TestPrecedence(t *testing.T) {
	user := `{
  "mode": "auto-edit",
  "persona": "coder",
  "context": {
    "summarize_at_tokens": 30000
  },
  "permissions": {"allow": ["run_command(go test *)"]}
}`
	project := `{
  "persona": "reviewer",
  "permissions": {"allow": ["write_file(src/**)"]}
}`
	at := func(k config.Kind, detail string, line, col int) config.Source {
		return config.Source{Kind: k, Detail: detail, Line: line, Col: col}
	}
	tests := []struct {
		name          string
		user, project string
		env           map[string]string
		flags         config.Flags
		field         string
		get           func(*config.Config) any
		want          any
		wantSrc       config.Source
	}{
		{name: "default", field: "mode",
			get: func(c *config.Config) any { return c.Mode }, want: config.ModeAsk},
		{name: "user file", user: user, field: "mode",
			get: func(c *config.Config) any { return c.Mode }, want: config.ModeAutoEdit,
			wantSrc: at(config.KindUserFile, userFile, 2, 3)},
		{name: "user file nested", user: user, field: "context.summarize_at_tokens",
			get: func(c *config.Config) any { return c.Context.SummarizeAt }, want: 30000,
			wantSrc: at(config.KindUserFile, userFile, 5, 5)},
		{name: "project over user", user: user, project: project, field: "persona",
			get: func(c *config.Config) any { return c.Persona }, want: "reviewer",
			wantSrc: at(config.KindProjectFile, projectFile, 2, 3)},
		{name: "env over project", user: user, project: `{"mode": "ask"}`,
			env: map[string]string{"POLLY_MODE": "yolo"}, field: "mode",
			get: func(c *config.Config) any { return c.Mode }, want: config.ModeYolo,
			wantSrc: at(config.KindEnv, "POLLY_MODE", 0, 0)},
		{name: "flag over env", env: map[string]string{"POLLY_MODE": "yolo"},
			flags: config.Flags{Mode: ptr("auto-edit")}, field: "mode",
			get: func(c *config.Config) any { return c.Mode }, want: config.ModeAutoEdit,
			wantSrc: at(config.KindFlag, "--mode", 0, 0)},
		{name: "--yolo", user: user, flags: config.Flags{Yolo: true}, field: "mode",
			get: func(c *config.Config) any { return c.Mode }, want: config.ModeYolo,
			wantSrc: at(config.KindFlag, "--yolo", 0, 0)},
		{name: "--max-turns", flags: config.Flags{MaxTurns: ptr(7)}, field: "max_turns",
			get: func(c *config.Config) any { return c.MaxTurns }, want: 7,
			wantSrc: at(config.KindFlag, "--max-turns", 0, 0)},
		{name: "POLLY_MODEL", user: `{"model": "gpt-4o"}`, env: map[string]string{"POLLY_MODEL": "o4-mini"}, field: "model",
			get: func(c *config.Config) any { return c.ActiveModel().Name }, want: "o4-mini",
			wantSrc: at(config.KindEnv, "POLLY_MODEL", 0, 0)},
		{name: "--model over POLLY_MODEL", env: map[string]string{"POLLY_MODEL": "o4-mini"},
			flags: config.Flags{Model: ptr("gpt-5")}, field: "model",
			get: func(c *config.Config) any { return c.ActiveModel().ContextWindow }, want: 400000,
			wantSrc: at(config.KindFlag, "--model", 0, 0)},
		{name: "OPENAI_BASE_URL", user: `{"providers": {"openai": {"base_url": "https://proxy.example/v1"}}}`,
			env: map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, field: "base_url",
			get: func(c *config.Config) any { return c.ActiveModel().BaseURL }, want: "http://localhost:11434/v1",
			wantSrc: at(config.KindEnv, "OPENAI_BASE_URL", 0, 0)},
		{name: "provider base_url from user file", user: `{"providers": {"openai": {"base_url": "https://proxy.example/v1"}}}`,
			field: "providers.openai.base_url",
			get:   func(c *config.Config) any { return c.ActiveModel().BaseURL }, want: "https://proxy.example/v1",
			wantSrc: at(config.KindUserFile, userFile, 1, 27)},
		{name: "--base-url over env", env: map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"},
			flags: config.Flags{BaseURL: ptr("http://127.0.0.1:8080/v1")}, field: "base_url",
			get: func(c *config.Config) any { return c.ActiveModel().BaseURL }, want: "http://127.0.0.1:8080/v1",
			wantSrc: at(config.KindFlag, "--base-url", 0, 0)},
		{name: "OPENAI_API_KEY", env: map[string]string{"OPENAI_API_KEY": "sk-env"}, field: "api_key",
			get: func(c *config.Config) any { return c.ActiveModel().APIKey }, want: "sk-env"},
		{name: "--api-key over env", env: map[string]string{"OPENAI_API_KEY": "sk-env"},
			flags: config.Flags{APIKey: ptr("sk-flag")}, field: "api_key",
			get: func(c *config.Config) any { return c.ActiveModel().APIKey }, want: "sk-flag",
			wantSrc: at(config.KindFlag, "--api-key", 0, 0)},
		{name: "workspace default expands ~", field: "workspace",
			get: func(c *config.Config) any {
				return strings.HasSuffix(c.Workspace, filepath.Join(".agent", "workspace")) && filepath.IsAbs(c.Workspace)
			}, want: true},
		{name: "POLLY_WORKSPACE", env: map[string]string{"POLLY_WORKSPACE": "/srv/ws"}, field: "workspace",
			get: func(c *config.Config) any { return c.Workspace }, want: "/srv/ws",
			wantSrc: at(config.KindEnv, "POLLY_WORKSPACE", 0, 0)},
		{name: "--workspace over env", env: map[string]string{"POLLY_WORKSPACE": "/srv/ws"},
			flags: config.Flags{Workspace: ptr("/tmp/ws")}, field: "workspace",
			get: func(c *config.Config) any { return c.Workspace }, want: "/tmp/ws",
			wantSrc: at(config.KindFlag, "--workspace", 0, 0)},
		{name: "permissions accumulate, user rule", user: user, project: project, field: "permissions.allow[0]",
			get: func(c *config.Config) any { return len(c.Permissions.Allow) }, want: 2,
			wantSrc: at(config.KindUserFile, userFile, 7, 29)},
		{name: "permissions accumulate, project rule", user: user, project: project, field: "permissions.allow[1]",
			get: func(c *config.Config) any { return c.Permissions.Allow[1] }, want: config.Rule{Tool: "write_file", Pattern: "src/**"},
			wantSrc: at(config.KindProjectFile, projectFile, 3, 29)},
		{name: "null leaves the lower layer", user: user, project: `{"mode": null}`, field: "mode",
			get: func(c *config.Config) any { return c.Mode }, want: config.ModeAutoEdit,
			wantSrc: at(config.KindUserFile, userFile, 2, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newFixture(t, tt.user, tt.project).trust(t).load(tt.env, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.get(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("value = %#v, want %#v", got, tt.want)
			}
			if got := c.Source(tt.field); got != tt.wantSrc {
				t.Errorf("Source(%q) = %#v, want %#v", tt.field, got, tt.wantSrc)
			}
		})
	}
}

func TestUserFileLocation(t *testing.T) {
	tests := []struct {
		name       string
		env        func(f fixture) map[string]string
		file       func(f fixture) string // where to write the user config
		wantDetail func(f fixture) string
	}{
		{"home fallback",
			func(fixture) map[string]string { return nil },
			func(f fixture) string { return filepath.Join(f.home, ".config", "polly", "config.json") },
			func(fixture) string { return userFile }},
		{"XDG_CONFIG_HOME",
			func(f fixture) map[string]string {
				return map[string]string{"XDG_CONFIG_HOME": filepath.Join(f.home, "xdg")}
			},
			func(f fixture) string { return filepath.Join(f.home, "xdg", "polly", "config.json") },
			func(fixture) string { return "~/xdg/polly/config.json" }},
		{"relative XDG_CONFIG_HOME is ignored",
			func(fixture) map[string]string { return map[string]string{"XDG_CONFIG_HOME": "rel"} },
			func(f fixture) string { return filepath.Join(f.home, ".config", "polly", "config.json") },
			func(fixture) string { return userFile }},
		{"POLLY_CONFIG with ~",
			func(f fixture) map[string]string { return map[string]string{"POLLY_CONFIG": "~/my.json"} },
			func(f fixture) string { return filepath.Join(f.home, "my.json") },
			func(fixture) string { return "~/my.json" }},
		{"POLLY_CONFIG absolute outside home",
			func(f fixture) map[string]string {
				return map[string]string{"POLLY_CONFIG": filepath.Join(f.project, "x.json")}
			},
			func(f fixture) string { return filepath.Join(f.project, "x.json") },
			func(f fixture) string { return filepath.Join(f.project, "x.json") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "", "")
			writeFile(t, tt.file(f), `{"persona": "found"}`)
			c, err := f.load(tt.env(f), config.Flags{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Persona != "found" {
				t.Fatalf("persona = %q: the file was not read", c.Persona)
			}
			want := config.Source{Kind: config.KindUserFile, Detail: tt.wantDetail(f), Line: 1, Col: 2}
			if got := c.Source("persona"); got != want {
				t.Errorf("Source = %#v, want %#v", got, want)
			}
		})
	}
}

func TestEmptyAndMissingFiles(t *testing.T) {
	for _, content := range []string{"", "  \n\t", "{}", "\xef\xbb\xbf{}", "\xef\xbb\xbf"} {
		c, err := newFixture(t, content, content).load(nil, config.Flags{})
		if err != nil {
			t.Errorf("content %q: %v", content, err)
			continue
		}
		if c.Mode != config.ModeAsk || c.Source("mode").Kind != config.KindDefault {
			t.Errorf("content %q changed the defaults", content)
		}
	}
	// No home, no project, no env: defaults only (the workspace cannot expand).
	_, err := config.Load(config.LoadOptions{})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Field != "workspace" {
		t.Errorf("Load without home = %v, want a workspace *Error", err)
	}
	if _, err := config.Load(config.LoadOptions{Flags: config.Flags{Workspace: ptr("/ws")}}); err != nil {
		t.Errorf("Load without files: %v", err)
	}
}

func TestRelativeWorkspace(t *testing.T) {
	f := newFixture(t, "", `{"workspace": "notes"}`).trust(t) // where memory and personas live needs trust
	c, err := f.load(nil, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(f.project, "notes"); c.Workspace != want {
		t.Errorf("workspace = %q, want %q", c.Workspace, want)
	}
}

func TestProvidersMerge(t *testing.T) {
	user := `{
  "provider": "openrouter",
  "model": "anthropic/claude-sonnet-4",
  "providers": {
    "openrouter": {
      "base_url": "https://openrouter.ai/api/v1",
      "api_key_env": "OPENROUTER_API_KEY",
      "headers": {"X-Title": "Polly"}
    }
  }
}`
	project := `{"providers": {"openrouter": {"models": {"anthropic/claude-sonnet-4": {"context_window": 200000, "input_price": 3, "output_price": 15}}}}}`
	// A model's window is not a project's to set untrusted (issue 25).
	c, err := newFixture(t, user, project).trust(t).load(map[string]string{"OPENROUTER_API_KEY": "sk-or-123456789", "OPENAI_API_KEY": "sk-openai"}, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	m := c.ActiveModel()
	want := config.ModelInfo{
		Name: "anthropic/claude-sonnet-4", Provider: "openrouter", BaseURL: "https://openrouter.ai/api/v1",
		APIKey: "sk-or-123456789", APIKeyEnv: "OPENROUTER_API_KEY", Headers: map[string]string{"X-Title": "Polly"},
		ContextWindow: 200000, WindowSource: config.SourceConfig, Known: true,
		Price: &config.Price{Input: 3, Output: 15, CachedInput: 3}, PriceSource: config.SourceConfig,
		Context: c.Context,
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("ActiveModel =\n%+v\nwant\n%+v", m, want)
	}
	if got := c.Source(`providers.openrouter.models["anthropic/claude-sonnet-4"].context_window`); got.Kind != config.KindProjectFile || got.Line != 1 {
		t.Errorf("window source = %+v", got)
	}
	// The built-in provider survives a file that adds another.
	if c.Providers["openai"].BaseURL != config.DefaultBaseURL || len(c.Providers["openai"].Models) < 5 {
		t.Errorf("built-in openai provider lost: %+v", c.Providers["openai"])
	}
}

func TestModelResolution(t *testing.T) {
	openrouter := `"providers": {"openrouter": {"base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY"}}`
	tests := []struct {
		name                 string
		user                 string
		env                  map[string]string
		flags                config.Flags
		resolve              string // "" = ActiveModel
		wantProvider, wantNm string
		wantWindow           int
		wantKey              string
	}{
		{name: "defaults", wantProvider: "openai", wantNm: "gpt-4.1", wantWindow: 1047576},
		{name: "known model", flags: config.Flags{Model: ptr("gpt-4o")}, wantProvider: "openai", wantNm: "gpt-4o", wantWindow: 128000},
		{name: "unknown model has an unknown window", flags: config.Flags{Model: ptr("llama3.1:8b")},
			wantProvider: "openai", wantNm: "llama3.1:8b", wantWindow: 0},
		{name: "listed window overrides default", user: `{"providers": {"openai": {"models": {"llama3.1:8b": {"context_window": 8192}}}}}`,
			flags: config.Flags{Model: ptr("llama3.1:8b")}, wantProvider: "openai", wantNm: "llama3.1:8b", wantWindow: 8192},
		{name: "prefix selects provider", user: "{" + openrouter + "}", env: map[string]string{"POLLY_MODEL": "openrouter/anthropic/claude-sonnet-4"},
			wantProvider: "openrouter", wantNm: "anthropic/claude-sonnet-4", wantWindow: 0},
		{name: "same layer provider keeps the whole name", user: `{"provider": "openrouter", "model": "openai/gpt-4o", ` + openrouter + "}",
			wantProvider: "openrouter", wantNm: "openai/gpt-4o", wantWindow: 0},
		{name: "flag prefix beats file provider", user: `{"provider": "openrouter", ` + openrouter + "}",
			flags: config.Flags{Model: ptr("openai/gpt-4o")}, wantProvider: "openai", wantNm: "gpt-4o", wantWindow: 128000},
		{name: "hugging face name stays whole", env: map[string]string{"POLLY_MODEL": "meta-llama/Llama-3-8B", "OPENAI_BASE_URL": "http://gpu:8000/v1"},
			wantProvider: "openai", wantNm: "meta-llama/Llama-3-8B", wantWindow: 0},
		{name: "key env is per provider", user: "{" + openrouter + "}",
			env:     map[string]string{"OPENAI_API_KEY": "sk-openai", "OPENROUTER_API_KEY": "sk-or"},
			resolve: "openrouter/x", wantProvider: "openrouter", wantNm: "x", wantWindow: 0, wantKey: "sk-or"},
		{name: "--api-key only for the active provider", user: "{" + openrouter + "}", flags: config.Flags{APIKey: ptr("sk-flag")},
			resolve: "openrouter/x", wantProvider: "openrouter", wantNm: "x", wantWindow: 0},
		{name: "--api-key for the active provider", flags: config.Flags{APIKey: ptr("sk-flag")},
			resolve: "o3", wantProvider: "openai", wantNm: "o3", wantWindow: 200000, wantKey: "sk-flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newFixture(t, tt.user, "").load(tt.env, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			m := c.ActiveModel()
			if tt.resolve != "" {
				m = c.ResolveModel(tt.resolve)
			}
			if m.Provider != tt.wantProvider || m.Name != tt.wantNm || m.ContextWindow != tt.wantWindow || m.APIKey != tt.wantKey {
				t.Errorf("got %s / %s window %d key %q, want %s / %s window %d key %q",
					m.Provider, m.Name, m.ContextWindow, m.APIKey, tt.wantProvider, tt.wantNm, tt.wantWindow, tt.wantKey)
			}
		})
	}
}

func TestPerModelContext(t *testing.T) {
	user := `{
  "context": {"anchor_every": 7},
  "providers": {"openai": {"models": {
    "gpt-4o": {"context": {"anchor_every": 3, "summarize_window_ratio": 0.5}},
    "small": {"context_window": 32000}
  }}}
}`
	project := `{"context": {"anchor_every": 9}}`
	c, err := newFixture(t, user, project).trust(t).load(nil, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		model       string
		anchor      int
		ratio       float64
		summarizeAt int
	}{
		{"gpt-4o", 3, 0.5, 40000},             // model override beats the project's global value
		{"openai/gpt-4o", 3, 0.5, 40000},      // qualified name
		{"gpt-4.1", 9, 0.75, 40000},           // global from the project file
		{"small", 9, 0.75, 20520},             // 0.75 × its budget, 32000 − 4000 − 640, < 40000 (fixed cost 0)
		{"unknown", 9, 0.75, 40000},           // 0.75 × 128000 > 40000
		{"", 9, 0.75, 40000},                  // the active model
		{config.DefaultModel, 9, 0.75, 40000}, // by its name
		{"openai/" + config.DefaultModel, 9, 0.75, 40000},
	}
	for _, tt := range tests {
		got := c.ContextFor(tt.model).WithDefaults()
		if got.AnchorEvery != tt.anchor || got.SummarizeRatio != tt.ratio {
			t.Errorf("ContextFor(%q): anchor %d ratio %g, want %d %g", tt.model, got.AnchorEvery, got.SummarizeRatio, tt.anchor, tt.ratio)
		}
		if got := c.ResolveModel(tt.model).Threshold(0); got != tt.summarizeAt {
			t.Errorf("Threshold(%q) = %d, want %d", tt.model, got, tt.summarizeAt)
		}
		if got.CheckpointEvery != 30 {
			t.Errorf("ContextFor(%q) lost a default: checkpoint_every %d", tt.model, got.CheckpointEvery)
		}
	}
	if c.Context.AnchorEvery != 9 {
		t.Errorf("global anchor_every = %d, want 9", c.Context.AnchorEvery)
	}
	// The fixed cost counts: the agent's formula, one number everywhere.
	if got := c.ResolveModel("small").Threshold(6500); got != 6500+(27360-6500)*3/4 {
		t.Errorf("Threshold(small, 6500) = %d", got)
	}
	// The config holds overrides only: what no file set stays 0 (the
	// window package's default applies).
	if c.Context.CheckpointEvery != 0 || c.ResolveModel("gpt-4o").Context.KeepRecent != 0 {
		t.Errorf("defaults copied into the config: %+v", c.Context)
	}
}

// Defaults must not share maps between calls (no global mutable state).
func TestDefaultsAreFresh(t *testing.T) {
	a, b := config.Defaults(""), config.Defaults("")
	a.Providers["openai"].Models["gpt-4o"] = config.ModelSpec{ContextWindow: 1}
	if b.Providers["openai"].Models["gpt-4o"].ContextWindow != 128000 {
		t.Fatal("Defaults share maps")
	}
	if !strings.Contains(a.Web.UserAgent, "Polly/dev") {
		t.Errorf("user agent %q", a.Web.UserAgent)
	}
}

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// /model --default writes "model" into the user's config, keeping the
// rest, and the next load uses it; a broken file is left alone.
func TestSaveUserModel(t *testing.T) {
	home := t.TempDir()
	getenv := func(string) string { return "" }
	path := filepath.Join(home, ".config", "polly", "config.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"model": "gpt-4.1", "tui": {"theme": "light"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := SaveUserModel(home, getenv, "gpt-4.1-mini")
	if err != nil || got != path {
		t.Fatalf("%s %v", got, err)
	}
	cfg, err := Load(LoadOptions{Home: home, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "gpt-4.1-mini" || cfg.TUI.Theme != "light" {
		t.Fatalf("model %q theme %q", cfg.Model, cfg.TUI.Theme)
	}
	if err := os.WriteFile(path, []byte(`[1, 2]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := SaveUserModel(home, getenv, "x"); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("a broken file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `[1, 2]` {
		t.Fatalf("the broken file changed: %s", b)
	}
}

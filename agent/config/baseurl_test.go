package config_test

import (
	"strings"
	"testing"

	"polly/agent/config"
)

// Issue 25 #6: OPENAI_BASE_URL is the openai provider's only. With another
// provider active, that provider keeps its own base URL (its key goes
// nowhere else) and Polly warns once; --base-url still means the active
// provider; with only the default provider, OPENAI_BASE_URL applies.
func TestOpenAIBaseURLIsTheOpenAIProvidersOnly(t *testing.T) {
	user := `{"provider": "openrouter", "model": "some/model",
	  "providers": {"openrouter": {"base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY"}}}`
	env := map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENROUTER_API_KEY": "sk-or-key-0123456789"}
	c, err := newFixture(t, user, "").load(env, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if m := c.ActiveModel(); m.Provider != "openrouter" || m.BaseURL != "https://openrouter.ai/api/v1" || m.APIKey != "sk-or-key-0123456789" {
		t.Fatalf("active model %s at %s", m.Provider, m.BaseURL)
	}
	if got := c.ProviderEndpoint("openai").BaseURL; got != "http://127.0.0.1:9/v1" {
		t.Fatalf("openai base URL %s", got)
	}
	n := 0
	for _, w := range c.Warnings() {
		if strings.Contains(w, "OPENAI_BASE_URL is set, but the active provider is \"openrouter\"") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("warnings %q", c.Warnings())
	}

	c, err = newFixture(t, user, "").load(env, config.Flags{BaseURL: ptr("http://127.0.0.1:8/v1")})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ActiveModel().BaseURL; got != "http://127.0.0.1:8/v1" {
		t.Fatalf("--base-url did not apply to the active provider: %s", got)
	}

	c, err = newFixture(t, "", "").load(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ActiveModel().BaseURL; got != "http://127.0.0.1:9/v1" {
		t.Fatalf("default provider: %s", got)
	}
	for _, w := range c.Warnings() {
		if strings.Contains(w, "OPENAI_BASE_URL") {
			t.Fatalf("warned with the openai provider active: %s", w)
		}
	}
}

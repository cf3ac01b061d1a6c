package app

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"

	"polly/agent/llm"
)

// SetModel switches the model every agent of this App talks to (the TUI's
// /model). The name is resolved like a persona's model (config
// ResolveModel: a listed name, "provider/model", or a name for the active
// provider). The LLM client is rebuilt only when the endpoint, key or
// headers differ, so an injected client (tests) survives a switch within
// its provider.
//
// Call it only while no agent runs: agents read Deps.Model and Deps.LLM on
// every step without a lock. Agents also cache numbers made for the old
// model (token counter, system-prompt and tool-schema token counts), so the
// caller should reopen its session by id afterwards to get fresh agents;
// their history comes back from the store unchanged.
func (a *App) SetModel(name string) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return errors.New("no model name given (usage: /model NAME, e.g. /model gpt-4.1-mini or /model ollama/llama3)")
	}
	m := a.Config.ResolveModel(name)
	if m.APIKey == "" && endpointHost(m.BaseURL) == "api.openai.com" {
		env := m.APIKeyEnv
		if env == "" {
			env = "OPENAI_API_KEY"
		}
		return fmt.Errorf("model %s on provider %s needs an API key: set %s (or --api-key) and restart", m.Name, m.Provider, env)
	}
	if m.BaseURL != a.Model.BaseURL || m.APIKey != a.Model.APIKey || !maps.Equal(m.Headers, a.Model.Headers) {
		a.Deps.LLM = llm.New(llm.Config{
			BaseURL:     m.BaseURL,
			APIKey:      m.APIKey,
			MaxRetries:  retries(a.Config.LLM.MaxRetries),
			IdleTimeout: a.Config.LLM.IdleTimeout(),
			CallTimeout: a.Config.LLM.CallTimeout(),
			Headers:     m.Headers,
		})
	}
	a.Model = m
	a.Deps.Model = modelOf(m)
	a.Deps.Context = settingsOf(m.Context)
	return nil
}

func endpointHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

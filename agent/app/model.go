package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/models"
	"polly/agent/redact"
	"polly/personas"
)

// modelState is the App's part that resolves models: the default model,
// per-persona choices made in the TUI, the catalogue and one client per
// endpoint. Agents call it from their goroutines, so it has its own lock.
type modelState struct {
	mu        sync.Mutex
	cfg       *config.Config
	cat       *models.Catalogue
	llmCfg    func(m config.ModelInfo) llm.Config
	defName   string                  // the name given to SetModel; "" is the configured default
	overrides map[string]string       // persona id → model chosen with /model
	clients   map[string]llm.Streamer // endpoint key → client
	redactor  *redact.Redactor        // hides keys from every client's errors
}

// SetModel switches the default model: the one every persona without a
// model of its own talks to (the TUI's /model on Polly's tab). The name is
// resolved like a persona's model (config ResolveModel: a listed name,
// "provider/model", or a name for the active provider). The LLM client is
// rebuilt only when the endpoint, key or headers differ, so an injected
// client (tests) survives a switch within its provider.
//
// Call it only while no agent runs. Agents cache numbers made for the old
// model (token counter, system-prompt and tool-schema token counts), so
// the caller should reopen its session by id afterwards to get fresh
// agents; their history comes back from the store unchanged.
func (a *App) SetModel(name string) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return errors.New("no model name given (usage: /model NAME, e.g. /model gpt-4.1-mini or /model ollama/llama3)")
	}
	m, err := a.models.resolveName(name)
	if err != nil {
		return err
	}
	if err := needsKey(m); err != nil {
		return err
	}
	if m.BaseURL != a.Model.BaseURL || m.APIKey != a.Model.APIKey || !maps.Equal(m.Headers, a.Model.Headers) {
		a.Deps.LLM = a.models.client(m)
	}
	a.models.mu.Lock()
	a.models.defName = name
	a.models.mu.Unlock()
	a.Model = m
	a.Deps.Model = modelOf(m)
	a.Deps.Context = m.Context
	return nil
}

// SetPersonaModel gives one persona its own model for the rest of the
// process (the /model picker on that persona's tab); "" returns it to its
// configured one. On Polly's tab (the default persona) it is SetModel.
func (a *App) SetPersonaModel(persona, name string) error {
	p, ok := a.Personas.Find(persona)
	if !ok {
		return fmt.Errorf("unknown persona %q", persona)
	}
	if p.ID == personas.DefaultID && p.Model == "" {
		return a.SetModel(name)
	}
	name = strings.TrimSpace(name)
	if name != "" {
		m, err := a.models.resolveName(name)
		if err != nil {
			return err
		}
		if err := needsKey(m); err != nil {
			return err
		}
	}
	a.models.mu.Lock()
	defer a.models.mu.Unlock()
	if name == "" {
		delete(a.models.overrides, p.ID)
	} else {
		a.models.overrides[p.ID] = name
	}
	return nil
}

// PersonaModel is the model a persona talks to now, resolved.
func (a *App) PersonaModel(persona string) (config.ModelInfo, error) {
	p, ok := a.Personas.Find(persona)
	if !ok {
		return config.ModelInfo{}, fmt.Errorf("unknown persona %q", persona)
	}
	return a.models.infoFor(p)
}

// ResolveModel is agent.ModelResolver: the persona's model (a choice made
// with /model, else its file's "model", else the default) resolved to its
// provider's client, window, prices and context numbers.
func (a *App) ResolveModel(p personas.Persona) (agent.Binding, error) {
	m, err := a.models.infoFor(p)
	if err != nil {
		return agent.Binding{}, err
	}
	return agent.Binding{LLM: a.models.client(m), Model: modelOf(m), Context: m.Context}, nil
}

// LearnWindow records a window a provider stated in a context-length
// error, kept in the cache directory and used from the next resolution on
// (it wins over config, discovery and the built-in table).
func (a *App) LearnWindow(provider, model string, tokens int) error {
	return a.models.cat.Learn(provider, model, tokens)
}

// learnedLimits is agent.LimitStore on the model catalogue.
type learnedLimits struct{ cat *models.Catalogue }

func (l learnedLimits) Limit(provider, model string) int { return l.cat.LearnedWindow(provider, model) }

func (l learnedLimits) SaveLimit(provider, model string, tokens int) error {
	return l.cat.Learn(provider, model, tokens)
}

func (l learnedLimits) Where() string { return l.cat.LearnedPath() }

// Catalogue is the model catalogue (discovered and learned windows).
func (a *App) Catalogue() *models.Catalogue { return a.models.cat }

// infoFor resolves the model persona p talks to.
func (s *modelState) infoFor(p personas.Persona) (config.ModelInfo, error) {
	s.mu.Lock()
	name, chosen := s.overrides[p.ID]
	def := s.defName
	s.mu.Unlock()
	if !chosen {
		name = p.Model
	}
	if name == "" {
		if def == "" {
			return s.cfg.ActiveModel(), nil
		}
		return s.cfg.ResolveModel(def), nil
	}
	m, err := s.resolveName(name)
	if err != nil {
		return m, fmt.Errorf("model %q: %w", name, err)
	}
	return m, needsKey(m)
}

// resolveName resolves a model name, refusing a "provider/model" whose
// provider is not configured: such a name goes whole to the default
// provider only when that provider lists it (in the config or in its
// discovered model list), since "ollama/llama3" sent to OpenAI is a typo
// of a provider, not a model.
func (s *modelState) resolveName(name string) (config.ModelInfo, error) {
	m := s.cfg.ResolveModel(name)
	prefix, rest, slash := strings.Cut(name, "/")
	if slash && rest != "" && m.Provider != prefix && !m.Known && !s.listed(m.Provider, m.Name) {
		return m, fmt.Errorf("no provider %q is configured (providers: %s); add providers.%s to the config, or write %s/%s to send the name as is to %s",
			prefix, strings.Join(slices.Sorted(maps.Keys(s.cfg.Providers)), ", "), prefix, m.Provider, name, m.Provider)
	}
	if m.BaseURL == "" {
		return m, fmt.Errorf("provider %s has no base_url", m.Provider)
	}
	return m, nil
}

// listed reports whether the provider's discovered list has the model.
func (s *modelState) listed(provider, model string) bool {
	l, ok := s.cat.Listing(provider)
	if !ok {
		return false
	}
	_, found := l.Find(model)
	return found
}

// client returns the client for m's endpoint, one per endpoint; the
// default endpoint keeps its client (which tests may have injected).
func (s *modelState) client(m config.ModelInfo) llm.Streamer {
	key := endpointKey(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[key]; ok {
		return c
	}
	c := llm.Streamer(redact.Streamer{Inner: llm.New(s.llmCfg(m)), Redactor: s.redactor})
	s.clients[key] = c
	return c
}

func endpointKey(m config.ModelInfo) string {
	var b strings.Builder
	b.WriteString(m.BaseURL + "\x00" + m.APIKey)
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		b.WriteString("\x00" + k + "=" + m.Headers[k])
	}
	return b.String()
}

// needsKey refuses OpenAI's own endpoint without a key: every call would
// fail with 401.
func needsKey(m config.ModelInfo) error {
	if m.APIKey == "" && endpointHost(m.BaseURL) == "api.openai.com" {
		env := m.APIKeyEnv
		if env == "" {
			env = "OPENAI_API_KEY"
		}
		return fmt.Errorf("model %s on provider %s needs an API key: set %s (or --api-key) and restart", m.Name, m.Provider, env)
	}
	return nil
}

func endpointHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// officialHost is a vendor's own API: its models' windows are Polly's
// built-in table, and its model list says nothing about windows.
func officialHost(host string) bool {
	return host == "api.openai.com" || host == "api.anthropic.com"
}

// discoveryEndpoints are the providers worth asking for their models.
func discoveryEndpoints(cfg *config.Config) map[string]models.Endpoint {
	eps := map[string]models.Endpoint{}
	for name := range cfg.Providers {
		m := cfg.ProviderEndpoint(name)
		if m.BaseURL == "" || officialHost(endpointHost(m.BaseURL)) {
			continue
		}
		eps[name] = models.Endpoint{BaseURL: m.BaseURL, APIKey: m.APIKey, Headers: m.Headers}
	}
	return eps
}

// startDiscovery refreshes the catalogue in the background and waits at
// most wait for it, so a headless run starts with the real window while
// the TUI (wait 0) never waits for a frame. The channel closes when
// discovery has ended (nil when there was none to do); stop ends it early.
func startDiscovery(ctx context.Context, cat *models.Catalogue, cfg *config.Config, wait time.Duration) (done <-chan struct{}, stop context.CancelFunc) {
	eps := discoveryEndpoints(cfg)
	if len(eps) == 0 {
		return nil, func() {}
	}
	// Discovery outlives Open's ctx on purpose (it is bounded by its own
	// timeout), so a slow provider fills the cache for next time; only
	// closing the App stops it.
	dctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done = cat.Refresh(dctx, eps)
	if wait <= 0 {
		return done, stop
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
	return done, stop
}

// debugLog appends one line to .agent/debug.log; problems that change
// nothing for the user (a provider without a model list) go there.
func (a *App) debugLog(line string) {
	if a.StateDir == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(a.StateDir, "debug.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), a.Redactor.Provider(line))
}

// DiscoverModels attaches a model catalogue to cfg (cached model lists,
// learned windows) and waits at most wait for the providers' lists, for
// commands that show windows without opening an App (polly config, polly
// models).
func DiscoverModels(ctx context.Context, cfg *config.Config, wait time.Duration) *models.Catalogue {
	cat := models.New(models.Options{CacheDir: cfg.CacheDir()})
	cfg.SetModelFacts(cat)
	startDiscovery(ctx, cat, cfg, wait) // left running: the command's process ends soon
	return cat
}

// ModelRow is one line of `polly models` and of the TUI's /model picker.
type ModelRow struct {
	Ref        string // what /model takes: "provider/name"
	Info       config.ModelInfo
	Configured bool // the config or the built-in table lists it
	Discovered bool // the provider's model list has it
	Embedding  bool // the provider says (or its id says) it only embeds: never offered for chat
}

// ModelRows lists every model Polly knows: per provider (sorted), the
// configured ones (built-in table rows only on the vendor's official
// endpoint) and the discovered ones, each resolved (window, prices).
func ModelRows(cfg *config.Config, cat *models.Catalogue) []ModelRow {
	var rows []ModelRow
	for _, prov := range slices.Sorted(maps.Keys(cfg.Providers)) {
		seen := map[string]*ModelRow{}
		var names []string
		add := func(name string) *ModelRow {
			if r, ok := seen[name]; ok {
				return r
			}
			seen[name] = &ModelRow{Ref: prov + "/" + name, Info: cfg.ResolveOn(prov, name)}
			names = append(names, name)
			return seen[name]
		}
		for _, name := range slices.Sorted(maps.Keys(cfg.Providers[prov].Models)) {
			if m := cfg.ResolveOn(prov, name); m.Known {
				add(name).Configured = true
			}
		}
		if l, ok := cat.Listing(prov); ok {
			for _, m := range l.Models {
				r := add(m.ID)
				r.Discovered, r.Embedding = true, m.Embedding
			}
		}
		for _, name := range names {
			rows = append(rows, *seen[name])
		}
	}
	return rows
}

// ModelRows lists the models this App knows (see the function ModelRows).
func (a *App) ModelRows() []ModelRow { return ModelRows(a.Config, a.models.cat) }

// WindowText shows a window: "16000 (discovered)", or "unknown".
func WindowText(m config.ModelInfo) string {
	if m.ContextWindow <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d (%s)", m.ContextWindow, m.WindowSource)
}

// PriceText shows prices per 1M tokens in and out, or "—" when unknown.
func PriceText(m config.ModelInfo) string {
	if m.Price == nil {
		return "—"
	}
	return fmt.Sprintf("$%g/$%g", m.Price.Input, m.Price.Output)
}

// RememberModel keeps a /model choice with the session, so resuming it
// talks to the same model (nothing to do without a store or before the
// session has an id).
func (a *App) RememberModel(ctx context.Context, sessionID, persona, name string) error {
	p, ok := a.Personas.Find(persona)
	if !ok {
		return fmt.Errorf("unknown persona %q", persona)
	}
	if a.Store == nil || sessionID == "" {
		return nil
	}
	return a.Store.SetSessionModel(ctx, sessionID, p.ID, name)
}

// restoreModels gives the personas of a resumed session the models chosen
// in it. A choice that no longer resolves (its provider is gone, its key
// unset) is said and left.
func (a *App) restoreModels(ctx context.Context, id string) []string {
	if a.Store == nil {
		return nil
	}
	chosen, err := a.Store.SessionModels(ctx, id)
	if err != nil {
		return []string{err.Error()}
	}
	var warns []string
	for _, persona := range slices.Sorted(maps.Keys(chosen)) {
		if err := a.SetPersonaModel(persona, chosen[persona]); err != nil {
			warns = append(warns, fmt.Sprintf("session %s chose model %s for %s, which cannot be used now (%v); it talks to %s", id, chosen[persona], persona, err, a.personaModelName(persona)))
		}
	}
	return warns
}

// personaModelName is the name of the model a persona talks to now ("?"
// when it cannot be resolved).
func (a *App) personaModelName(persona string) string {
	if m, err := a.PersonaModel(persona); err == nil {
		return m.Name
	}
	return "?"
}

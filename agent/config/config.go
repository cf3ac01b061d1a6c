// Package config loads Polly's settings in layers — built-in defaults, the
// user file, the project file, the environment, command-line flags; later
// layers win — and remembers where every effective value came from, so
// `polly config` can show it and a broken file is reported by file, line,
// column and field before anything runs.
package config

import (
	"encoding/json"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"polly/memory/window"
)

// Mode is how much the agent may do without asking.
type Mode string

const (
	ModeAsk      Mode = "ask"       // reads are free; writes and commands ask
	ModeAutoEdit Mode = "auto-edit" // file edits inside the project are free; commands ask
	ModeYolo     Mode = "yolo"      // nothing asks
)

// Config is the effective configuration. The JSON tags are the file format;
// the Validate methods (validate.go) hold the value rules, checked after
// every layer.
type Config struct {
	Model     string              `json:"model"`    // default model; "provider/model" selects a provider
	Provider  string              `json:"provider"` // the active provider
	Providers map[string]Provider `json:"providers"`
	Persona   string              `json:"persona"`
	Workspace string              `json:"workspace"` // absolute after Load
	Mode      Mode                `json:"mode"`
	MaxTurns  int                 `json:"max_turns"` // 0: no cap (the loop detector stops a stuck run)
	// NotifyAfter: a turn that ran this many seconds fires the Notification
	// hooks (idle_prompt) when it ends; 0: every turn.
	NotifyAfter int               `json:"notify_after_seconds"`
	Context     ContextSettings   `json:"context"`
	LLM         LLMSettings       `json:"llm"`
	Team        TeamSettings      `json:"team"`
	Permissions Permissions       `json:"permissions"`
	Web         WebSettings       `json:"web"`
	TUI         TUISettings       `json:"tui"`
	Sandbox     SandboxSettings   `json:"sandbox"`
	Memory      MemorySettings    `json:"memory"`
	Retention   RetentionSettings `json:"retention"`
	// Hooks run the user's commands at points of the agent loop, in the
	// Claude Code schema; MCPServers are MCP servers in the .mcp.json shape.
	// Project-file entries of both apply only to a trusted project.
	Hooks      map[string][]HookMatcher `json:"hooks"`
	MCPServers map[string]MCPServer     `json:"mcp_servers"` // "mcpServers" is accepted too (Claude Code's spelling)

	sources     map[string]Source // field path → where its value came from; absent = default
	envBaseURL  string            // OPENAI_BASE_URL: replaces the openai provider's base URL (only its)
	flagBaseURL string            // --base-url: replaces the active provider's base URL
	apiKey      string            // --api-key: the active provider's key
	envKeys     map[string]string // provider name → value of its api_key_env, read at Load
	userFile    string            // display path of the user file, even when it does not exist
	home        string            // for ~ in displayed paths
	cacheDir    string            // $XDG_CACHE_HOME/polly or ~/.cache/polly; "" when unknown
	stateDir    string            // $XDG_STATE_HOME/polly or ~/.local/state/polly; "" when unknown
	facts       ModelFacts        // windows learned and discovered at run time; nil: none
	fixed       FixedCost         // the fixed cost last measured, for the threshold `polly config` shows
	warnings    []string
	mcpFile     map[string]MCPServer // the project's .mcp.json "mcpServers"
	// Project files besides .agent/config.json whose settings need trust
	// (.mcp.json's servers, .claude/settings*.json's hooks).
	extraTrust   []trustedDoc
	claudeHooks  []HookEntry     // hooks of Claude Code's settings files, in reading order
	hookSwitches []hookSwitch    // their "disableAllHooks"
	warnedKeys   map[string]bool // lenient-file warnings already given

	opts        LoadOptions  // what Load was given, for Reload
	trust       ProjectTrust // the project settings that need trust
	projectData []byte       // the project file, for positions of held settings
}

// Provider is an OpenAI-compatible endpoint.
type Provider struct {
	BaseURL   string               `json:"base_url"`
	APIKeyEnv string               `json:"api_key_env"` // name of the variable holding the key
	APIKey    string               `json:"api_key"`     // discouraged: Print warns
	Headers   map[string]string    `json:"headers"`
	Models    map[string]ModelSpec `json:"models"`
}

// ModelSpec describes one model of a provider. Prices are USD per million
// tokens; nil means unknown (Polly then shows no cost).
type ModelSpec struct {
	ContextWindow    int      `json:"context_window"`
	MaxOutputTokens  int      `json:"max_output_tokens"`    // sent as max_completion_tokens/max_tokens and reserved; 0: not sent
	SafetyMargin     int      `json:"safety_margin_tokens"` // kept free for estimate errors; 0: 2% of the window
	InputPrice       *float64 `json:"input_price"`
	OutputPrice      *float64 `json:"output_price"`
	CachedInputPrice *float64 `json:"cached_input_price"`
	// Per-model context numbers: those a file sets replace the global
	// ones (Config.Context) for this model, whichever layer set those.
	Context ContextSettings `json:"context"`
	// Tools, when set, is the only tools this model is given (a persona's
	// own list narrows it further): a lighter tool set for a small window.
	// MCP tools are named by pattern ("mcp__github__*").
	Tools []string `json:"tools"`
}

// ContextSettings are the numbers of the context engine (PRODUCT §3):
// memory/window's Settings, where their defaults live. The config holds
// only what a file or flag set (0 is "not set"); window fills the rest.
type ContextSettings = window.Settings

// LLMSettings tune provider calls.
type LLMSettings struct {
	MaxRetries         int `json:"max_retries"`
	IdleTimeoutSeconds int `json:"idle_timeout_seconds"` // a stream silent this long is broken
	CallTimeoutSeconds int `json:"call_timeout_seconds"`
}

// IdleTimeout is IdleTimeoutSeconds as a duration.
func (l LLMSettings) IdleTimeout() time.Duration {
	return time.Duration(l.IdleTimeoutSeconds) * time.Second
}

// CallTimeout is CallTimeoutSeconds as a duration.
func (l LLMSettings) CallTimeout() time.Duration {
	return time.Duration(l.CallTimeoutSeconds) * time.Second
}

// TeamSettings bound sub-agent delegation.
type TeamSettings struct {
	MaxParallel int `json:"max_parallel"`
	MaxDepth    int `json:"max_depth"` // 0: sub-agents cannot be started
}

// Permissions are rules on top of the mode. Rules from every layer
// accumulate; the permission package decides how they combine.
type Permissions struct {
	Allow []Rule `json:"allow"`
	Ask   []Rule `json:"ask"`
	Deny  []Rule `json:"deny"`
}

// WebSettings govern fetch_url and web search.
type WebSettings struct {
	RespectRobots  bool   `json:"respect_robots"`
	UserAgent      string `json:"user_agent"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	MaxBytes       int64  `json:"max_bytes"`
}

// Timeout is TimeoutSeconds as a duration.
func (w WebSettings) Timeout() time.Duration {
	return time.Duration(w.TimeoutSeconds) * time.Second
}

// SandboxSettings configure the OS sandbox commands run in (tools/sandbox).
type SandboxSettings struct {
	Mode          string   `json:"mode"`           // auto: use it where the kernel has Landlock
	Network       bool     `json:"network"`        // commands may use the network without asking
	WritableRoots []string `json:"writable_roots"` // extra writable directories in workspace-write
	PassEnv       []string `json:"pass_env"`       // credential-like variables commands get anyway
	DenyRead      []string `json:"deny_read"`      // paths no command reads, on top of the built-in set
}

// MemorySettings tune the workspace memory.
type MemorySettings struct {
	LearnFacts bool `json:"learn_facts"` // summaries' durable facts go to MEMORY.md ("Learned")
}

// RetentionSettings bound what the project's .agent/ keeps (polly gc).
type RetentionSettings struct {
	Days int `json:"days"` // sessions idle longer than this are removed
}

// HookMatcher is one entry of a hook event: the handlers to run when the
// matcher matches (Claude Code's rules: "", "*" match all; names with
// only letters, digits, _, -, spaces, commas and | are exact names;
// anything else is an unanchored regular expression).
type HookMatcher struct {
	Matcher string        `json:"matcher"`
	Hooks   []HookCommand `json:"hooks"`
}

// HookCommand is one hook handler with every field of Claude Code's hooks
// reference, so a block copied from Claude Code is accepted whole. Polly
// runs command and http handlers; the others are reported as unused.
type HookCommand struct {
	Type            string            `json:"type"` // command (""), http, prompt, agent, mcp_tool
	Command         string            `json:"command"`
	Args            []string          `json:"args"`  // exec form: no shell
	Shell           string            `json:"shell"` // bash or powershell
	URL             string            `json:"url"`
	Headers         map[string]string `json:"headers"`
	AllowedEnvVars  []string          `json:"allowedEnvVars"`
	Prompt          string            `json:"prompt"`
	Model           string            `json:"model"`
	Server          string            `json:"server"`
	Tool            string            `json:"tool"`
	Input           json.RawMessage   `json:"input"`
	If              string            `json:"if"`
	Timeout         int               `json:"timeout"` // seconds; 0: the default
	Async           bool              `json:"async"`
	AsyncRewake     bool              `json:"asyncRewake"`
	StatusMessage   string            `json:"statusMessage"`
	Once            bool              `json:"once"`
	ContinueOnBlock bool              `json:"continueOnBlock"`
	Network         bool              `json:"network"` // Polly: the hook may use the network (it runs in the command sandbox)
}

// MCPServer is one MCP server: a command speaking stdio, or (type "http")
// a streamable-HTTP URL.
type MCPServer struct {
	Type           string            `json:"type"`
	Command        string            `json:"command"`
	Args           []string          `json:"args"`
	Env            map[string]string `json:"env"`
	Cwd            string            `json:"cwd"`
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	StartupTimeout int               `json:"startup_timeout_seconds"` // 0: the default
	ToolTimeout    int               `json:"tool_timeout_seconds"`    // one tool call; 0: the default (60)
	// A stdio server runs in the command sandbox: read-only but for these
	// (the project among them: its protected paths stay read-only), and
	// without the network unless Network.
	Network       bool     `json:"network"`
	WritableRoots []string `json:"writable_roots"`
}

// TUISettings are display preferences.
type TUISettings struct {
	Theme string `json:"theme"`
	// Notify is how a turn that ran notify_after_seconds or more (or a
	// permission question) is announced while the terminal is not
	// focused: "bell", "osc9" (a desktop notification in terminals that
	// support it) or "off".
	Notify string `json:"notify"`
}

// Built-in values that Load and the tests refer to.
const (
	DefaultProvider = "openai"
	DefaultModel    = "gpt-4.1"
	DefaultBaseURL  = "https://api.openai.com/v1"
)

// Where a model's window or price came from (ModelInfo.WindowSource and
// PriceSource), strongest first. A window Polly cannot know is 0 and
// "unknown": no guess (a local model is not a 128k model).
const (
	SourceLearned    = "learned"    // stated by the provider's context-length error
	SourceConfig     = "config"     // a user or project file
	SourceDiscovered = "discovered" // the provider's model list (agent/models)
	SourceBuiltin    = "built-in"   // Polly's table, for the vendor's official endpoint only
	SourceUnknown    = "unknown"
)

// ModelFacts is what Polly found out about models while running: windows
// a provider's context-length errors stated, and windows its model list
// reports. agent/models implements it. Zero means nothing known.
type ModelFacts interface {
	LearnedWindow(provider, model string) int
	DiscoveredWindow(provider, model string) int
}

// FixedCost is a context's fixed cost (system prompt, tool schemas, task
// block: what no summary shrinks) as the agent measured it on a call.
type FixedCost struct {
	Tokens int
	Model  string // the model of that call
	From   string // where it was measured, for the source column ("the last call of session …")
}

// SetFixedCost gives the fixed cost measured on the latest call, so the
// summarization threshold printed is the agent's own (it depends on it).
func (c *Config) SetFixedCost(f FixedCost) { c.fixed = f }

// SetModelFacts makes resolution consult f (learned and discovered
// windows). It must be safe for concurrent use.
func (c *Config) SetModelFacts(f ModelFacts) { c.facts = f }

// CacheDir is Polly's cache directory ($XDG_CACHE_HOME/polly, else
// ~/.cache/polly); "" when neither is known.
func (c *Config) CacheDir() string { return c.cacheDir }

// StateDir is Polly's per-user state directory ($XDG_STATE_HOME/polly,
// else ~/.local/state/polly): the install id lives there. "" when neither
// is known.
func (c *Config) StateDir() string { return c.stateDir }

// officialHosts maps a vendor's official API host to its built-in models.
// Prices and windows from this table never apply to another endpoint: a
// local server answering to "gpt-4o" is not OpenAI and costs nothing known.
func builtinModel(baseURL, name string) (ModelSpec, bool) {
	var table map[string]ModelSpec
	switch hostOf(baseURL) {
	case "api.openai.com":
		table = openAIModels()
	case "api.anthropic.com":
		table = anthropicModels()
	}
	spec, ok := table[name]
	return spec, ok
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// modelSpec is a built-in table row; prices are list prices per 1M tokens
// when this was written (a config file overrides them).
func modelSpec(window int, in, out, cached float64) ModelSpec {
	return ModelSpec{ContextWindow: window, InputPrice: &in, OutputPrice: &out, CachedInputPrice: &cached}
}

func openAIModels() map[string]ModelSpec {
	return map[string]ModelSpec{
		"gpt-4.1":      modelSpec(1047576, 2.00, 8.00, 0.50),
		"gpt-4.1-mini": modelSpec(1047576, 0.40, 1.60, 0.10),
		"gpt-4.1-nano": modelSpec(1047576, 0.10, 0.40, 0.025),
		"gpt-4o":       modelSpec(128000, 2.50, 10.00, 1.25),
		"gpt-4o-mini":  modelSpec(128000, 0.15, 0.60, 0.075),
		"o3":           modelSpec(200000, 2.00, 8.00, 0.50),
		"o4-mini":      modelSpec(200000, 1.10, 4.40, 0.275),
		"gpt-5":        modelSpec(400000, 1.25, 10.00, 0.125),
		"gpt-5-mini":   modelSpec(400000, 0.25, 2.00, 0.025),
		"gpt-5-nano":   modelSpec(400000, 0.05, 0.40, 0.005),
	}
}

// anthropicModels are for Anthropic's OpenAI-compatible endpoint
// (https://api.anthropic.com/v1/).
func anthropicModels() map[string]ModelSpec {
	return map[string]ModelSpec{
		"claude-opus-4-1":         modelSpec(200000, 15.00, 75.00, 1.50),
		"claude-opus-4-0":         modelSpec(200000, 15.00, 75.00, 1.50),
		"claude-sonnet-4-5":       modelSpec(200000, 3.00, 15.00, 0.30),
		"claude-sonnet-4-0":       modelSpec(200000, 3.00, 15.00, 0.30),
		"claude-haiku-4-5":        modelSpec(200000, 1.00, 5.00, 0.10),
		"claude-3-5-haiku-latest": modelSpec(200000, 0.80, 4.00, 0.08),
	}
}

// Version is Polly's version as Load was given it ("dev" when unknown), for
// the user agents Polly sends.
func (c *Config) Version() string {
	if c.opts.Version == "" {
		return "dev"
	}
	return c.opts.Version
}

// Defaults returns the built-in configuration. version goes into the web
// user agent ("dev" when empty). Every call returns fresh maps.
func Defaults(version string) *Config {
	if version == "" {
		version = "dev"
	}
	return &Config{
		Model:    DefaultModel,
		Provider: DefaultProvider,
		Providers: map[string]Provider{
			DefaultProvider: {
				BaseURL:   DefaultBaseURL,
				APIKeyEnv: "OPENAI_API_KEY",
				Models:    openAIModels(),
			},
		},
		Persona:     "default",
		Workspace:   "~/.agent/workspace",
		Mode:        ModeAsk,
		MaxTurns:    0,
		NotifyAfter: 60,
		LLM:         LLMSettings{MaxRetries: 4, IdleTimeoutSeconds: 90, CallTimeoutSeconds: 600},
		Team:        TeamSettings{MaxParallel: 4, MaxDepth: 1},
		Web: WebSettings{
			RespectRobots:  true,
			UserAgent:      "Polly/" + version + " (+https://github.com/polly)",
			TimeoutSeconds: 30,
			MaxBytes:       5 << 20,
		},
		TUI:       TUISettings{Theme: "auto", Notify: "bell"},
		Sandbox:   SandboxSettings{Mode: "auto"},
		Memory:    MemorySettings{LearnFacts: true},
		Retention: RetentionSettings{Days: 90},
		sources:   map[string]Source{},
		envKeys:   map[string]string{},
	}
}

// ModelInfo is a model resolved against its provider: everything a client
// needs to call it and the context numbers that apply to it.
type ModelInfo struct {
	Name          string // as sent to the provider
	Provider      string
	BaseURL       string
	APIKey        string // "" when none is configured
	APIKeyEnv     string // the variable the key is read from, for messages
	Headers       map[string]string
	ContextWindow int    // tokens; 0 when unknown
	WindowSource  string // SourceLearned … SourceUnknown
	MaxOutput     int    // max output tokens (0: not sent)
	SafetyMargin  int    // tokens kept free (0: the default share)
	Known         bool   // the config or the built-in table lists the model
	Price         *Price // nil when unknown: no cost is shown
	PriceSource   string // SourceConfig, SourceBuiltin or SourceUnknown
	Context       ContextSettings
	Tools         []string // the model's tool allow-list; nil: every tool
}

// Price is USD per million tokens.
type Price struct {
	Input, Output, CachedInput float64
}

// Budget is the context the model may fill: its window (128,000 when
// unknown) less the output reserved and the safety margin
// (window.Budget, as the agent computes it).
func (m ModelInfo) Budget() int {
	return window.Budget(m.ContextWindow, m.MaxOutput, m.SafetyMargin)
}

// Threshold is the token count that triggers summarization for a fixed
// cost (system prompt, tool schemas, task block) of fixed tokens: the
// agent's own formula (window.Settings.Threshold), so `polly config`, the
// status bar and the agent report one number.
func (m ModelInfo) Threshold(fixed int) int {
	return m.Context.WithDefaults().Threshold(m.Budget(), fixed)
}

// ActiveModel is the model Polly talks to by default.
func (c *Config) ActiveModel() ModelInfo {
	prov, name := c.activeProviderAndName()
	return c.resolve(prov, name)
}

// ResolveModel resolves a model name as a persona or sub-agent might give
// it: a name the active provider lists is taken whole; otherwise a
// "provider/" prefix naming a configured provider selects it; otherwise the
// name belongs to the active provider.
func (c *Config) ResolveModel(name string) ModelInfo {
	active, activeName := c.activeProviderAndName()
	if name == "" || name == c.Model || name == activeName {
		return c.resolve(active, activeName)
	}
	if _, listed := c.Providers[active].Models[name]; !listed {
		if p, rest, ok := strings.Cut(name, "/"); ok && rest != "" {
			if _, known := c.Providers[p]; known {
				return c.resolve(p, rest)
			}
		}
	}
	return c.resolve(active, name)
}

// ResolveOn resolves model name on a named provider, as is (no prefix
// parsing): for lists that already know both.
func (c *Config) ResolveOn(provider, name string) ModelInfo { return c.resolve(provider, name) }

// ProviderEndpoint is how calls reach a provider: BaseURL, APIKey and
// Headers of the result, with the env and flag overrides of the active
// provider applied.
func (c *Config) ProviderEndpoint(name string) ModelInfo { return c.resolve(name, "") }

// ContextFor returns the context numbers for a model: the global ones with
// the model's overrides applied. A per-model value wins over a global one
// from any layer, because it is more specific. (Config.Context holds the
// global numbers.) A number no layer set is 0: WithDefaults fills it.
func (c *Config) ContextFor(model string) ContextSettings {
	return c.ResolveModel(model).Context
}

// activeProviderAndName splits c.Model. A "p/" prefix selects provider p
// only when the model was set at a higher layer than "provider": with
// {"provider":"openrouter","model":"openai/gpt-4o"} in one file the whole
// string is an OpenRouter model name, while `--model ollama/llama3` over a
// file's provider switches to ollama.
func (c *Config) activeProviderAndName() (provider, name string) {
	provider, name = c.Provider, c.Model
	if _, listed := c.Providers[provider].Models[name]; listed {
		return provider, name
	}
	p, rest, ok := strings.Cut(name, "/")
	if !ok || rest == "" {
		return provider, name
	}
	if _, known := c.Providers[p]; known && c.Source("model").Kind > c.Source("provider").Kind {
		return p, rest
	}
	return provider, name
}

func (c *Config) resolve(provider, name string) ModelInfo {
	p := c.Providers[provider]
	spec, listed := p.Models[name]
	m := ModelInfo{
		Name:         name,
		Provider:     provider,
		BaseURL:      p.BaseURL,
		APIKey:       p.APIKey,
		APIKeyEnv:    p.APIKeyEnv,
		Headers:      maps.Clone(p.Headers),
		MaxOutput:    spec.MaxOutputTokens,
		SafetyMargin: spec.SafetyMargin,
		Context:      c.modelContext(provider, name, spec),
		Tools:        slices.Clone(spec.Tools),
	}
	if k := c.envKeys[provider]; k != "" {
		m.APIKey = k
	}
	if active, _ := c.activeProviderAndName(); provider == active {
		// Overrides from flags are meant for the active provider only;
		// sending a --api-key to another endpoint would leak it.
		if c.apiKey != "" {
			m.APIKey = c.apiKey
		}
	}
	if u, _, ok := c.baseURLFor(provider); ok {
		m.BaseURL = u
	}
	builtin, official := builtinModel(m.BaseURL, name)
	m.Known = official || (listed && c.fromFile(provider, name))
	m.ContextWindow, m.WindowSource = c.window(provider, name, spec, builtin)
	m.Price, m.PriceSource = c.price(provider, name, spec, builtin)
	return m
}

// baseURLFor is the base URL the environment or a flag sets for provider,
// and where it came from: --base-url is for the active provider,
// OPENAI_BASE_URL for the openai provider only (it is OpenAI's variable:
// another provider's key must never follow it to another host).
func (c *Config) baseURLFor(provider string) (string, Source, bool) {
	if active, _ := c.activeProviderAndName(); provider == active && c.flagBaseURL != "" {
		return c.flagBaseURL, Source{Kind: KindFlag, Detail: "--base-url"}, true
	}
	if provider == DefaultProvider && c.envBaseURL != "" {
		return c.envBaseURL, Source{Kind: KindEnv, Detail: "OPENAI_BASE_URL"}, true
	}
	return "", Source{}, false
}

// fromFile reports whether a config file (or a higher layer) set anything
// for this model; the built-in defaults alone do not count.
func (c *Config) fromFile(provider, name string) bool {
	specPath := joinPath(joinPath("providers", provider)+".models", name)
	for _, f := range []string{"context_window", "input_price", "output_price", "cached_input_price"} {
		if c.Source(specPath+"."+f).Kind != KindDefault {
			return true
		}
	}
	return false
}

// window applies the precedence learned > config > discovered > built-in
// (official endpoint only) > unknown.
func (c *Config) window(provider, name string, spec, builtin ModelSpec) (int, string) {
	specPath := joinPath(joinPath("providers", provider)+".models", name)
	if c.facts != nil {
		if n := c.facts.LearnedWindow(provider, name); n > 0 {
			return n, SourceLearned
		}
	}
	if spec.ContextWindow > 0 && c.Source(specPath+".context_window").Kind != KindDefault {
		return spec.ContextWindow, SourceConfig
	}
	if c.facts != nil {
		if n := c.facts.DiscoveredWindow(provider, name); n > 0 {
			return n, SourceDiscovered
		}
	}
	if builtin.ContextWindow > 0 {
		return builtin.ContextWindow, SourceBuiltin
	}
	return 0, SourceUnknown
}

// price is the configured price, else the built-in one on the vendor's
// official endpoint, else unknown (nil): never a guess by name.
func (c *Config) price(provider, name string, spec, builtin ModelSpec) (*Price, string) {
	specPath := joinPath(joinPath("providers", provider)+".models", name)
	set := func(f string) bool { return c.Source(specPath+"."+f).Kind != KindDefault }
	if spec.InputPrice != nil && spec.OutputPrice != nil && (set("input_price") || set("output_price") || set("cached_input_price")) {
		return priceOf(spec), SourceConfig
	}
	if builtin.InputPrice != nil && builtin.OutputPrice != nil {
		return priceOf(builtin), SourceBuiltin
	}
	return nil, SourceUnknown
}

func priceOf(spec ModelSpec) *Price {
	p := &Price{Input: *spec.InputPrice, Output: *spec.OutputPrice, CachedInput: *spec.InputPrice}
	if spec.CachedInputPrice != nil {
		p.CachedInput = *spec.CachedInputPrice
	}
	return p
}

// modelContext is the global context numbers with those a file set for
// this model in their place. What was set is read from the sources, so one
// struct serves both: no parallel struct of pointers.
func (c *Config) modelContext(provider, name string, spec ModelSpec) ContextSettings {
	return c.contextAt(joinPath(joinPath("providers", provider)+".models", name)+".context", spec.Context)
}

// contextAt is the global numbers with those set at ctxPath from set.
func (c *Config) contextAt(ctxPath string, set ContextSettings) ContextSettings {
	out := c.Context
	if _, wrote := c.sources[ctxPath]; !wrote {
		return out // no layer wrote a "context" object here
	}
	from, to := reflect.ValueOf(set), reflect.ValueOf(&out).Elem()
	for i := range to.NumField() {
		if _, ok := c.sources[ctxPath+"."+jsonName(to.Type().Field(i))]; ok {
			to.Field(i).Set(from.Field(i))
		}
	}
	return out
}

// Package app wires Polly's parts together for one process: config →
// store, LLM client, tools, workspace, personas → agent.Deps. Both the
// headless CLI and the TUI start here.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/models"
	"polly/agent/owner"
	"polly/agent/redact"
	"polly/memory/store"
	"polly/personas"
	"polly/tools"
	"polly/tools/mcp"
	"polly/tools/permission"
	"polly/tools/sandbox"
	"polly/workspace"
	"polly/workspace/commands"
	"polly/workspace/skills"
)

// Options open an App.
type Options struct {
	Config     *config.Config
	ProjectDir string           // absolute; tools and .agent/ live here
	WorkDir    string           // where Polly was started, inside ProjectDir ("": the root): instruction files are read down to here
	Template   fs.FS            // the embedded .agent-template
	Asker      permission.Asker // nil: headless (what would ask is denied)
	LLM        llm.Streamer     // nil: an llm.Client for the configured model
	Now        func() time.Time // nil: time.Now
	Home       string           // the user's home: user skill folders; "" skips them
	// DiscoveryWait is how long Open waits for the providers' model lists
	// (windows) when they are not cached: a headless run waits a moment,
	// the TUI (0) never does and picks them up from its next run on.
	DiscoveryWait time.Duration
	// KillPoint is agent.Deps.KillPoint: crash tests end the process at a
	// named point of the summary swap. nil in normal runs.
	KillPoint func(point string)
	Log       *slog.Logger // --debug: the provider client logs each HTTP request here; nil: no log
}

// HeadlessDiscoveryWait bounds the wait of a headless run for windows.
const HeadlessDiscoveryWait = 2 * time.Second

// App is a wired Polly.
type App struct {
	Config     *config.Config
	Model      config.ModelInfo
	ProjectDir string
	WorkDir    string // where Polly was started (instruction files are read down to here)
	StateDir   string
	Store      *store.Store         // nil when .agent/ is unusable
	Owner      owner.Checker        // tells the sessions this install made here from the others
	Workspace  *workspace.Workspace // nil when the workspace is unusable
	Personas   *personas.Set
	Policy     *permission.Policy
	Sandbox    sandbox.Status // what the OS sandbox does for commands here
	Skills     *skills.Set    // Agent Skills found at start-up
	Commands   *commands.Set  // custom slash commands (.claude/commands/*.md…) found at start-up
	MCP        *mcp.Manager   // the MCP servers; nil when none is configured
	Deps       *agent.Deps
	Warnings   []string // problems that did not stop start-up, for the user
	// Redactor hides the configured keys (every provider's, in any
	// encoding) from provider errors, tool outputs and logs.
	Redactor *redact.Redactor

	storeErr error                         // why Store is nil
	current  atomic.Pointer[agent.Session] // the session decisions are logged under
	runner   sandbox.Runner                // runs commands through its long-lived sandbox helper

	gcOnce sync.Once          // the daily retention pass starts with the first session
	stopGC context.CancelFunc // nil when no pass runs
	gcDone chan struct{}      // closed when the pass ends

	models        *modelState
	discovery     <-chan struct{}    // closed when the model lists are in (nil: none asked for)
	stopDiscovery context.CancelFunc // ends a discovery still running at Close
}

// Open wires everything. Only a problem that makes Polly useless is an
// error; an unwritable .agent/ or workspace becomes a warning.
func Open(ctx context.Context, opts Options) (*App, error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, errors.New("app: no config")
	}
	root, err := filepath.Abs(opts.ProjectDir)
	if err != nil {
		return nil, fmt.Errorf("project dir: %w", err)
	}
	if err := cfg.CheckRuleTools(ToolNames()); err != nil {
		return nil, err
	}
	a := &App{Config: cfg, ProjectDir: root, WorkDir: opts.WorkDir, StateDir: filepath.Join(root, ".agent")}
	a.Warnings = append(a.Warnings, cfg.Warnings()...)

	if a.Owner, err = LoadOwner(cfg, root); err != nil {
		return nil, err
	}
	if a.Owner.Problem != nil {
		a.Warnings = append(a.Warnings, fmt.Sprintf("sessions cannot be tied to this machine (%v): resuming and undo are refused", a.Owner.Problem))
	}
	dbPath := filepath.Join(a.StateDir, "polly.db")
	_, statErr := os.Lstat(dbPath)
	if st, err := OpenStore(dbPath, a.Owner); err != nil {
		a.storeErr = err
		a.Warnings = append(a.Warnings, fmt.Sprintf("sessions will not be saved: %v", err))
	} else {
		a.Store = st
		if errors.Is(statErr, fs.ErrNotExist) {
			// The store was made just now: keep it out of git.
			if note := IgnoreStateDir(root); note != "" {
				a.Warnings = append(a.Warnings, note)
			}
		}
	}

	secrets, secretVars := secretsOf(cfg, cfg.ActiveModel())
	a.Redactor = redact.New(secrets...)
	cat := models.New(models.Options{CacheDir: cfg.CacheDir(), Debug: a.debugLog})
	cfg.SetModelFacts(cat)
	a.discovery, a.stopDiscovery = startDiscovery(ctx, cat, cfg, opts.DiscoveryWait)
	a.Model = cfg.ActiveModel()
	a.models = &modelState{cfg: cfg, cat: cat, overrides: map[string]string{}, clients: map[string]llm.Streamer{}, redactor: a.Redactor,
		llmCfg: func(m config.ModelInfo) llm.Config {
			return llm.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, MaxRetries: retries(cfg.LLM.MaxRetries),
				IdleTimeout: cfg.LLM.IdleTimeout(), CallTimeout: cfg.LLM.CallTimeout(), Headers: m.Headers,
				UserAgent: "Polly/" + cfg.Version(), Log: opts.Log}
		}}

	var personaDir string
	if opts.Template != nil {
		ws, err := workspace.Open(cfg.Workspace, opts.Template)
		if err != nil {
			a.Warnings = append(a.Warnings, fmt.Sprintf("workspace memory unavailable: %v", err))
		} else {
			ws.SetProject(root)
			a.Workspace = ws
			personaDir = filepath.Join(ws.Dir(), "personas")
			a.Warnings = append(a.Warnings, templateNotices(ws)...)
		}
	}
	set, perrs := personas.Load(personaDir, personas.MarkdownDirs(root, opts.Home)...)
	for _, e := range perrs {
		a.Warnings = append(a.Warnings, "persona skipped: "+e.Error())
	}
	a.Personas = set
	for _, p := range set.All() {
		if p.Model == "" {
			continue
		}
		if _, err := a.models.infoFor(p); err != nil {
			a.Warnings = append(a.Warnings, fmt.Sprintf("persona %s will be refused when used: %v", p.ID, err))
		}
	}

	home := Home()
	a.Sandbox = sandbox.Resolve(sandbox.Settings{Mode: sandbox.Mode(cfg.Sandbox.Mode), Network: cfg.Sandbox.Network})
	if n := a.Sandbox.Notice(); n != "" {
		a.Warnings = append(a.Warnings, n)
	}
	a.runner.Setup = sandboxSetup(cfg, home)
	caches := a.runner.Setup.Caches

	asker := opts.Asker
	if asker != nil {
		asker = notifyingAsker{inner: asker, app: a}
	}
	pol, err := permission.New(permission.Options{
		Mode: permission.Mode(cfg.Mode), Root: root, StateDir: a.StateDir, Asker: asker,
		Sandbox: a.Sandbox, Network: cfg.Sandbox.Network,
		Secrets: permission.Secrets{Paths: a.runner.Setup.DenyRead, Polly: a.runner.Setup.Polly, Home: home},
		Rules:   permission.Rules{Allow: rulesOf(cfg.Permissions.Allow), Ask: rulesOf(cfg.Permissions.Ask), Deny: rulesOf(cfg.Permissions.Deny)},
		Log:     a.decisionLog(),
		Session: func() string {
			if s := a.current.Load(); s != nil {
				return s.ID()
			}
			return ""
		},
	})
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("permissions: %w", err)
	}
	a.Policy = pol

	client := opts.LLM
	if client == nil {
		client = a.models.client(a.Model)
	} else {
		client = redact.Streamer{Inner: client, Redactor: a.Redactor}
		a.models.clients[endpointKey(a.Model)] = client // personas on the default endpoint share it
	}

	reg := tools.NewRegistry(tools.FileTools(root)...)
	reg.Add(tools.ShellTool(root, tools.ShellOptions{Scrub: secretVars, PassEnv: cfg.Sandbox.PassEnv,
		Sandbox: &a.Sandbox, Caches: caches, StateDir: a.StateDir, Runner: &a.runner}))
	reg.Add(tools.WebTools(tools.WebOptions{UserAgent: cfg.Web.UserAgent, Timeout: cfg.Web.Timeout(), MaxBytes: cfg.Web.MaxBytes,
		RespectRobots: cfg.Web.RespectRobots, Now: opts.Now})...)
	if a.Store != nil {
		reg.Add(tools.LeadTools(a.Store, root)...)
	}

	hookSet, hookWarnings, err := hooksOf(cfg, root, cfg.ProjectTrust().Trusted, secretVars, a.sandboxedHook(caches))
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("hooks: %w", err)
	}
	a.Warnings = append(a.Warnings, hookWarnings...)
	var mcpWarnings []string
	a.MCP, mcpWarnings = mcpOf(cfg, root, cfg.ProjectTrust().Trusted, secretVars, a.sandboxedServer)
	a.Warnings = append(a.Warnings, mcpWarnings...)

	a.Deps = &agent.Deps{
		Store:       a.Store,
		Owner:       a.Owner,
		LLM:         client,
		Tools:       reg,
		Personas:    set,
		Model:       modelOf(a.Model),
		Context:     a.Model.Context,
		Gate:        a.Policy,
		Hooks:       hookSet,
		Mode:        string(cfg.Mode),
		NotifyAfter: time.Duration(cfg.NotifyAfter) * time.Second,
		ProjectDir:  root,
		StateDir:    a.StateDir,
		Redactor:    a.Redactor,
		MaxTurns:    cfg.MaxTurns,
		MaxParallel: cfg.Team.MaxParallel,
		MaxDepth:    depthOf(cfg.Team.MaxDepth),
		Now:         opts.Now,
		KillPoint:   opts.KillPoint,
		Models:      a,
	}
	// The catalogue is the one cache of learned context limits: the agent
	// learns into it, and every later resolution of the model starts from
	// the window it learned.
	a.Deps.Limits = learnedLimits{cat}
	if a.MCP != nil {
		a.Deps.Extra = a.MCP
	}
	wsDir := ""
	if a.Workspace != nil {
		wsDir = a.Workspace.Dir()
	}
	var skillWarnings []string
	a.Skills, skillWarnings = skills.Discover(skills.Roots(root, opts.Home, wsDir))
	a.Warnings = append(a.Warnings, skillWarnings...)
	if a.Skills.Len() > 0 {
		reg.Add(tools.SkillTool(skillBook{a.Skills}))
	}
	var commandWarnings []string
	a.Commands, commandWarnings = commands.Discover(commands.Dirs(root, opts.Home))
	a.Warnings = append(a.Warnings, commandWarnings...)
	a.Deps.Prompts = prompts{ws: a.Workspace, project: root, workDir: opts.WorkDir, now: opts.Now, skills: a.Skills.Prompt(), mcp: a.MCP}
	if a.Workspace != nil {
		a.Deps.Journal = a.Workspace
		if cfg.Memory.LearnFacts {
			a.Deps.Facts = a.Workspace
		}
		reg.Add(tools.WorkspaceTools(a.Workspace)...)
	}
	return a, nil
}

// ToolNames lists every tool Polly can offer a model, whatever is available
// in this run (leads need the store, workspace tools the workspace), so a
// config rule naming any other tool is a mistake.
func ToolNames() []string {
	var all []tools.Tool
	all = append(all, tools.FileTools(string(filepath.Separator))...)
	all = append(all, tools.ShellTool(string(filepath.Separator), tools.ShellOptions{}))
	all = append(all, tools.WebTools(tools.WebOptions{})...)
	all = append(all, tools.LeadTools(nil, string(filepath.Separator))...)
	all = append(all, tools.WorkspaceTools(nil)...)
	names := append(agent.BoundToolNames(), permission.NetworkRule, "skill")
	for _, t := range all {
		names = append(names, t.Name())
	}
	slices.Sort(names)
	return names
}

// secretsOf lists the API keys in use (to redact from anything stored or
// shown to the model) and the variables holding keys (to remove from the
// environment of run_command, so `env` cannot leak them).
func secretsOf(cfg *config.Config, m config.ModelInfo) (secrets, vars []string) {
	vars = []string{"OPENAI_API_KEY"}
	for _, p := range cfg.Providers {
		if p.APIKeyEnv != "" && !slices.Contains(vars, p.APIKeyEnv) {
			vars = append(vars, p.APIKeyEnv)
		}
	}
	if m.APIKey != "" {
		secrets = append(secrets, m.APIKey)
	}
	// Personas may talk to other providers: their keys are secrets too, and
	// so are headers that carry credentials.
	for _, name := range slices.Sorted(maps.Keys(cfg.Providers)) {
		ep := cfg.ProviderEndpoint(name)
		if k := ep.APIKey; k != "" && !slices.Contains(secrets, k) {
			secrets = append(secrets, k)
		}
		for h, v := range ep.Headers {
			if config.SecretName(h) && !slices.Contains(secrets, v) {
				secrets = append(secrets, v)
			}
		}
	}
	return secrets, vars
}

// depthOf maps the config's "0: no sub-agents" to the agent's "negative:
// no delegation" (its 0 means the default).
func depthOf(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// retries maps the config's "0 retries" to the client's "none".
func retries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// Close stops the MCP servers, the background retention pass and model discovery (so no
// cache write outlives the App), releases the store and removes the
// commands' TMPDIR.
func (a *App) Close() error {
	if s := a.current.Load(); s != nil {
		s.End(context.Background(), "other")
	}
	if a.Deps != nil {
		a.Deps.Hooks.Close()
	}
	a.MCP.Close()
	if a.stopGC != nil {
		// A pass on a small store takes milliseconds: let it finish
		// rather than start over next time, but never hold the exit long.
		select {
		case <-a.gcDone:
		case <-time.After(gcGrace):
		}
		a.stopGC()
		<-a.gcDone
	}
	if a.discovery != nil {
		a.stopDiscovery()
		<-a.discovery
	}
	a.runner.Close()
	if a.Store != nil {
		return a.Store.Close()
	}
	return nil
}

// Session opens a new session, or resumes one by id. Approvals "for this
// session" start afresh.
func (a *App) Session(ctx context.Context, emit func(agent.Event), id string) (*agent.Session, error) {
	prev := a.current.Load()
	opts := agent.SessionOptions{ID: id}
	if prev != nil && id == "" {
		opts.Source = "clear" // a new session after one in this process: /clear
	}
	s, err := agent.OpenSession(ctx, a.Deps, emit, opts)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		if id != "" && prev.ID() == id {
			s.Continue(prev) // the same session reopened (a model switch): it goes on
		} else if id != "" {
			prev.End(ctx, "resume")
		} else {
			prev.End(ctx, "clear")
		}
	}
	a.current.Store(s)
	a.Policy.ResetSession()
	if id != "" && emit != nil {
		for _, w := range a.restoreModels(ctx, id) {
			emit(agent.Notice{Header: agent.Header{Session: id}, Level: "warn", Text: w})
		}
	}
	a.gcOnce.Do(func() { a.startDailyGC(s.ID()) })
	a.MCP.OnChange(func(st mcp.Status) { emit(mcpNotice(st)) })
	a.MCP.Start() // in the background; their tools join when ready
	return s, nil
}

// decisionLog is where permission decisions are logged (nil without a store:
// a nil *store.Store in the interface would not be nil).
func (a *App) decisionLog() permission.DecisionLogger {
	if a.Store == nil {
		return nil
	}
	return a.Store
}

func rulesOf(in []config.Rule) []permission.Rule {
	out := make([]permission.Rule, len(in))
	for i, r := range in {
		out[i] = permission.Rule{Tool: r.Tool, Pattern: r.Pattern}
	}
	return out
}

func modelOf(m config.ModelInfo) agent.Model {
	out := agent.Model{Name: m.Name, Provider: m.Provider, ContextWindow: m.ContextWindow, MaxOutput: m.MaxOutput, SafetyMargin: m.SafetyMargin, Tools: m.Tools}
	if m.Price != nil {
		out.InputPrice, out.OutputPrice, out.CachedPrice = m.Price.Input, m.Price.Output, m.Price.CachedInput
	}
	return out
}

// prompts assembles system prompts from the workspace memory (when there
// is one) and the list of skills.
type prompts struct {
	ws      *workspace.Workspace // nil: the bare persona prompt
	project string
	workDir string
	now     func() time.Time
	skills  string       // the skills section; "" when there are none
	mcp     *mcp.Manager // its ready servers' instructions join the prompt
}

func (p prompts) SystemPrompt(per personas.Persona) (string, error) {
	text, _, err := p.SystemPromptParts(per)
	return text, err
}

// SystemPromptParts is agent.PromptParts: the prompt and how many of its
// bytes come from the workspace memory files.
func (p prompts) SystemPromptParts(per personas.Persona) (string, int, error) {
	text, memory := per.SystemPrompt, 0
	if p.ws != nil {
		now := time.Now()
		if p.now != nil {
			now = p.now()
		}
		pr, err := p.ws.SystemPrompt(workspace.PromptInput{PersonaPrompt: per.SystemPrompt, PersonaName: per.Name, ProjectDir: p.project, WorkDir: p.workDir, Now: now})
		if err != nil {
			return "", 0, err
		}
		text, memory = pr.Text, pr.MemoryBytes()
	}
	// Skills are loaded with read_file or skill; a persona with neither
	// could not use the list.
	if p.skills != "" && (per.Tools == nil || per.Allows("read_file")) {
		text += "\n\n" + p.skills
	}
	for _, in := range p.mcp.Instructions() {
		text += fmt.Sprintf("\n\n# How to use the MCP server %s (its own instructions)\n%s", in.Server, in.Text)
	}
	return text, memory, nil
}

// templateNotices brings the workspace's instruction files to the current
// template and says what it could not update: a file the user changed
// keeps their text, and the memory inspector shows and applies the
// template's change.
func templateNotices(ws *workspace.Workspace) []string {
	updates, err := ws.SyncTemplate()
	var out []string
	if err != nil {
		out = append(out, fmt.Sprintf("workspace template: %v", err))
	}
	for _, u := range updates {
		if u.Notice {
			out = append(out, fmt.Sprintf("%s in %s has edits of yours and an older template's text; Polly's template changed: /memory in the TUI shows the change and applies it (a to apply; your edits are kept)", u.File, ws.Dir()))
		}
	}
	return out
}

// skillBook adapts the skill set to the skill tool.
type skillBook struct{ set *skills.Set }

func (b skillBook) LoadSkill(name string) (string, string, []string, error) {
	k, body, files, err := b.set.Load(name)
	return k.Dir, body, files, err
}

// Home returns the user's home directory, or "" when unknown.
// sandboxSetup is what every command of one Polly process shares: the
// writable caches (the build caches and sandbox.writable_roots) and the
// deny-read set (the built-in one and sandbox.deny_read).
func sandboxSetup(cfg *config.Config, home string) sandbox.Setup {
	caches := sandbox.DefaultCaches(home, os.Getenv)
	for _, r := range cfg.Sandbox.WritableRoots {
		if r == "~" || strings.HasPrefix(r, "~/") {
			r = filepath.Join(home, r[1:])
		}
		caches = append(caches, filepath.Clean(r))
	}
	return sandbox.Setup{Home: home, Caches: caches,
		DenyRead: sandbox.DefaultDenyRead(home, os.Getenv, cfg.Sandbox.DenyRead), Polly: sandbox.PollyFiles(home, os.Getenv)}
}

// SandboxReport is `polly sandbox`: for this machine and config, each
// protection and how it is enforced (the helper is started to know),
// then the deny-read paths that exist, the writable caches and the limits.
func SandboxReport(cfg *config.Config) string {
	home := Home()
	st := sandbox.Resolve(sandbox.Settings{Mode: sandbox.Mode(cfg.Sandbox.Mode), Network: cfg.Sandbox.Network})
	r := sandbox.Runner{Setup: sandboxSetup(cfg, home)}
	defer r.Close()
	st = r.Status(st)
	var b strings.Builder
	b.WriteString(st.Report())
	short := func(paths []string) string {
		var out []string
		for _, p := range paths {
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			if rel, err := filepath.Rel(home, p); home != "" && err == nil && !strings.HasPrefix(rel, "..") {
				p = "~/" + rel
			}
			out = append(out, p)
		}
		if len(out) == 0 {
			return "(none here)"
		}
		return strings.Join(out, " ")
	}
	fmt.Fprintf(&b, "\ndeny-read, present here: %s\n", short(r.Setup.DenyRead))
	fmt.Fprintf(&b, "writable caches (workspace-write): %s\n", short(r.Setup.Caches))
	l := r.Setup.Limits
	if l == (sandbox.Limits{}) {
		l = sandbox.DefaultLimits()
	}
	procs := fmt.Sprintf("%d processes of your user", l.Procs)
	if os.Geteuid() == 0 {
		procs = "processes not limited (root)"
	}
	fmt.Fprintf(&b, "limits per command: %s, %d GiB per file, %d s of CPU per process, %d GiB of address space\n",
		procs, l.FileSize>>30, l.CPUSeconds, l.AddressSpace>>30)
	return b.String()
}

func Home() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}

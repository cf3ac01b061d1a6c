// Package app wires Polly's parts together for one process: config →
// store, LLM client, tools, workspace, personas → agent.Deps. Both the
// headless CLI and the TUI start here.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/memory/store"
	"polly/memory/window"
	"polly/personas"
	"polly/tools"
	"polly/tools/permission"
	"polly/tools/sandbox"
	"polly/workspace"
)

// Options open an App.
type Options struct {
	Config     *config.Config
	ProjectDir string           // absolute; tools and .agent/ live here
	Template   fs.FS            // the embedded .agent-template
	Asker      permission.Asker // nil: headless (what would ask is denied)
	LLM        llm.Streamer     // nil: an openai-go client for the configured model
	Now        func() time.Time // nil: time.Now
}

// App is a wired Polly.
type App struct {
	Config     *config.Config
	Model      config.ModelInfo
	ProjectDir string
	StateDir   string
	Store      *store.Store         // nil when .agent/ is unusable
	Workspace  *workspace.Workspace // nil when the workspace is unusable
	Personas   *personas.Set
	Policy     *permission.Policy
	Sandbox    sandbox.Status // what the OS sandbox does for commands here
	Deps       *agent.Deps
	Warnings   []string // problems that did not stop start-up, for the user

	current atomic.Pointer[agent.Session] // the session decisions are logged under
	tmpDir  string                        // the commands' private TMPDIR, removed on Close
	runner  sandbox.Runner                // keeps a sandbox helper ready for the next command
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
	a := &App{Config: cfg, Model: cfg.ActiveModel(), ProjectDir: root, StateDir: filepath.Join(root, ".agent")}
	a.Warnings = append(a.Warnings, cfg.Warnings()...)

	if st, err := store.Open(filepath.Join(a.StateDir, "polly.db")); err != nil {
		a.Warnings = append(a.Warnings, fmt.Sprintf("sessions will not be saved: %v", err))
	} else {
		a.Store = st
	}

	var personaDir string
	if opts.Template != nil {
		ws, err := workspace.Open(cfg.Workspace, opts.Template)
		if err != nil {
			a.Warnings = append(a.Warnings, fmt.Sprintf("workspace memory unavailable: %v", err))
		} else {
			a.Workspace = ws
			personaDir = filepath.Join(ws.Dir(), "personas")
		}
	}
	set, perrs := personas.Load(personaDir)
	for _, e := range perrs {
		a.Warnings = append(a.Warnings, "persona skipped: "+e.Error())
	}
	a.Personas = set

	home := Home()
	a.Sandbox = sandbox.Resolve(sandbox.Settings{Mode: sandbox.Mode(cfg.Sandbox.Mode), Network: cfg.Sandbox.Network})
	if n := a.Sandbox.Notice(); n != "" {
		a.Warnings = append(a.Warnings, n)
	}
	if a.tmpDir, err = os.MkdirTemp("", "polly-cmd-"); err != nil {
		a.Close()
		return nil, fmt.Errorf("private TMPDIR for commands: %w", err)
	}
	caches := sandbox.DefaultCaches(home, os.Getenv)
	for _, r := range cfg.Sandbox.WritableRoots {
		if r == "~" || strings.HasPrefix(r, "~/") {
			r = filepath.Join(home, r[1:])
		}
		caches = append(caches, filepath.Clean(r))
	}

	pol, err := permission.New(permission.Options{
		Mode: permission.Mode(cfg.Mode), Root: root, StateDir: a.StateDir, Asker: opts.Asker,
		Sandbox: a.Sandbox, Network: cfg.Sandbox.Network,
		Rules: permission.Rules{Allow: rulesOf(cfg.Permissions.Allow), Ask: rulesOf(cfg.Permissions.Ask), Deny: rulesOf(cfg.Permissions.Deny)},
		Log:   a.decisionLog(),
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
		client = llm.New(llm.Config{
			BaseURL:     a.Model.BaseURL,
			APIKey:      a.Model.APIKey,
			MaxRetries:  retries(cfg.LLM.MaxRetries),
			IdleTimeout: cfg.LLM.IdleTimeout(),
			CallTimeout: cfg.LLM.CallTimeout(),
			Headers:     a.Model.Headers,
		})
	}

	secrets, secretVars := secretsOf(cfg, a.Model)
	reg := tools.NewRegistry(tools.FileTools(root)...)
	reg.Add(tools.ShellTool(root, tools.ShellOptions{Scrub: secretVars, PassEnv: cfg.Sandbox.PassEnv,
		Sandbox: &a.Sandbox, Caches: caches, TmpDir: a.tmpDir, StateDir: a.StateDir, Runner: &a.runner}))
	reg.Add(tools.WebTools(tools.WebOptions{UserAgent: cfg.Web.UserAgent, Timeout: cfg.Web.Timeout(), MaxBytes: cfg.Web.MaxBytes,
		RespectRobots: cfg.Web.RespectRobots, Now: opts.Now})...)
	if a.Store != nil {
		reg.Add(tools.LeadTools(a.Store, root)...)
	}

	a.Deps = &agent.Deps{
		Store:       a.Store,
		LLM:         client,
		Tools:       reg,
		Personas:    set,
		Model:       modelOf(a.Model),
		Context:     settingsOf(a.Model.Context),
		Gate:        a.Policy,
		ProjectDir:  root,
		StateDir:    a.StateDir,
		Secrets:     secrets,
		MaxTurns:    cfg.MaxTurns,
		MaxParallel: cfg.Team.MaxParallel,
		MaxDepth:    depthOf(cfg.Team.MaxDepth),
		Now:         opts.Now,
	}
	if a.Workspace != nil {
		a.Deps.Prompts = prompts{ws: a.Workspace, project: root, now: opts.Now}
		a.Deps.Journal = a.Workspace
		reg.Add(tools.WorkspaceTools(a.Workspace)...)
	}
	return a, nil
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

// Close releases the store and removes the commands' TMPDIR.
func (a *App) Close() error {
	a.runner.Close()
	if a.tmpDir != "" {
		os.RemoveAll(a.tmpDir)
	}
	if a.Store != nil {
		return a.Store.Close()
	}
	return nil
}

// Session opens a new session, or resumes one by id. Approvals "for this
// session" start afresh.
func (a *App) Session(ctx context.Context, emit func(agent.Event), id string) (*agent.Session, error) {
	s, err := agent.OpenSession(ctx, a.Deps, emit, agent.SessionOptions{ID: id})
	if err != nil {
		return nil, err
	}
	a.current.Store(s)
	a.Policy.ResetSession()
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

// LatestSessionID returns the newest root session, for --continue.
func (a *App) LatestSessionID(ctx context.Context) (string, error) {
	if a.Store == nil {
		return "", errors.New("no session store (.agent/polly.db could not be opened)")
	}
	s, err := a.Store.LatestSession(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return "", errors.New("no earlier session in this directory to continue")
	}
	if err != nil {
		return "", err
	}
	return s.ID, nil
}

func modelOf(m config.ModelInfo) agent.Model {
	out := agent.Model{Name: m.Name, ContextWindow: m.ContextWindow}
	if m.Price != nil {
		out.InputPrice, out.OutputPrice, out.CachedPrice = m.Price.Input, m.Price.Output, m.Price.CachedInput
	}
	return out
}

func settingsOf(c config.ContextSettings) window.Settings {
	return window.Settings{
		AnchorEvery:      c.AnchorEvery,
		CheckpointEvery:  c.CheckpointEvery,
		OffloadChars:     c.OffloadChars,
		OffloadCharsRead: c.OffloadCharsRead,
		PreviewHead:      c.PreviewHeadChars,
		PreviewTail:      c.PreviewTailChars,
		StaleAfter:       c.StaleAfterMessages,
		SummarizeAt:      c.SummarizeAtTokens,
		SummarizeRatio:   c.SummarizeWindowRatio,
		KeepRecent:       c.KeepRecentMessages,
		HardLimit:        c.HardLimitTokens,
		HardKeep:         c.HardKeepMessages,
		RecentActions:    c.RecentActions,
		RecoveryKeep:     c.ContextErrorKeepOutputs,
		RecoveryCut:      c.ContextErrorCutChars,
	}
}

// prompts assembles system prompts from the workspace memory.
type prompts struct {
	ws      *workspace.Workspace
	project string
	now     func() time.Time
}

func (p prompts) SystemPrompt(per personas.Persona) (string, error) {
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	pr, err := p.ws.SystemPrompt(workspace.PromptInput{PersonaPrompt: per.SystemPrompt, PersonaName: per.Name, ProjectDir: p.project, Now: now})
	if err != nil {
		return "", err
	}
	return pr.Text, nil
}

// Home returns the user's home directory, or "" when unknown.
func Home() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}

// Package cli is Polly's command line: flags and subcommands, the headless
// run (`polly -p`), `polly sessions`, `polly init`, `polly config`, and one
// map from errors to exit codes (0 done, 1 the task or provider failed,
// 2 bad usage or config). The TUI is started through a function the main
// package injects, so nothing here imports the TUI.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/term"

	"polly/agent/app"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/owner"
	"polly/memory/store"
	"polly/workspace"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// TUIStart is what the TUI needs to start.
type TUIStart struct {
	App      app.Options  // Asker left nil: the TUI sets its own
	ResumeID string       // a session to resume ("" for a new one)
	Persona  string       // persona to start with
	ModelErr error        // non-nil when no model is configured: the TUI still opens and says how to set one
	Prompt   string       // sent as the first message once the TUI is up (polly "PROMPT")
	Log      *slog.Logger // --debug: the .agent/polly.log logger (nil: no log)

	// The terminal and the environment the TUI runs in (the caller's, not
	// the process's: tests and embedders pass their own).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string // NO_COLOR, VISUAL, EDITOR
	Environ        []string            // for the terminal's capabilities (TERM, COLORTERM…); nil: the process's
}

// Env is everything the command line touches, injected so tests can run
// Main in-process.
type Env struct {
	Args     []string // without the program name
	Stdin    io.Reader
	Stdout   io.Writer
	Stderr   io.Writer
	Getenv   func(string) string
	Environ  []string // the whole environment, for the TUI's terminal detection (nil: the process's)
	Dir      string   // the project root (Main finds it from the working directory: the git root…)
	WorkDir  string   // where Polly was started (Main sets it from Dir): instruction files are read down to here
	Home     string
	Template fs.FS // the embedded .agent-template
	Version  string
	RunTUI   func(ctx context.Context, s TUIStart) error // nil: print usage instead
	LLM      llm.Streamer                                // tests: use this instead of a real client
	Signals  bool                                        // cancel on SIGINT/SIGTERM (main sets it)
	// IsTerminal reports whether Stdin or Stdout is a terminal; nil checks
	// the real files. The TUI is only started on a terminal.
	IsTerminal func(f any) bool
}

// workDir is where Polly was started (the project root when unknown).
func (e Env) workDir() string {
	if e.WorkDir != "" {
		return e.WorkDir
	}
	return e.Dir
}

// isTerminal is the real check: an *os.File that is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(file.Fd())
}

// usageError is bad command-line usage: print the message and the usage, exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// exitError carries an exit code for an error already reported.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// options are the parsed command line.
type options struct {
	prompt       string
	promptSet    bool
	continueLast bool
	session      string
	format       string
	persona      string
	showVersion  bool
	help         bool
	configJSON   bool
	trust        bool
	adopt        bool // polly sessions --adopt [ID]
	olderThan    *int // polly gc --older-than DAYS
	dryRun       bool // polly gc --dry-run
	undo         undoOptions
	debug        bool
	flags        config.Flags
	args         []string // positional arguments
}

func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("polly", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("p", "run `PROMPT` headless and print the answer (\"-\" reads it from stdin)", func(s string) error {
		o.prompt, o.promptSet = s, true
		return nil
	})
	fs.Func("print", "same as -p", func(s string) error { o.prompt, o.promptSet = s, true; return nil })
	strFlag := func(name, usage string, dst **string) {
		fs.Func(name, usage, func(s string) error { v := s; *dst = &v; return nil })
	}
	strFlag("model", "model `NAME` (provider/model selects a provider)", &o.flags.Model)
	strFlag("base-url", "OpenAI-compatible endpoint `URL` (default $OPENAI_BASE_URL, else OpenAI)", &o.flags.BaseURL)
	strFlag("api-key", "API `KEY` (default $OPENAI_API_KEY)", &o.flags.APIKey)
	strFlag("workspace", "workspace memory `DIR` (default $POLLY_WORKSPACE, else ~/.agent/workspace)", &o.flags.Workspace)
	strFlag("mode", "permission `MODE`: ask, auto-edit or yolo", &o.flags.Mode)
	strFlag("sandbox", "OS sandbox for commands `MODE`: auto (default), on (refuse without it) or off", &o.flags.Sandbox)
	fs.Func("persona", "talk to persona `ID` or name (default, web_scraper, coder, b2b_leadgen …)", func(s string) error {
		o.persona = s
		v := s
		o.flags.Persona = &v
		return nil
	})
	fs.BoolFunc("yolo", "allow every tool call without asking (same as --mode yolo)", func(string) error { o.flags.Yolo = true; return nil })
	fs.BoolVar(&o.continueLast, "continue", false, "resume the latest session in this directory")
	fs.BoolVar(&o.continueLast, "c", false, "same as --continue")
	fs.StringVar(&o.session, "session", "", "resume session `ID` (polly sessions lists them)")
	fs.StringVar(&o.format, "output-format", FormatText, "headless output `FORMAT`: text, json or stream-json")
	fs.Func("max-turns", "stop after `N` model turns (default 0: no cap)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("expected a whole number, got %q", s)
		}
		o.flags.MaxTurns = &n
		return nil
	})
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.BoolVar(&o.help, "help", false, "show this help")
	fs.BoolVar(&o.help, "h", false, "show this help")
	fs.BoolVar(&o.configJSON, "json", false, "polly config: print JSON")
	fs.BoolVar(&o.adopt, "adopt", false, "polly sessions: take over sessions Polly did not make here (a copied, cloned or moved store), after showing what they are")
	fs.BoolVar(&o.trust, "trust", false, "trust this project's .agent/config.json (providers, mode, allow rules…) as it is now, then run")
	fs.Func("older-than", "polly gc: remove sessions idle for more than `DAYS` days (default: retention.days, 90)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("expected a whole number of days, 0 or more, got %q", s)
		}
		o.olderThan = &n
		return nil
	})
	fs.BoolVar(&o.dryRun, "dry-run", false, "polly gc: show what would be removed, change nothing")
	undoFlags(fs, &o.undo)
	fs.BoolVar(&o.debug, "debug", false, "write a debug log (every agent event) to .agent/polly.log")
	return fs
}

// parse reads flags anywhere on the line (Go's flag package stops at the
// first positional argument; users put flags after the prompt too).
func parse(args []string, o *options, stderr io.Writer) error {
	fs := newFlagSet(o, stderr)
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				o.help = true
				return nil
			}
			return usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return nil
		}
		if rest[0] == "--" {
			o.args = append(o.args, rest[1:]...)
			return nil
		}
		o.args = append(o.args, rest[0])
		args = rest[1:]
	}
}

const usageHead = `Polly — a terminal coding agent with a team (Polly, scraper, coder, leadgen).

Usage:
  polly [flags]                 open the TUI in this directory
  polly -p "PROMPT" [flags]     run headless: answer on stdout, progress on stderr
  polly run "PROMPT" [flags]    same as -p
  polly sessions                list stored sessions (resume with --session ID or --continue)
  polly sessions --adopt [ID]   take over sessions Polly did not make here (copied, cloned, moved),
                                after showing what they are
  polly inspect [SESSION] [CALL] [--json]
                                what the model received on a call: the request rebuilt from its record,
                                tokens by part (system, memory files, tools, summary, history, task block);
                                without CALL the session's calls; --json the request body as sent
  polly init                    create the workspace memory (~/.agent/workspace)
  polly config [--json]         print the effective configuration and where each value came from
  polly trust [DIR]             show the settings of DIR/.agent/config.json that need trust, and trust them
  polly gc [--older-than DAYS] [--dry-run]
                                remove sessions idle longer than DAYS (default retention.days) and tidy
                                ERRORS.md and MEMORY.md; prints what went and the bytes freed
  polly models                  list the models of every provider: window, price, where they come from
  polly skills                  list the Agent Skills found (SKILL.md folders) and broken ones
  polly sandbox                 how this machine enforces each protection of the command sandbox
  polly mcp list                start the configured MCP servers and list their state and tools
  polly leads list [LIST]       show saved leads (or the lists with counts)
  polly leads export LIST [PATH]  write a lead list as CSV (stdout when no path)
  polly undo [--session ID] [--turns N]   take back the file changes of the last N turns (default 1)
  polly redo [--session ID]     take back the last undo or rewind
  polly rewind --session ID --to TURN [--conversation]  files back to how they were after TURN;
                                --conversation also forks the conversation there
  polly version                 print the version

Exit codes: 0 done, 1 the task or the provider failed, 2 bad usage or configuration.

Flags:
`

// printUsage lists the flags GNU-style (--name), one per line.
func printUsage(w io.Writer) {
	var o options
	fs := newFlagSet(&o, w)
	fmt.Fprint(w, usageHead)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "print" || len(f.Name) == 1 && f.Name != "p" {
			return // aliases: -c, -h, --print
		}
		arg, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		name := dash + f.Name
		if arg != "" {
			name += " " + arg
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
	fmt.Fprint(w, "\nAliases: -c = --continue, -h = --help, --print = -p. Environment: OPENAI_API_KEY, OPENAI_BASE_URL,\nPOLLY_MODEL, POLLY_PROVIDER, POLLY_WORKSPACE, POLLY_MODE, POLLY_CONFIG. See README.md.\n")
}

// Main runs the command line and returns the exit code.
func Main(env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	// Started in src/, Polly works on the whole project: its .agent/,
	// .mcp.json, skills and settings are the root's.
	env.WorkDir = env.Dir
	env.Dir = workspace.ProjectRoot(env.Dir, env.Home)
	ctx := context.Background()
	if env.Signals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	err := run(ctx, env)
	if err == nil {
		return ExitOK
	}
	env.Stderr = onTerminal(env, env.Stderr) // errors can quote a provider or a command
	var ue *usageError
	var ce *config.Error
	var ee *exitError
	switch {
	case badInput(err) != nil:
		fmt.Fprintf(env.Stderr, "polly: %v\n", badInput(err))
		return ExitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "polly: %s\n\n", ue.msg)
		printUsage(env.Stderr)
		return ExitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(env.Stderr, "polly: bad configuration: %v\n", ce)
		return ExitUsage
	case errors.As(err, &ee):
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(env.Stderr, "polly: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(env.Stderr, "polly: %v\n", err)
	return ExitFailed
}

// badInput is the error inside err that the user must act on and that
// counts as bad input (exit 2, printed as it is): no such session, a
// session Polly did not make here, a corrupt install id, no model.
func badInput(err error) error {
	var ns *app.NoSessionError
	var fe *owner.ForeignError
	var co *owner.CorruptError
	var me *config.MissingModelError
	switch {
	case errors.As(err, &ns):
		return ns
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &co):
		return co
	case errors.As(err, &me):
		return me
	}
	return nil
}

func run(ctx context.Context, env Env) error {
	var o options
	if err := parse(env.Args, &o, env.Stderr); err != nil {
		return err
	}
	if o.help {
		printUsage(env.Stdout)
		return nil
	}
	if o.showVersion {
		fmt.Fprintf(env.Stdout, "polly %s\n", version(env))
		return nil
	}
	switch o.format {
	case FormatText, FormatJSON, FormatStreamJSON:
	default:
		return usagef("--output-format must be text, json or stream-json, got %q", o.format)
	}
	if o.continueLast && o.session != "" {
		return usagef("use either --continue or --session, not both")
	}

	cmd := ""
	if len(o.args) > 0 && !o.promptSet {
		cmd = o.args[0]
	}
	switch cmd {
	case "version":
		fmt.Fprintf(env.Stdout, "polly %s\n", version(env))
		return nil
	case "help":
		printUsage(env.Stdout)
		return nil
	case "run":
		if len(o.args) < 2 {
			return usagef("polly run needs a prompt: polly run \"fix the failing test\"")
		}
		o.prompt, o.promptSet = strings.Join(o.args[1:], " "), true
		o.args = nil
	case "leads": // leadsCommand checks its own arguments
	case "trust":
		if len(o.args) > 2 {
			return usagef("polly trust takes at most one directory (got %q)", strings.Join(o.args[1:], " "))
		}
	case "undo", "redo", "rewind":
		if len(o.args) > 1 {
			return usagef("polly %s takes flags only (got %q)", cmd, strings.Join(o.args[1:], " "))
		}
	case "mcp": // mcpCommand checks its own arguments
	case "inspect": // inspectCommand checks its own arguments
	case "sessions":
		if len(o.args) > 2 || len(o.args) == 2 && !o.adopt {
			return usagef("polly sessions takes no arguments, or one session id after --adopt (got %q)", strings.Join(o.args[1:], " "))
		}
	case "init", "config", "gc", "models", "skills", "sandbox":
		if len(o.args) > 1 {
			return usagef("polly %s takes no arguments (got %q)", cmd, strings.Join(o.args[1:], " "))
		}
	case "":
		if len(o.args) > 0 { // -p was given: the prompt is its value
			return usagef("unexpected argument %q after -p (quote the whole prompt: polly -p %q)", o.args[0], o.prompt+" "+strings.Join(o.args, " "))
		}
	default:
		// polly "fix the failing test": the TUI opens and sends it. One
		// word alone is more likely a mistyped command than a prompt.
		if len(o.args) == 1 && !strings.ContainsAny(o.args[0], " \t\n") {
			return usagef("unknown command %q (a one-word prompt needs -p: polly -p %q; longer prompts open the TUI: polly \"fix the failing test\")", cmd, cmd)
		}
		cmd = ""
	}

	if cmd == "trust" {
		return trustCommand(env, o)
	}
	if o.adopt && cmd != "sessions" {
		return usagef("--adopt belongs to polly sessions")
	}
	if (o.olderThan != nil || o.dryRun) && cmd != "gc" {
		return usagef("--older-than and --dry-run belong to polly gc")
	}
	cfg, err := config.Load(config.LoadOptions{ProjectDir: env.Dir, Home: env.Home, Getenv: env.Getenv, Flags: o.flags, Version: version(env)})
	if err != nil {
		return err
	}
	if o.trust && len(cfg.Untrusted()) > 0 {
		if cfg, err = trustAndReload(env.Stderr, cfg); err != nil {
			return err
		}
	}
	if err := cfg.CheckRuleTools(app.ToolNames()); err != nil {
		return err
	}
	var log *slog.Logger
	if o.debug && (cmd == "" || o.promptSet) {
		l, closeLog, err := openDebugLog(env.Dir)
		if err != nil {
			return err
		}
		defer closeLog()
		log = l
	}
	switch cmd {
	case "config":
		app.DiscoverModels(ctx, cfg, app.HeadlessDiscoveryWait)
		return printConfig(ctx, env, cfg, o.configJSON)
	case "models":
		return listModels(ctx, env, cfg)
	case "init":
		return initWorkspace(env, cfg)
	case "inspect":
		return inspectCommand(ctx, env, cfg, o)
	case "sessions":
		if o.adopt {
			return adoptSessions(ctx, env, cfg, o.args[1:])
		}
		return listSessions(ctx, env, cfg)
	case "gc":
		return gcCommand(ctx, env, cfg, o)
	case "leads":
		return leadsCommand(ctx, env, cfg, o.args[1:])
	case "undo", "redo", "rewind":
		return undoCommand(ctx, env, cfg, cmd, o)
	case "skills":
		return listSkills(ctx, env, cfg)
	case "sandbox":
		fmt.Fprint(env.Stdout, app.SandboxReport(cfg))
		return nil
	case "mcp":
		return mcpCommand(ctx, env, cfg, o.args[1:])
	}

	if o.promptSet {
		if o.prompt == "-" {
			b, err := io.ReadAll(io.LimitReader(env.Stdin, 1<<20))
			if err != nil {
				return fmt.Errorf("read prompt from stdin: %w", err)
			}
			o.prompt = string(b)
		}
		if strings.TrimSpace(o.prompt) == "" {
			return usagef("the prompt is empty")
		}
		return headless(ctx, env, cfg, o, log)
	}
	if env.RunTUI == nil {
		return usagef("no prompt given (the TUI is not available in this build)")
	}
	isTerm := env.IsTerminal
	if isTerm == nil {
		isTerm = isTerminal
	}
	if !isTerm(env.Stdin) || !isTerm(env.Stdout) {
		return &exitError{code: ExitUsage, err: errors.New(`the TUI needs a terminal on stdin and stdout; without one, run headless: polly -p "PROMPT" (or echo PROMPT | polly -p -)`)}
	}
	start := TUIStart{App: app.Options{Config: cfg, ProjectDir: env.Dir, WorkDir: env.WorkDir, Template: env.Template, LLM: env.LLM, Home: env.Home, Log: log}, Persona: cfg.Persona, ModelErr: cfg.CheckModel(),
		Prompt: strings.Join(o.args, " "), Log: log,
		Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr, Getenv: env.Getenv, Environ: env.Environ}
	if o.session != "" {
		start.ResumeID = o.session
	}
	if o.continueLast {
		start.ResumeID = "latest"
	}
	return env.RunTUI(ctx, start)
}

func version(env Env) string {
	if env.Version == "" {
		return "dev"
	}
	return env.Version
}

func printConfig(ctx context.Context, env Env, cfg *config.Config, asJSON bool) error {
	if f, ok := lastFixedCost(ctx, env.Dir); ok {
		cfg.SetFixedCost(f)
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(cfg.Values())
	}
	return cfg.Print(env.Stdout)
}

// lastFixedCost is the fixed cost (system prompt, tool schemas, task
// block) the agent measured on the latest model call of this project, from
// its request record: the summarization threshold depends on it, and
// `polly config` shows the agent's own number. false when there is none.
func lastFixedCost(ctx context.Context, dir string) (config.FixedCost, bool) {
	path := filepath.Join(dir, ".agent", "polly.db")
	if _, err := os.Stat(path); err != nil {
		return config.FixedCost{}, false
	}
	st, err := store.Open(path)
	if err != nil {
		return config.FixedCost{}, false
	}
	defer st.Close()
	s, err := st.LatestSession(ctx)
	if err != nil {
		return config.FixedCost{}, false
	}
	calls, err := st.Calls(ctx, s.ID)
	if err != nil {
		return config.FixedCost{}, false
	}
	for i := len(calls) - 1; i >= 0; i-- {
		if r := calls[i].Record; r != nil && r.Kind == "main" && r.Fixed > 0 {
			return config.FixedCost{Tokens: r.Fixed, Model: r.Model, From: fmt.Sprintf("measured on call %d of session %s", calls[i].Number, s.ID)}, true
		}
	}
	return config.FixedCost{}, false
}

// listModels prints the table the TUI's /model picker shows: configured
// and discovered models per provider, with window and price.
func listModels(ctx context.Context, env Env, cfg *config.Config) error {
	cat := app.DiscoverModels(ctx, cfg, app.HeadlessDiscoveryWait)
	active := cfg.ActiveModel()
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  MODEL (* the one in use)\tWINDOW\tPRICE IN/OUT PER 1M\tLISTED BY")
	for _, r := range app.ModelRows(cfg, cat) {
		mark := " "
		if r.Info.Provider == active.Provider && r.Info.Name == active.Name {
			mark = "*"
		}
		var by []string
		if r.Configured {
			by = append(by, "config")
		}
		if r.Discovered {
			by = append(by, "provider")
		}
		if r.Embedding {
			by = append(by, "(embedding: not for chat)")
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\n", mark, r.Ref, app.WindowText(r.Info), app.PriceText(r.Info), strings.Join(by, "+"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, "\n* the default model. Switch with --model PROVIDER/MODEL or /model in the TUI.")
	return nil
}

func initWorkspace(env Env, cfg *config.Config) error {
	if env.Template == nil {
		return errors.New("this build has no workspace template")
	}
	created, err := workspace.Init(env.Template, cfg.Workspace)
	if err != nil {
		return fmt.Errorf("init workspace: %w", err)
	}
	if note := app.IgnoreStateDir(env.Dir); note != "" {
		fmt.Fprintf(env.Stdout, "polly: %s\n", note)
	}
	if len(created) == 0 {
		fmt.Fprintf(env.Stdout, "workspace %s is complete; nothing to create\n", cfg.Workspace)
		return nil
	}
	fmt.Fprintf(env.Stdout, "workspace %s:\n", cfg.Workspace)
	for _, f := range created {
		fmt.Fprintf(env.Stdout, "  created %s\n", f)
	}
	return nil
}

// gcCommand runs `polly gc [--older-than DAYS] [--dry-run]`: the retention
// pass of agent/app on this project's .agent/ and the workspace memory.
func gcCommand(ctx context.Context, env Env, cfg *config.Config, o options) error {
	days := cfg.Retention.Days
	if o.olderThan != nil {
		days = *o.olderThan
	}
	stateDir := filepath.Join(env.Dir, ".agent")
	dbPath := filepath.Join(stateDir, "polly.db")
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		// Do not create .agent/ just to say there is nothing.
		fmt.Fprintf(env.Stdout, "no sessions in %s (%s does not exist); nothing to remove\n", env.Dir, dbPath)
		return nil
	}
	st, err := store.Open(dbPath)
	if err != nil {
		return err
	}
	defer st.Close()
	var ws *workspace.Workspace
	if fi, err := os.Stat(cfg.Workspace); err == nil && fi.IsDir() {
		if ws, err = workspace.Open(cfg.Workspace, nil); err != nil {
			fmt.Fprintf(env.Stderr, "polly: workspace %s not tidied: %v\n", cfg.Workspace, err)
			ws = nil
		}
	}
	res, err := app.RunGC(ctx, st, stateDir, ws, app.GCOptions{OlderThan: time.Duration(days) * 24 * time.Hour, DryRun: o.dryRun})
	for _, l := range res.Lines(o.dryRun) {
		fmt.Fprintln(env.Stdout, l)
	}
	return err
}

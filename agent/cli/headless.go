package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"polly/agent"
	"polly/agent/app"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/termsafe"
	"polly/memory/chat"
)

// Result is the final JSON object of --output-format json and the last
// line of stream-json.
type Result struct {
	Type       string     `json:"type"` // "result"
	Session    string     `json:"session"`
	Persona    string     `json:"persona"`
	Reason     string     `json:"reason"` // completed, max_turns, loop, cancelled, error
	IsError    bool       `json:"is_error"`
	Result     string     `json:"result"` // the final answer
	Error      string     `json:"error,omitempty"`
	ErrorKind  string     `json:"error_kind,omitempty"`
	Turns      int        `json:"turns"`
	ToolCalls  int        `json:"tool_calls"`
	Usage      chat.Usage `json:"usage"`
	Cost       *float64   `json:"cost_usd"` // null when the model's prices are unknown: no guess
	DurationMs int64      `json:"duration_ms"`
}

// headless runs one prompt without the TUI.
func headless(ctx context.Context, env Env, cfg *config.Config, o options, log *slog.Logger) error {
	if env.LLM == nil {
		if err := cfg.CheckModel(); err != nil {
			return err
		}
	}
	a, err := app.Open(ctx, app.Options{Config: cfg, ProjectDir: env.Dir, WorkDir: env.WorkDir, Template: env.Template, LLM: env.LLM, Home: env.Home,
		DiscoveryWait: app.HeadlessDiscoveryWait, KillPoint: killPoint(env), Log: log})
	if err != nil {
		return err
	}
	defer a.Close()
	env.Stdout, env.Stderr = onTerminal(env, env.Stdout), onTerminal(env, env.Stderr)
	p := newPrinter(o.format, env.Stdout, env.Stderr)
	for _, w := range a.Warnings {
		fmt.Fprintf(env.Stderr, "polly: warning: %s\n", w)
	}

	resume := o.session
	if o.continueLast {
		resume = "latest"
	}
	if resume != "" {
		id, err := a.FindSession(ctx, resume)
		var ns *app.NoSessionError
		if errors.As(err, &ns) {
			return err // bad usage: exit 2
		}
		if err != nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("open session: %w", err)}
		}
		resume = id
	}
	sess, err := a.Session(ctx, LogEvents(log, p.Event), resume)
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	// A headless run has one prompt: give the MCP servers their startup
	// time so their tools are in the first request.
	a.MCP.Wait(ctx)
	for _, w := range mcpProblems(a) {
		fmt.Fprintf(env.Stderr, "polly: warning: %s\n", w)
	}
	persona := cfg.Persona
	if o.persona != "" {
		persona = o.persona
	}
	if _, ok := a.Personas.Find(persona); !ok {
		return usagef("unknown persona %q (known: %s)", persona, strings.Join(a.Personas.IDs(), ", "))
	}

	// A custom command (polly -p "/review 42") is sent as its prompt.
	prompt := o.prompt
	run, isCommand, err := a.Command(prompt)
	if err != nil {
		return &exitError{code: ExitUsage, err: err} // nothing sent, nothing stored
	}
	if isCommand && run.Fetch != nil { // an MCP server's prompt
		if run.Prompt, err = run.Fetch(ctx); err != nil {
			return &exitError{code: ExitUsage, err: err} // nothing sent, nothing stored
		}
	}
	if isCommand {
		prompt = run.Prompt
		ctx = agent.WithGrants(ctx, run.Grants)
		if run.Persona != "" && o.persona == "" {
			persona = run.Persona
		}
		for _, n := range run.Notes {
			fmt.Fprintf(env.Stderr, "polly: %s\n", n)
		}
	}

	start := time.Now()
	out, runErr := sess.Send(ctx, persona, prompt)
	res := Result{Type: "result", Session: sess.ID(), Persona: persona, Reason: out.Reason, Result: out.Final,
		Turns: out.Turns, ToolCalls: out.ToolCalls, Usage: out.Usage, DurationMs: time.Since(start).Milliseconds()}
	if m, err := a.PersonaModel(persona); err == nil && m.Price != nil {
		res.Cost = &out.Cost
	}
	if runErr != nil {
		res.IsError = true
		res.Error = runErr.Error()
		if k := llm.KindOf(runErr); k != llm.KindUnknown {
			res.ErrorKind = k.String()
		}
	}

	switch o.format {
	case FormatJSON, FormatStreamJSON:
		b, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
		p.mu.Lock()
		p.write(env.Stdout, string(b)+"\n")
		p.mu.Unlock()
	default:
		if out.Final != "" {
			p.mu.Lock()
			p.write(env.Stdout, strings.TrimRight(out.Final, "\n")+"\n")
			p.mu.Unlock()
		}
		if sess.ID() != "" {
			fmt.Fprintf(env.Stderr, "polly: session %s (resume with --session %s or --continue)\n", sess.ID(), sess.ID())
		}
	}
	if runErr == nil {
		return nil
	}
	// The error event already told a text-mode user what happened; say it
	// once more only for the other formats, on stderr, or when the run
	// never started (a persona refused before its first turn).
	msg := runErr
	if o.format == FormatText && out.Turns > 0 && !errors.Is(runErr, context.Canceled) && !errors.Is(runErr, agent.ErrMaxTurns) && !errors.Is(runErr, agent.ErrLoop) {
		msg = errors.New("")
	}
	if errors.Is(runErr, context.Canceled) {
		msg = errors.New("cancelled; the session is saved (resume with --continue)")
	}
	return &exitError{code: ExitFailed, err: msg}
}

// onTerminal filters what goes to w when w is a terminal: the answer, tool
// previews and errors keep their colours but no other escape sequence
// (termsafe), so a model or a command cannot set the clipboard, rewrite the
// screen or talk to the terminal through Polly's output.
func onTerminal(env Env, w io.Writer) io.Writer {
	isTerm := env.IsTerminal
	if isTerm == nil {
		isTerm = isTerminal
	}
	if isTerm(w) {
		return termsafe.Writer(w)
	}
	return w
}

// killPoint is for crash tests: with POLLY_KILL_AT=<point> the process
// kills itself (SIGKILL, as kill -9 would) when the summary swap reaches
// that point. nil otherwise.
func killPoint(env Env) func(string) {
	at := env.Getenv("POLLY_KILL_AT")
	if at == "" {
		return nil
	}
	return func(point string) {
		if point == at {
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Kill()
			}
		}
	}
}

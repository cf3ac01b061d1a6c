// Package hooks runs the user's hook commands at points of the agent loop,
// in the Claude Code schema, so an existing Claude Code hooks block works
// unchanged: the event arrives as JSON on stdin; exit 0 goes on (stdout is
// context for UserPromptSubmit and SessionStart), exit 2 blocks with
// stderr as the reason, any other exit is a warning; JSON on stdout
// ({"decision":"block"}, hookSpecificOutput.permissionDecision) is
// honoured. Hooks run with a timeout and are killed with their process
// group.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The events, named as Claude Code names them.
const (
	PreToolUse       = "PreToolUse"
	PostToolUse      = "PostToolUse"
	UserPromptSubmit = "UserPromptSubmit"
	Stop             = "Stop"
	SubagentStop     = "SubagentStop"
	SessionStart     = "SessionStart"
	PreCompact       = "PreCompact"
)

// DefaultTimeout is a hook's timeout when its entry gives none (Claude
// Code's default).
const DefaultTimeout = 60 * time.Second

// maxOutput bounds what is kept of a hook's stdout and stderr.
const maxOutput = 64 << 10

// Hook is one configured command.
type Hook struct {
	Event   string
	Matcher string // regular expression over tool names (or the SessionStart source); "" and "*" match all
	Command string
	Timeout time.Duration // 0: DefaultTimeout
	Source  string        // where it was configured, for messages
	Network bool          // its config lets it use the network (in the sandbox)
}

// Runner runs one hook command to its end: bash -c command in dir with
// env, stdin fed to it, its stdout and stderr copied out, and it and
// everything it started killed when ctx ends. It returns the exit code
// (128+n for death by signal n), or an error when the command could not
// run. The app runs hooks in the command sandbox (workspace-write, no
// network unless the hook's config grants it).
type Runner func(ctx context.Context, h Hook, dir string, env []string, stdin []byte, stdout, stderr io.Writer) (int, error)

// Bash is the default Runner: bash -c COMMAND in dir, unsandboxed, in its
// own process group (killed whole at the timeout) and killed with Polly.
func Bash(ctx context.Context, h Hook, dir string, env []string, stdin []byte, stdout, stderr io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", h.Command)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = procAttr()
	cmd.Cancel = func() error {
		// The whole group: a hook that started `sleep` in the background
		// must not outlive its timeout.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = time.Second
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), stdout, stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	return -1, err
}

// Options configure a Set.
type Options struct {
	Dir string   // the project root: the hooks' working directory and "cwd"
	Env []string // the hooks' environment (nil: Polly's); CLAUDE_PROJECT_DIR is added
	Run Runner   // nil: Bash
}

// Set is the compiled hooks of one process. It is safe for concurrent use.
type Set struct {
	opts  Options
	hooks []compiled
}

type compiled struct {
	Hook
	re *regexp.Regexp // nil matches everything
}

// New compiles hooks. A matcher that is not a valid regular expression is
// an error (the config checks them first, so this is a programming error
// or a hand-built list).
func New(list []Hook, opts Options) (*Set, error) {
	if opts.Run == nil {
		opts.Run = Bash
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	opts.Env = append(slices.Clone(opts.Env), "CLAUDE_PROJECT_DIR="+opts.Dir, "POLLY_PROJECT_DIR="+opts.Dir)
	s := &Set{opts: opts}
	for _, h := range list {
		c := compiled{Hook: h}
		if m := strings.TrimSpace(h.Matcher); m != "" && m != "*" {
			re, err := regexp.Compile("^(?:" + m + ")$")
			if err != nil {
				return nil, fmt.Errorf("hook %s matcher %q (%s): %w", h.Event, h.Matcher, h.Source, err)
			}
			c.re = re
		}
		s.hooks = append(s.hooks, c)
	}
	return s, nil
}

// Len is the number of hooks.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.hooks)
}

// Has reports whether any hook is configured for event.
func (s *Set) Has(event string) bool {
	if s == nil {
		return false
	}
	for _, h := range s.hooks {
		if h.Event == event {
			return true
		}
	}
	return false
}

// claudeNames are the Claude Code names of Polly's tools, so a matcher
// written for Claude Code ("Bash", "Edit|Write") matches here too.
var claudeNames = map[string][]string{
	"run_command": {"Bash"},
	"read_file":   {"Read"},
	"write_file":  {"Write"},
	"edit_file":   {"Edit", "MultiEdit"},
	"glob":        {"Glob"},
	"grep":        {"Grep"},
	"list_dir":    {"LS"},
	"fetch_url":   {"WebFetch"},
	"task_plan":   {"TodoWrite"},
}

func (c compiled) matches(target string) bool {
	if c.re == nil {
		return true
	}
	if c.re.MatchString(target) {
		return true
	}
	for _, alias := range claudeNames[target] {
		if c.re.MatchString(alias) {
			return true
		}
	}
	return false
}

// Input is the event as a hook receives it on stdin.
type Input struct {
	SessionID      string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	PermissionMode string          `json:"permission_mode,omitempty"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
	Prompt         string          `json:"prompt,omitempty"`
	Source         string          `json:"source,omitempty"`  // SessionStart: startup or resume
	Trigger        string          `json:"trigger,omitempty"` // PreCompact: auto or manual
	StopHookActive *bool           `json:"stop_hook_active,omitempty"`
	Agent          string          `json:"agent,omitempty"` // Polly: the agent instance (persona id, "coder#2")
}

// Run is what one hook did, for the transcript and stream-json.
type Run struct {
	Event    string        `json:"event"`
	Command  string        `json:"command"`
	Target   string        `json:"target,omitempty"` // the tool (or source) it matched
	ExitCode int           `json:"exit_code"`        // -1 when it did not exit by itself
	Outcome  string        `json:"outcome"`          // ok, blocked, warning, timeout
	Message  string        `json:"message,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Result is what the hooks of one event decided together.
type Result struct {
	Block      bool     // exit 2 or "decision": "block" (or a deny): do not go on
	Reason     string   // why, for the model or the user
	Permission string   // PreToolUse: "allow", "deny" or "ask" from hookSpecificOutput; "" when none said
	Context    []string // text to add for the model (UserPromptSubmit, SessionStart, additionalContext)
	Runs       []Run
}

// output is the JSON a hook may print on stdout.
type output struct {
	Continue           *bool  `json:"continue"`
	StopReason         string `json:"stopReason"`
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput *struct {
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
		AdditionalContext        string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// Fire runs every hook of in.HookEventName whose matcher matches target
// (the tool name, or the SessionStart source), in parallel, and combines
// their answers: any block blocks; deny beats ask beats allow.
func (s *Set) Fire(ctx context.Context, in Input, target string) Result {
	var res Result
	if s == nil {
		return res
	}
	var todo []compiled
	for _, h := range s.hooks {
		if h.Event == in.HookEventName && h.matches(target) {
			todo = append(todo, h)
		}
	}
	if len(todo) == 0 {
		return res
	}
	if in.Cwd == "" {
		in.Cwd = s.opts.Dir
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		res.Runs = append(res.Runs, Run{Event: in.HookEventName, Outcome: "warning", ExitCode: -1, Message: "cannot encode the hook input: " + err.Error()})
		return res
	}
	type one struct {
		run  Run
		out  string
		errs string
	}
	done := make([]one, len(todo))
	var wg sync.WaitGroup
	for i, h := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, out, errs := s.run(ctx, h, stdin)
			r.Target = target
			done[i] = one{r, out, errs}
		}()
	}
	wg.Wait()
	rank := map[string]int{"": 0, "allow": 1, "ask": 2, "deny": 3}
	var reasons []string
	for _, d := range done {
		run := d.run
		switch run.Outcome {
		case "blocked":
			res.Block = true
			reasons = append(reasons, strings.TrimSpace(d.errs))
		case "ok":
			var o output
			if t := strings.TrimSpace(d.out); strings.HasPrefix(t, "{") && json.Unmarshal([]byte(t), &o) == nil {
				if o.Decision == "block" || o.Continue != nil && !*o.Continue {
					res.Block, run.Outcome = true, "blocked"
					reasons = append(reasons, firstNonEmpty(o.Reason, o.StopReason, "blocked by a hook"))
				}
				if h := o.HookSpecificOutput; h != nil {
					if p := h.PermissionDecision; rank[p] > rank[res.Permission] {
						res.Permission = p
						if p == "deny" {
							reasons = append(reasons, firstNonEmpty(h.PermissionDecisionReason, "denied by a hook"))
						}
					}
					if c := strings.TrimSpace(h.AdditionalContext); c != "" {
						res.Context = append(res.Context, c)
					}
				}
			} else if t != "" && (in.HookEventName == UserPromptSubmit || in.HookEventName == SessionStart) {
				res.Context = append(res.Context, t)
			}
		}
		res.Runs = append(res.Runs, run)
	}
	if res.Permission == "deny" {
		res.Block = true
	}
	res.Reason = strings.TrimSpace(strings.Join(slices.DeleteFunc(reasons, func(s string) bool { return s == "" }), "\n"))
	if res.Block && res.Reason == "" {
		res.Reason = "blocked by a " + in.HookEventName + " hook (it gave no reason)"
	}
	return res
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return strings.TrimSpace(x)
		}
	}
	return ""
}

// run starts one hook and waits for it, killing its process group at the
// timeout or when ctx ends.
func (s *Set) run(ctx context.Context, h compiled, stdin []byte) (Run, string, string) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	r := Run{Event: h.Event, Command: h.Command, ExitCode: -1}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr capped
	start := time.Now()
	code, err := s.opts.Run(tctx, h.Hook, s.opts.Dir, s.opts.Env, stdin, &stdout, &stderr)
	r.Duration = time.Since(start)
	out, errs := stdout.String(), stderr.String()
	switch {
	case tctx.Err() != nil && ctx.Err() == nil:
		r.Outcome, r.Message = "timeout", fmt.Sprintf("killed after its timeout of %s", timeout)
	case ctx.Err() != nil:
		r.Outcome, r.Message = "warning", "cancelled"
	case err == nil && code == 0:
		r.ExitCode, r.Outcome = 0, "ok"
	case err == nil:
		r.ExitCode = code
		switch r.ExitCode {
		case 2:
			r.Outcome, r.Message = "blocked", clip(strings.TrimSpace(errs), 300)
		case 127:
			r.Outcome, r.Message = "warning", "command not found: "+clip(strings.TrimSpace(errs), 300)
		default:
			r.Outcome, r.Message = "warning", fmt.Sprintf("exit %d: %s", r.ExitCode, clip(strings.TrimSpace(errs), 300))
		}
	default:
		r.Outcome, r.Message = "warning", "could not run: "+err.Error()
	}
	return r, out, errs
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// capped keeps the first maxOutput bytes written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

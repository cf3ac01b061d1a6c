// Package hooks runs the user's hooks at points of the agent loop, exactly
// as Claude Code's hooks reference describes them, so an existing Claude
// Code hooks block works unchanged: the event arrives as JSON on stdin (or
// as the body of a POST for http hooks); exit 0 goes on (plain stdout is
// context for UserPromptSubmit and SessionStart), exit 2 blocks with
// stderr as the reason, any other exit is a warning; JSON on stdout is
// read on every exit code ("decision", "continue"/"stopReason",
// "systemMessage", hookSpecificOutput.permissionDecision, updatedInput,
// additionalContext). Hooks run in parallel with a timeout and are killed
// with their process group; "async" hooks run in the background and their
// output is delivered with the next request.
//
// The package speaks only Claude Code's vocabulary: mapping Polly's tools
// to Claude Code's names and shapes is the caller's job.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxOutput bounds what is kept of a hook's stdout and stderr (a hook
// printing megabytes is drained, not stored).
const maxOutput = 64 << 10

// maxText caps each string a hook hands to the model or the user, as
// Claude Code caps additionalContext, systemMessage and plain stdout.
const maxText = 10000

// Hook is one configured handler.
type Hook struct {
	Event          string
	Matcher        string
	Type           string   // "command" ("" too), "http"; "prompt", "agent" and "mcp_tool" are reported as unused
	Command        string   // command: a shell command line, or with Args the executable
	Args           []string // command: exec form, no shell
	URL            string   // http: where the event is POSTed
	Headers        map[string]string
	AllowedEnvVars []string // http: the variables $VAR in Headers may use
	If             string   // a permission rule ("Bash(git *)") the tool call must match
	Timeout        time.Duration
	Async          bool // command: run in the background, output delivered with the next request
	StatusMessage  string
	Source         string // where it was configured, for messages
	Network        bool   // command: its config lets it use the network (in the sandbox)
}

// Runner runs one command hook to its end: bash -c COMMAND (shell form),
// or COMMAND ARGS… when args are given (exec form), in dir with env,
// stdin fed to it and its stdout and stderr copied out; it and every
// process it started are killed when ctx ends. It returns the exit code
// (128+n for death by signal n), or an error when the hook could not run.
// Every command hook runs here, so the app puts the command sandbox
// around all of them at once.
type Runner func(ctx context.Context, h Hook, dir string, env []string, stdin []byte, stdout, stderr io.Writer) (int, error)

// Spawn is the default Runner: the hook unsandboxed, in its own process
// group (killed whole at the timeout) and killed with Polly.
func Spawn(ctx context.Context, h Hook, dir string, env []string, stdin []byte, stdout, stderr io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", h.Command)
	if h.Args != nil {
		cmd = exec.CommandContext(ctx, h.Command, h.Args...)
	}
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
	Dir  string       // the project root: the hooks' working directory and CLAUDE_PROJECT_DIR
	Env  []string     // the hooks' environment (nil: Polly's); CLAUDE_PROJECT_DIR is added
	Run  Runner       // nil: Spawn
	HTTP *http.Client // for http hooks; nil: a plain client (each hook's timeout applies)
}

// Set is the compiled hooks of one process. It is safe for concurrent use.
type Set struct {
	opts  Options
	hooks []compiled

	bg      context.Context // async hooks run under it; Close cancels it
	stop    context.CancelFunc
	running sync.WaitGroup
	mu      sync.Mutex
	pending []Delivery // finished async hooks not yet taken
}

type compiled struct {
	Hook
	match matcher
	cond  ifRule
}

// New compiles hooks. Hooks Polly cannot run (an event it has no moment
// for, a prompt or agent hook) are left out and described in the
// warnings, once; a matcher or "if" rule that does not compile is an
// error (the config checks them first).
func New(list []Hook, opts Options) (*Set, []string, error) {
	if opts.Run == nil {
		opts.Run = Spawn
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	opts.Env = append(slices.Clone(opts.Env), "CLAUDE_PROJECT_DIR="+opts.Dir, "POLLY_PROJECT_DIR="+opts.Dir)
	s := &Set{opts: opts}
	s.bg, s.stop = context.WithCancel(context.Background())
	var warnings []string
	unused := map[string][]string{} // reason → where
	seen := map[string]bool{}
	for _, h := range list {
		where := fmt.Sprintf("%s %q in %s", h.Event, h.Matcher, h.Source)
		switch typ := h.Type; {
		case !Documented(h.Event):
			unused["is not an event of Claude Code's hooks reference"] = append(unused["is not an event of Claude Code's hooks reference"], where)
			continue
		case !Fired(h.Event):
			key := "Polly has no moment for " + h.Event
			unused[key] = append(unused[key], h.Source)
			continue
		case typ == "prompt" || typ == "agent" || typ == "mcp_tool":
			key := fmt.Sprintf("Polly does not run %q hooks", typ)
			unused[key] = append(unused[key], where)
			continue
		case typ == "http" && h.Event == SessionStart:
			key := "SessionStart runs only command hooks (as in Claude Code)"
			unused[key] = append(unused[key], where)
			continue
		}
		key := strings.Join([]string{h.Event, h.Matcher, h.Type, h.Command, strings.Join(h.Args, "\x00"), h.URL, h.If}, "\x01")
		if seen[key] {
			continue // the same handler in two settings files runs once
		}
		seen[key] = true
		c := compiled{Hook: h}
		var err error
		if c.match, err = compileMatcher(h.Matcher); err != nil {
			return nil, warnings, fmt.Errorf("hook %s matcher %q (%s): %w", h.Event, h.Matcher, h.Source, err)
		}
		if c.cond, err = parseIf(h.If); err != nil {
			return nil, warnings, fmt.Errorf("hook %s \"if\" (%s): %w", h.Event, h.Source, err)
		}
		s.hooks = append(s.hooks, c)
	}
	for _, reason := range slices.Sorted(maps.Keys(unused)) {
		warnings = append(warnings, fmt.Sprintf("hooks accepted but unused (%s): %s", reason, strings.Join(dedupe(unused[reason]), "; ")))
	}
	return s, warnings, nil
}

func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Len is the number of hooks Polly runs.
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

// Close stops the async hooks still running and waits for them.
func (s *Set) Close() {
	if s == nil {
		return
	}
	s.stop()
	s.running.Wait()
}

// Input is the event as a hook receives it, with Claude Code's field
// names. Empty optional fields are left out.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode,omitempty"`
	HookEventName  string `json:"hook_event_name"`
	AgentID        string `json:"agent_id,omitempty"`   // inside a sub-agent
	AgentType      string `json:"agent_type,omitempty"` // the sub-agent's persona

	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	Error        string          `json:"error,omitempty"` // PostToolUseFailure
	IsInterrupt  *bool           `json:"is_interrupt,omitempty"`
	DurationMS   *int64          `json:"duration_ms,omitempty"`

	Prompt string `json:"prompt,omitempty"` // UserPromptSubmit
	Source string `json:"source,omitempty"` // SessionStart: startup, resume, clear, compact
	Model  string `json:"model,omitempty"`  // SessionStart

	Trigger            string  `json:"trigger,omitempty"`             // PreCompact, PostCompact: manual or auto
	CustomInstructions *string `json:"custom_instructions,omitempty"` // PreCompact
	CompactSummary     string  `json:"compact_summary,omitempty"`     // PostCompact

	StopHookActive       *bool   `json:"stop_hook_active,omitempty"` // Stop, SubagentStop
	LastAssistantMessage *string `json:"last_assistant_message,omitempty"`
	AgentTranscriptPath  string  `json:"agent_transcript_path,omitempty"` // SubagentStop

	Message          string `json:"message,omitempty"` // Notification
	Title            string `json:"title,omitempty"`
	NotificationType string `json:"notification_type,omitempty"`

	Reason string `json:"reason,omitempty"` // SessionEnd: clear, resume, prompt_input_exit, other
}

// Run is what one hook did, for the transcript and stream-json.
type Run struct {
	Event    string        `json:"event"`
	Command  string        `json:"command"`          // the command line, or the URL of an http hook
	Target   string        `json:"target,omitempty"` // the tool (or source, type…) it matched
	ExitCode int           `json:"exit_code"`        // -1 when it did not exit by itself; the HTTP status for http hooks
	Outcome  string        `json:"outcome"`          // ok, blocked, stopped, warning, timeout, async
	Message  string        `json:"message,omitempty"`
	Status   string        `json:"status_message,omitempty"` // the entry's statusMessage
	Duration time.Duration `json:"duration_ns"`
}

// Result is what the hooks of one event decided together.
type Result struct {
	Block        bool            // exit 2, "decision": "block" or a deny: do not go on (for events that can block)
	Reason       string          // why, for the model (or the user, by event)
	Permission   string          // PreToolUse: "allow", "deny" or "ask"; "" when none said
	UpdatedInput json.RawMessage // PreToolUse: the tool's new arguments, in Claude Code's shape
	Context      []string        // additionalContext (and plain stdout where it counts) for the model
	Stop         bool            // "continue": false: end the run after this event
	StopReason   string          // shown to the user, not the model
	Messages     []string        // systemMessage: shown to the user
	Runs         []Run
}

// Delivery is what a finished async hook hands over with the next request.
type Delivery struct {
	Run      Run
	Context  []string
	Messages []string
}

// TakeAsync returns the async hooks that finished since the last call.
func (s *Set) TakeAsync() []Delivery {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.pending
	s.pending = nil
	return out
}

// Fire runs every hook of in.HookEventName that matches one of the names
// (a tool's Claude Code name and Polly's, a notification type, a session
// source…), in parallel, and combines their answers: any block blocks;
// deny beats ask beats allow. Async hooks are started and not waited for.
func (s *Set) Fire(ctx context.Context, in Input, names ...string) Result {
	var res Result
	if s == nil {
		return res
	}
	var todo, async []compiled
	for _, h := range s.hooks {
		if h.Event != in.HookEventName || !(slices.Contains(noMatcher, h.Event) || h.match.matches(names)) {
			continue
		}
		if h.If != "" && (in.ToolName == "" || !h.cond.allows(names, in.ToolInput, s.opts.Dir)) {
			continue // "if" applies to tool events only; elsewhere such a hook never runs
		}
		if h.Async && h.Type != "http" {
			async = append(async, h)
		} else {
			todo = append(todo, h)
		}
	}
	if len(todo)+len(async) == 0 {
		return res
	}
	if in.Cwd == "" {
		in.Cwd = s.opts.Dir
	}
	target := firstNonEmpty(names...)
	body, err := json.Marshal(in)
	if err != nil {
		res.Runs = append(res.Runs, Run{Event: in.HookEventName, Outcome: "warning", ExitCode: -1, Message: "cannot encode the hook input: " + err.Error()})
		return res
	}
	for _, h := range async {
		s.startAsync(h, body, target)
		res.Runs = append(res.Runs, Run{Event: h.Event, Command: h.display(), Target: target, ExitCode: -1, Outcome: "async",
			Message: "started in the background", Status: h.StatusMessage})
	}
	done := make([]answer, len(todo))
	var wg sync.WaitGroup
	for i, h := range todo {
		wg.Go(func() {
			done[i] = s.run(ctx, h, body, s.timeoutOf(h, todo))
			done[i].run.Target = target
		})
	}
	wg.Wait()
	combine(&res, in.HookEventName, done)
	return res
}

// timeoutOf is a hook's timeout: its own, else the event's default.
// SessionEnd hooks share a short budget unless an entry asks for more.
func (s *Set) timeoutOf(h compiled, batch []compiled) time.Duration {
	if h.Event != SessionEnd {
		if h.Timeout > 0 {
			return h.Timeout
		}
		return defaultTimeout(h.Event)
	}
	budget := sessionEndBudget
	for _, o := range batch {
		budget = max(budget, min(o.Timeout, maxSessionEndBudget))
	}
	return budget
}

func (h compiled) display() string {
	switch {
	case h.Type == "http":
		return h.URL
	case h.Args != nil:
		return strings.TrimSpace(h.Command + " " + strings.Join(h.Args, " "))
	}
	return h.Command
}

// startAsync runs an async hook in the background; what it says is kept
// for TakeAsync. Close kills it.
func (s *Set) startAsync(h compiled, body []byte, target string) {
	s.running.Go(func() {
		a := s.run(s.bg, h, body, s.timeoutOf(h, nil))
		a.run.Target = target
		var res Result
		combine(&res, "", []answer{a}) // an async hook cannot block or decide
		d := Delivery{Run: a.run, Context: res.Context, Messages: res.Messages}
		if len(res.Runs) > 0 {
			d.Run = res.Runs[0]
		}
		s.mu.Lock()
		s.pending = append(s.pending, d)
		s.mu.Unlock()
	})
}

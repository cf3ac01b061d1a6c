package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"polly/tools/sandbox"
)

// ShellOptions configures run_command. Zero values mean the defaults.
type ShellOptions struct {
	DefaultTimeout time.Duration // when the call gives none; default 2 min
	MaxTimeout     time.Duration // larger requests are clamped; default 10 min
	MaxOutputBytes int           // output kept in memory (first half + last half); default 4 MiB
	Env            []string      // extra KEY=VALUE pairs; they override the defaults
	Scrub          []string      // variables removed from the inherited environment (API keys: the model must never see them)
	// PassEnv names credential-looking variables commands get anyway
	// (every other *_KEY, *_TOKEN, *SECRET*, *PASSWORD*, sk-… is dropped).
	PassEnv []string
	// Sandbox is what the OS sandbox can do here; nil probes the kernel
	// with sandbox.mode auto.
	Sandbox *sandbox.Status
	// Caches are the writable build caches in workspace-write; nil means
	// sandbox.DefaultCaches.
	Caches   []string
	StateDir string // Polly's .agent directory, read-only to commands; "" is root/.agent
	// Runner runs the commands through its long-lived sandbox helper (the
	// app passes one and closes it); nil gives this tool a Runner of its
	// own, closed when the tool is garbage.
	Runner *sandbox.Runner
}

func (o ShellOptions) withDefaults() ShellOptions {
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = 2 * time.Minute
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = 10 * time.Minute
	}
	o.DefaultTimeout = min(o.DefaultTimeout, o.MaxTimeout)
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = 4 << 20
	}
	if o.Sandbox == nil {
		st := sandbox.Resolve(sandbox.Settings{Mode: sandbox.ModeAuto})
		o.Sandbox = &st
	}
	if o.Caches == nil {
		home, _ := os.UserHomeDir()
		o.Caches = sandbox.DefaultCaches(home, os.Getenv)
	}
	return o
}

// waitDelay bounds how long Wait waits for the output pipe after the
// helper exits or is told to stop: it kills every process of the command,
// but a process outside its reach (none is expected) must not hang the call.
const waitDelay = 500 * time.Millisecond

// nonInteractiveEnv keeps commands from waiting for a pager, a prompt or an
// editor that nobody will answer.
func nonInteractiveEnv() []string {
	return []string{
		"PAGER=cat",
		"GIT_PAGER=cat",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_EDITOR=true",
		"DEBIAN_FRONTEND=noninteractive",
		"NO_COLOR=1",
	}
}

type runCommandArgs struct {
	Command        string `json:"command" jsonschema:"the command line, run with bash -c in the project root"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"seconds before the command is killed (default 120, max 600)"`
	Network        bool   `json:"network,omitempty" jsonschema:"true if the command needs the network (downloads, git fetch); the user may be asked"`
}

// ShellTool returns run_command, which runs bash command lines in root
// inside the OS sandbox (tools/sandbox) the permission gate granted.
func ShellTool(root string, opts ShellOptions) Tool {
	s := &shell{root: root, opts: opts.withDefaults()}
	if s.opts.Runner == nil {
		r := &sandbox.Runner{}
		s.opts.Runner = r
		runtime.AddCleanup(s, func(r *sandbox.Runner) { r.Close() }, r)
	}
	desc := Describe(descriptions, "run_command", struct{ DefaultTimeout, MaxTimeout int }{
		int(s.opts.DefaultTimeout.Seconds()), int(s.opts.MaxTimeout.Seconds())})
	return New("run_command", desc, s.run, nonNegative("timeout_seconds")).
		WithAccess(func(ctx context.Context, a runCommandArgs) (Access, error) {
			return Access{Kind: AccessExecute, Command: a.Command, Preview: a.Command, Network: a.Network}, nil
		})
}

type shell struct {
	root string
	opts ShellOptions
}

func (s *shell) run(ctx context.Context, a runCommandArgs) (Result, error) {
	if strings.TrimSpace(a.Command) == "" {
		return Result{}, errors.New("command is empty")
	}
	st := s.opts.Sandbox
	if st.Refuse {
		return Result{}, fmt.Errorf("%s; set \"sandbox\": {\"mode\": \"auto\"} or \"off\" in the config (or --sandbox) to run commands anyway", st.Notice())
	}
	// No grant means no gate said how this call may run: the strictest.
	grant, ok := sandbox.GrantFrom(ctx)
	if !ok {
		grant = sandbox.Grant{Level: sandbox.ReadOnly}
	}
	if !st.Active {
		grant.Level = sandbox.Unsandboxed
	}
	var notes []string
	if a.Network && !grant.Network && grant.Level != sandbox.Unsandboxed {
		notes = append(notes, "network was requested but not granted; the command runs without it")
	}
	timeout := s.opts.DefaultTimeout
	if a.TimeoutSeconds > 0 {
		timeout = time.Duration(a.TimeoutSeconds) * time.Second
	}
	if timeout > s.opts.MaxTimeout {
		timeout = s.opts.MaxTimeout
		notes = append(notes, fmt.Sprintf("timeout_seconds=%d is above the maximum; used %s", a.TimeoutSeconds, timeout))
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	pol := sandbox.Build(sandbox.Plan{Grant: grant, Root: s.root, StateDir: s.opts.StateDir, Caches: s.opts.Caches, Command: a.Command})
	// TMPDIR is the command's own, set by the runner.
	env := sandbox.CommandEnv(os.Environ(), s.opts.Scrub, s.opts.PassEnv, append(nonInteractiveEnv(), s.opts.Env...))
	// A line that names git has the repository's program settings read
	// and overridden too; any other gets the fixed overrides.
	env, err := GitSafeEnv(runCtx, env, s.root, strings.Contains(a.Command, "git"))
	if err != nil {
		return Result{}, err
	}
	out := newHeadTail(s.opts.MaxOutputBytes)
	var sink io.Writer = out
	if pw := ProgressOf(ctx); pw != nil {
		sink = io.MultiWriter(out, pw) // one writer for both: one pipe, output in order
	}
	res, err := s.opts.Runner.Run(runCtx, pol, a.Command, s.root, env, sink, waitDelay)
	runtime.KeepAlive(s) // its own Runner is closed when s is garbage, not during the command
	if err != nil {
		return Result{}, err
	}
	code := res.Code
	if res.Late {
		notes = append(notes, "background processes kept the output open; output after the shell exited is not captured")
	}
	if res.Limit != "" {
		notes = append(notes, "the command seems to have hit the sandbox's limit on "+res.Limit)
	}
	for _, p := range res.Removed {
		notes = append(notes, fmt.Sprintf("the command created %s, which commands may not create (it instructs agents, starts programs or is a repository); Polly removed it", p))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d\n", code)
	failed := code != 0
	switch {
	case ctx.Err() != nil:
		b.WriteString("cancelled; every process of the command killed\n")
		failed = true
	case runCtx.Err() != nil:
		fmt.Fprintf(&b, "timed out after %s; every process of the command killed\n", timeout)
		failed = true
	}
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	if text := out.String(); text == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(text)
	}
	return Result{Output: b.String(), IsError: failed, ExitCode: &code}, nil
}

// headTail keeps the first and last bytes written to it and counts the
// rest, so a command printing gigabytes costs bounded memory.
type headTail struct {
	mu      sync.Mutex
	headMax int
	head    []byte
	tail    []byte // ring buffer, allocated on first overflow
	tailMax int
	pos     int // next write position in tail
	filled  int // bytes held in tail
	total   int64
}

func newHeadTail(max int) *headTail {
	return &headTail{headMax: max / 2, tailMax: max - max/2}
}

func (w *headTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.total += int64(n)
	if room := w.headMax - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || w.tailMax == 0 {
		return n, nil
	}
	if w.tail == nil {
		w.tail = make([]byte, w.tailMax)
	}
	if len(p) > w.tailMax {
		p = p[len(p)-w.tailMax:]
	}
	k := copy(w.tail[w.pos:], p)
	copy(w.tail, p[k:])
	w.pos = (w.pos + len(p)) % w.tailMax
	w.filled = min(w.filled+len(p), w.tailMax)
	return n, nil
}

// kept is how many bytes are held in memory.
func (w *headTail) kept() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.head) + w.filled
}

func (w *headTail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var tail []byte
	if w.filled < w.tailMax {
		tail = w.tail[:w.filled]
	} else {
		tail = append(append(make([]byte, 0, w.tailMax), w.tail[w.pos:]...), w.tail[:w.pos]...)
	}
	omitted := w.total - int64(len(w.head)) - int64(len(tail))
	if omitted == 0 {
		return string(w.head) + string(tail)
	}
	// Cut on rune boundaries so the marker doesn't split a character.
	head := w.head
	for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.FullRune(head[lastRuneStart(head):]); i++ {
		head = head[:lastRuneStart(head)]
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	omitted = w.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n[... %d bytes omitted ...]\n%s", head, omitted, tail)
}

func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return len(b) - 1
}

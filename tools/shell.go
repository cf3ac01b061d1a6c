package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// ShellOptions configures run_command. Zero values mean the defaults.
type ShellOptions struct {
	DefaultTimeout time.Duration // when the call gives none; default 2 min
	MaxTimeout     time.Duration // larger requests are clamped; default 10 min
	MaxOutputBytes int           // output kept in memory (first half + last half); default 4 MiB
	Env            []string      // extra KEY=VALUE pairs; they override the defaults
	Scrub          []string      // variables removed from the inherited environment (API keys: the model must never see them)
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
	return o
}

// waitDelay bounds how long Wait waits for the output pipe after the shell
// exits or is killed: background processes that keep it open (or escaped
// the process group) must not hang the call.
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
}

// ShellTool returns run_command, which runs bash command lines in root.
func ShellTool(root string, opts ShellOptions) Tool {
	s := shell{root: root, opts: opts.withDefaults()}
	desc := fmt.Sprintf("Run a bash command line in the project root; returns the exit code and combined stdout+stderr. "+
		"There is no stdin and no terminal: use non-interactive flags (e.g. -y, --no-pager). "+
		"Default timeout %ds, max %ds; on timeout the whole process group is killed. "+
		"Very long output keeps its beginning and end. Prefer read_file, grep, glob and edit_file for files.",
		int(s.opts.DefaultTimeout.Seconds()), int(s.opts.MaxTimeout.Seconds()))
	return New("run_command", desc, s.run, nonNegative("timeout_seconds")).
		WithAccess(func(ctx context.Context, a runCommandArgs) (Access, error) {
			return Access{Kind: AccessExecute, Command: a.Command, Preview: a.Command}, nil
		})
}

type shell struct {
	root string
	opts ShellOptions
}

func (s shell) run(ctx context.Context, a runCommandArgs) (Result, error) {
	if strings.TrimSpace(a.Command) == "" {
		return Result{}, errors.New("command is empty")
	}
	var notes []string
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

	out := newHeadTail(s.opts.MaxOutputBytes)
	cmd := exec.CommandContext(runCtx, "bash", "-c", a.Command)
	cmd.Dir = s.root
	cmd.Env = append(append(scrubEnv(os.Environ(), s.opts.Scrub), nonInteractiveEnv()...), s.opts.Env...)
	cmd.Stdout, cmd.Stderr = out, out // stdin stays nil: /dev/null
	if pw := ProgressOf(ctx); pw != nil {
		tee := io.MultiWriter(out, pw) // one value for both: one pipe, output in order
		cmd.Stdout, cmd.Stderr = tee, tee
	}
	// Its own process group, so one signal reaches every descendant; on
	// Linux the shell also dies with Polly (kill -9 included).
	cmd.SysProcAttr = procAttr()
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill process group %d: %w", cmd.Process.Pid, err)
		}
		return os.ErrProcessDone
	}
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if cmd.ProcessState == nil {
		return Result{}, fmt.Errorf("start bash: %w", err)
	}
	code := exitCode(cmd.ProcessState)
	if errors.Is(err, exec.ErrWaitDelay) {
		notes = append(notes, "background processes kept the output open; output after the shell exited is not captured")
	}

	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d\n", code)
	failed := code != 0
	switch {
	case ctx.Err() != nil:
		b.WriteString("cancelled; process group killed\n")
		failed = true
	case runCtx.Err() != nil:
		fmt.Fprintf(&b, "timed out after %s; process group killed\n", timeout)
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

// exitCode follows the shell convention: 128+n for death by signal n.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
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

// scrubEnv drops the named variables from env.
func scrubEnv(env, names []string) []string {
	if len(names) == 0 {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

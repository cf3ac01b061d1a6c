//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// RunHelperIfAsked has nothing to dispatch outside Linux.
func RunHelperIfAsked() {}

// Probe: the OS sandbox is Linux-only.
func Probe() (int, error) { return 0, errors.New("the OS sandbox needs Linux (Landlock)") }

// ApplyError: the sandbox could not be applied; the command did not run.
type ApplyError struct{ Msg string }

func (e *ApplyError) Error() string {
	return "the sandbox could not be applied, so the command did not run: " + e.Msg
}

// Cmd runs bash directly: only the unsandboxed level exists here.
type Cmd struct{ *exec.Cmd }

// Command prepares script; any level but Unsandboxed is refused.
func Command(ctx context.Context, pol Policy, script string) (*Cmd, error) {
	if pol.Level != Unsandboxed {
		return nil, &ApplyError{Msg: "no OS sandbox on this platform"}
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &Cmd{Cmd: cmd}, nil
}

// Runner runs commands; outside Linux there is no helper to keep ready.
type Runner struct{}

// Result is a finished command.
type Result struct {
	State *os.ProcessState
	Pid   int
	Late  bool
}

// Run runs script (unsandboxed only).
func (r *Runner) Run(ctx context.Context, pol Policy, script, dir string, env []string, out io.Writer, waitDelay time.Duration) (Result, error) {
	c, err := Command(ctx, pol, script)
	if err != nil {
		return Result{}, err
	}
	c.Dir, c.Env, c.Stdout, c.Stderr, c.WaitDelay = dir, env, out, out, waitDelay
	err = c.Run()
	if c.ProcessState == nil {
		return Result{}, err
	}
	return Result{State: c.ProcessState, Pid: c.Process.Pid, Late: errors.Is(err, exec.ErrWaitDelay)}, nil
}

// Close does nothing here.
func (r *Runner) Close() {}

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
func Probe() Kernel {
	return Kernel{NoLandlock: "the OS sandbox needs Linux (Landlock)", NoSeccomp: "the OS sandbox needs Linux (seccomp)"}
}

func archNote() string { return "no seccomp outside Linux" }

// ApplyError: the sandbox could not be applied; the command did not run.
type ApplyError struct{ Msg string }

func (e *ApplyError) Error() string {
	return "the sandbox could not be applied, so the command did not run: " + e.Msg
}

// Limits are per-command resource limits (not applied outside Linux).
type Limits struct{ Procs, FileSize, CPUSeconds, AddressSpace uint64 }

// DefaultLimits: none outside Linux.
func DefaultLimits() Limits { return Limits{} }

// Setup is what every command of one Runner shares.
type Setup struct {
	Home     string
	DenyRead []string
	Polly    []string
	Caches   []string
	TmpDir   string
	Limits   Limits
}

// Runner runs commands; outside Linux only unsandboxed ones.
type Runner struct{ Setup Setup }

// Exit is how a command ended.
type Exit struct {
	Code   int
	Signal syscall.Signal
}

// Result is a finished command.
type Result struct {
	Exit
	Pid     int
	Late    bool
	Removed []string
	Limit   string
}

// Status is st: there is nothing more to know here.
func (r *Runner) Status(st Status) Status { return st }

// Run runs script (unsandboxed only).
func (r *Runner) Run(ctx context.Context, pol Policy, script, dir string, env []string, out io.Writer, waitDelay time.Duration) (Result, error) {
	if pol.Level != Unsandboxed {
		return Result{}, &ApplyError{Msg: "no OS sandbox on this platform"}
	}
	c := exec.CommandContext(ctx, "bash", "-c", script)
	c.Dir, c.Env, c.Stdout, c.Stderr, c.WaitDelay = dir, env, out, out, waitDelay
	err := c.Run()
	if c.ProcessState == nil {
		return Result{}, err
	}
	return Result{Exit: Exit{Code: c.ProcessState.ExitCode()}, Pid: c.Process.Pid, Late: errors.Is(err, exec.ErrWaitDelay)}, nil
}

// Close does nothing here.
func (r *Runner) Close() {}

var _ = os.Getpid

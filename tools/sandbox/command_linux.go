package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// helperArg is the hidden subcommand that makes Polly's binary the helper.
const helperArg = "__polly_sandbox_helper"

// ready is set once this binary has dispatched the helper subcommand at
// start-up (RunHelperIfAsked). Without it, re-executing the binary would
// run something else (a test binary would run its tests again), so
// commands refuse to start instead.
var ready atomic.Bool

// RunHelperIfAsked must be the first thing main (and TestMain of packages
// whose tests run commands) does: when the binary was started as the
// sandbox helper it runs the helper and exits; otherwise it makes this
// process non-dumpable (its environ, memory and the key in them are then
// closed to other processes without CAP_SYS_PTRACE, which commands never
// have) and returns.
func RunHelperIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		// Straight to the kernel, past Go's exit hooks: a coverage build
		// (go test -cover) would write its counters on exit, which the
		// sandbox refuses, and its complaint would end the command's output.
		unix.Exit(helperMain(os.Args[2:]))
	}
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	ready.Store(true)
}

// Probe reports the kernel's Landlock ABI, or why the sandbox cannot work.
// POLLY_SANDBOX_PROBE=fail simulates a kernel without Landlock (tests,
// and users checking the fallback).
func Probe() (int, error) {
	if os.Getenv("POLLY_SANDBOX_PROBE") == "fail" {
		return 0, errors.New("the Landlock probe failed (simulated by POLLY_SANDBOX_PROBE=fail)")
	}
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		if err == nil {
			err = fmt.Errorf("ABI version %d", abi)
		}
		return 0, fmt.Errorf("the kernel has no Landlock (%v)", err)
	}
	return abi, nil
}

// ApplyError: the helper could not apply the sandbox; the command did not run.
type ApplyError struct{ Msg string }

func (e *ApplyError) Error() string {
	return "the sandbox could not be applied, so the command did not run: " + e.Msg
}

// Cmd is bash -c script run by the helper under a policy. Set Dir, Env,
// Stdout and Stderr on Cmd.Cmd, then Start and Wait.
type Cmd struct {
	*exec.Cmd
}

// Command prepares script to run under pol. Cancelling ctx asks the
// helper (SIGTERM) to kill every process of the command.
func Command(ctx context.Context, pol Policy, script string) (*Cmd, error) {
	if !ready.Load() {
		return nil, errors.New("this binary cannot start the sandbox helper (sandbox.RunHelperIfAsked was not called at start-up)")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find Polly's executable for the sandbox helper: %w", err)
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if pol.Level == WorkspaceWrite && len(pol.ReadOnly) > 0 && os.Geteuid() == 0 {
		// Root can give the helper its own mount namespace, where
		// read-only binds protect .git and .agent inside the project.
		pol.Binds = true
		attr.Cloneflags = syscall.CLONE_NEWNS
	}
	spec, err := json.Marshal(pol)
	if err != nil {
		return nil, fmt.Errorf("encode sandbox policy: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, helperArg, string(spec), script)
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return err
		}
		return os.ErrProcessDone
	}
	return &Cmd{Cmd: cmd}, nil
}

// Start starts the helper and waits until it has applied the sandbox and
// started bash. An *ApplyError means nothing ran.
func (c *Cmd) Start() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox status pipe: %w", err)
	}
	defer r.Close()
	c.Cmd.ExtraFiles = []*os.File{w}
	err = c.Cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start the sandbox helper: %w", err)
	}
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	if got := string(b); got != "ok" {
		c.Cmd.Wait()
		msg, _ := strings.CutPrefix(got, "error: ")
		if msg == "" {
			msg = "the helper exited without a word (" + c.Cmd.ProcessState.String() + ")"
		}
		return &ApplyError{Msg: msg}
	}
	return nil
}

// Run starts and waits.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Cmd.Wait()
}

//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
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

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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

// spareArg starts the helper as a spare: it initialises (Go runs every
// package's init, which costs far more than the sandbox itself) and then
// waits for its job on jobFD.
const (
	spareArg   = "-spare"
	spareReady = "R"
	jobFD      = 4
)

type spareJob struct {
	Policy Policy `json:"policy"`
	Script string `json:"script"`
}

// Runner runs commands under the helper and keeps one spare helper
// started ahead of time (with the last command's directory and
// environment), so a command does not wait for the binary to start. The
// zero value is ready; Close kills the spare.
type Runner struct {
	mu     sync.Mutex
	spare  *spare
	closed bool
}

type spare struct {
	cmd    *exec.Cmd
	dir    string
	env    []string
	ns     bool
	status *os.File // read end of the helper's status pipe
	job    *os.File // write end of its job pipe
	out    *os.File // read end of its stdout+stderr
	ready  bool     // it said it finished starting
}

// waitReady reads the spare's "started" byte.
func (sp *spare) waitReady() error {
	b := make([]byte, len(spareReady))
	if _, err := io.ReadFull(sp.status, b); err != nil || string(b) != spareReady {
		rest, _ := io.ReadAll(io.LimitReader(sp.status, 4096))
		return fmt.Errorf("the helper did not start: %q %v", string(b)+string(rest), err)
	}
	sp.ready = true
	return nil
}

// Result is a finished command.
type Result struct {
	State *os.ProcessState
	Pid   int  // the helper's pid (it leads the command's process group)
	Late  bool // output was still being written WaitDelay after the helper exited
}

// Run runs script under pol, copying its output to out, until it ends or
// ctx is done (then every process of the command is killed). An
// *ApplyError means the command did not run.
func (r *Runner) Run(ctx context.Context, pol Policy, script, dir string, env []string, out io.Writer, waitDelay time.Duration) (Result, error) {
	if !ready.Load() {
		return Result{}, errors.New("this binary cannot start the sandbox helper (sandbox.RunHelperIfAsked was not called at start-up)")
	}
	binds := pol.Level == WorkspaceWrite && len(pol.ReadOnly) > 0 && os.Geteuid() == 0
	pol.Binds = binds
	sp := r.take(binds, dir, env)
	if sp == nil {
		var err error
		if sp, err = start(binds, dir, env); err != nil {
			return Result{}, err
		}
	}
	// The next spare starts once this command is over, so its start-up
	// does not compete with the command for the CPU.
	defer func() { go r.refill(binds, dir, env) }()
	b, err := json.Marshal(spareJob{Policy: pol, Script: script})
	if err != nil {
		sp.kill()
		return Result{}, fmt.Errorf("encode sandbox job: %w", err)
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(out, sp.out)
		close(copied)
	}()
	if !sp.ready {
		if err := sp.waitReady(); err != nil {
			sp.kill()
			<-copied
			return Result{}, &ApplyError{Msg: err.Error()}
		}
	}
	_, werr := sp.job.Write(b)
	sp.job.Close()
	st, _ := io.ReadAll(io.LimitReader(sp.status, 4096))
	sp.status.Close()
	if got := string(st); werr != nil || got != "ok" {
		sp.cmd.Process.Kill()
		sp.cmd.Wait()
		sp.out.Close()
		<-copied
		msg, _ := strings.CutPrefix(got, "error: ")
		if msg == "" {
			msg = fmt.Sprintf("the helper exited without a word (%v, write: %v)", sp.cmd.ProcessState, werr)
		}
		return Result{}, &ApplyError{Msg: msg}
	}
	stop := context.AfterFunc(ctx, func() { sp.cmd.Process.Signal(syscall.SIGTERM) })
	sp.cmd.Wait()
	stop()
	res := Result{State: sp.cmd.ProcessState, Pid: sp.cmd.Process.Pid}
	syscall.Kill(-res.Pid, syscall.SIGKILL) // anything left in its group
	select {
	case <-copied:
	case <-time.After(waitDelay):
		res.Late = true
	}
	sp.out.Close()
	<-copied
	return res, nil
}

func (r *Runner) take(ns bool, dir string, env []string) *spare {
	r.mu.Lock()
	defer r.mu.Unlock()
	sp := r.spare
	if sp == nil {
		return nil
	}
	r.spare = nil
	if sp.cmd.Process.Signal(syscall.Signal(0)) != nil || sp.ns != ns || sp.dir != dir || !slices.Equal(sp.env, env) {
		go sp.kill()
		return nil
	}
	return sp
}

// refill starts the next spare in the background.
func (r *Runner) refill(ns bool, dir string, env []string) {
	sp, err := start(ns, dir, env)
	if err != nil {
		return // the next command starts its helper itself
	}
	if err := sp.waitReady(); err != nil {
		sp.kill()
		return
	}
	r.mu.Lock()
	if r.closed || r.spare != nil {
		r.mu.Unlock()
		sp.kill()
		return
	}
	r.spare = sp
	r.mu.Unlock()
}

func start(ns bool, dir string, env []string) (*spare, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find Polly's executable for the sandbox helper: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	jobR, jobW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		statusW.Close()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		statusW.Close()
		jobR.Close()
		jobW.Close()
		return nil, err
	}
	cmd := exec.Command(exe, helperArg, spareArg)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = outW, outW // stdin: /dev/null
	cmd.ExtraFiles = []*os.File{statusW, jobR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if ns {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNS
	}
	err = cmd.Start()
	statusW.Close()
	jobR.Close()
	outW.Close()
	if err != nil {
		statusR.Close()
		jobW.Close()
		outR.Close()
		return nil, fmt.Errorf("start the sandbox helper: %w", err)
	}
	return &spare{cmd: cmd, dir: dir, env: slices.Clone(env), ns: ns, status: statusR, job: jobW, out: outR}, nil
}

func (sp *spare) kill() {
	sp.job.Close() // an empty job: the spare exits
	sp.cmd.Process.Kill()
	sp.cmd.Wait()
	sp.status.Close()
	sp.out.Close()
}

// Close kills the spare helper.
func (r *Runner) Close() {
	r.mu.Lock()
	sp := r.spare
	r.spare, r.closed = nil, true
	r.mu.Unlock()
	if sp != nil {
		sp.kill()
	}
}

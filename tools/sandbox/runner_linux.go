package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ready is set once this binary has dispatched the helper subcommand at
// start-up (RunHelperIfAsked). Without it, starting the binary as the
// helper would run something else (a test binary would run its tests
// again), so commands refuse to start instead.
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
		// (go test -cover) would write its counters on exit.
		unix.Exit(helperMain())
	}
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	ready.Store(true)
}

// ApplyError: the helper could not apply the sandbox; the command did not run.
type ApplyError struct{ Msg string }

func (e *ApplyError) Error() string {
	return "the sandbox could not be applied, so the command did not run: " + e.Msg
}

// Setup is what every command of one Runner shares. Zero fields take
// their defaults from the environment when the Runner first runs.
type Setup struct {
	Home     string   // "" is $HOME
	DenyRead []string // nil is DefaultDenyRead(Home, os.Getenv, nil)
	Polly    []string // Polly's own files in DenyRead, never readable; nil is PollyFiles(Home, os.Getenv)
	Caches   []string // writable build caches; nil is DefaultCaches
	TmpDir   string   // where the private temp dirs go ("" is os.TempDir())
	Limits   Limits   // zero is DefaultLimits()
}

// DefaultLimits are limits a normal `go test ./...` or `npm test` never
// reaches: 4096 processes more than the user has, 16 GiB per file, a CPU
// hour per process (more on many cores), 64 GiB of address space (the
// race detector and V8 reserve a lot) or twice the memory.
func DefaultLimits() Limits {
	var si unix.Sysinfo_t
	unix.Sysinfo(&si)
	mem := uint64(si.Totalram) * uint64(si.Unit)
	return Limits{
		Procs:        uint64(userProcesses()) + 4096,
		FileSize:     16 << 30,
		CPUSeconds:   max(3600, uint64(runtime.NumCPU())*600),
		AddressSpace: max(64<<30, 2*mem),
	}
}

// userProcesses counts this user's processes (threads count against
// RLIMIT_NPROC too, but a coarse count is enough for a ceiling).
func userProcesses() int {
	uid := strconv.Itoa(os.Getuid())
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if strings.Trim(e.Name(), "0123456789") != "" {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		if i := bytes.Index(b, []byte("\nUid:\t")); i >= 0 && bytes.HasPrefix(b[i+6:], []byte(uid+"\t")) {
			n++
		}
	}
	return n
}

// Runner runs commands in the sandbox through long-lived helpers: one in
// its own namespaces that runs every sandboxed command (concurrently),
// and, without namespaces or for unsandboxed commands, a pool of plain
// helpers that each run one command at a time (so a subreaper knows
// whose orphans it kills). A helper starts at the first command that
// needs it and lives until Close. The zero value is ready to use.
type Runner struct {
	Setup Setup

	once     sync.Once
	cfg      helperConfig
	kernel   Kernel
	bashErr  error
	overlays []overlay

	mu     sync.Mutex
	ns     *helper   // nil until needed, or after it died
	nsWhy  string    // why commands run without namespaces ("" while they can)
	idle   []*helper // plain helpers waiting for a job
	all    map[*helper]bool
	closed bool

	tmpOnce sync.Once
	tmp     string
	tmpErr  error

	seq  atomic.Uint64
	gits gitFinder
}

func (r *Runner) init() {
	r.once.Do(func() {
		s := r.Setup
		if s.Home == "" {
			s.Home, _ = os.UserHomeDir()
		}
		if s.DenyRead == nil {
			s.DenyRead = DefaultDenyRead(s.Home, os.Getenv, nil)
		}
		if s.Polly == nil {
			s.Polly = PollyFiles(s.Home, os.Getenv)
		}
		if s.Caches == nil {
			s.Caches = DefaultCaches(s.Home, os.Getenv)
		}
		if s.Limits == (Limits{}) {
			s.Limits = DefaultLimits()
		}
		r.Setup = s
		for _, c := range s.Caches {
			// A build cache that does not exist yet is made now (as the
			// tool would): Landlock can grant only what exists.
			os.MkdirAll(c, 0o755)
		}
		r.kernel = Probe()
		bash, err := exec.LookPath("bash")
		if err != nil {
			r.bashErr = fmt.Errorf("find bash: %w", err)
		}
		var overlays []overlay
		for _, dir := range []string{cacheHome(s.Home, os.Getenv), filepath.Join(s.Home, ".npm")} {
			if dir == "" || s.Home == "" {
				continue
			}
			o := overlay{Dir: dir}
			for _, c := range s.Caches {
				if covered(c, []string{dir}) && c != dir {
					o.Writable = append(o.Writable, c)
				}
			}
			overlays = append(overlays, o)
		}
		r.overlays = overlays
		r.cfg = helperConfig{Parent: os.Getpid(), ABI: r.kernel.ABI, DenyRead: s.DenyRead, Polly: s.Polly, Overlays: overlays,
			Limits: s.Limits, Bash: bash}
		if !r.kernel.UserNS {
			r.nsWhy = r.kernel.NoUserNS
		}
	})
}

// tmpBase is the directory the private temp dirs live in (or on).
func (r *Runner) tmpBase() (string, error) {
	r.tmpOnce.Do(func() {
		r.tmp, r.tmpErr = os.MkdirTemp(r.Setup.TmpDir, "polly-cmd-")
		if r.tmpErr != nil {
			r.tmpErr = fmt.Errorf("no private temp dir for commands (%w); set TMPDIR to a writable directory", r.tmpErr)
		}
	})
	return r.tmp, r.tmpErr
}

// Status is st with what this Runner's helper found: whether commands
// get namespaces (it starts the helper to know).
func (r *Runner) Status(st Status) Status {
	r.init()
	if !st.Active {
		return st
	}
	r.tmpBase()
	h, err := r.helperFor(WorkspaceWrite)
	if err != nil {
		st.Active, st.Why = false, err.Error()
		return st
	}
	defer r.release(h)
	if _, err := r.tmpBase(); err != nil && !h.ns {
		st.Active, st.Why = false, err.Error()
		return st
	}
	r.mu.Lock()
	st.Namespaces, st.NoNamespaces = r.nsWhy == "", r.nsWhy
	r.mu.Unlock()
	return st
}

// Spec is one process to start: bash with Args (["-c", script] and, for
// $0 $1 …, more), in Dir, with Env (TMPDIR is set by the Runner).
type Spec struct {
	Args                  []string
	Dir                   string
	Env                   []string
	Stdin, Stdout, Stderr *os.File // nil: /dev/null
}

// Process is a started command.
type Process struct {
	Pid int // in the helper's PID namespace

	r      *Runner
	h      *helper
	id     uint64
	done   chan reply
	stop   func() bool
	absent []string // protected paths that must not exist after it
	filled []string // approved files Polly created empty for it

	waitOnce sync.Once
	exit     Exit
	removed  []string
	err      error
}

// Exit is how a command ended.
type Exit struct {
	Code   int            // the shell's convention: 128+n for death by signal n
	Signal syscall.Signal // 0 unless killed by a signal
}

// Start starts a process under pol. Cancelling ctx kills it and every
// process it started. An *ApplyError means nothing ran.
func (r *Runner) Start(ctx context.Context, pol Policy, spec Spec) (*Process, error) {
	if !ready.Load() {
		return nil, errors.New("this binary cannot start the sandbox helper (sandbox.RunHelperIfAsked was not called at start-up)")
	}
	r.init()
	if r.bashErr != nil {
		return nil, &ApplyError{Msg: r.bashErr.Error()}
	}
	if pol.Level != Unsandboxed && (r.kernel.ABI < 1 || !r.kernel.Seccomp) {
		return nil, &ApplyError{Msg: "the kernel cannot sandbox this command: " + r.kernel.NoLandlock + r.kernel.NoSeccomp}
	}
	base, tmpErr := r.tmpBase()
	h, err := r.helperFor(pol.Level)
	if err != nil {
		return nil, &ApplyError{Msg: err.Error()}
	}
	id := r.seq.Add(1)
	j := &job{Policy: pol, Args: spec.Args, Dir: spec.Dir, Tmp: base}
	tmp := base
	switch {
	case h.ns && tmpErr != nil:
		// No directory for it (a read-only /tmp): the command's own
		// private /dev/shm serves as its TMPDIR.
		j.Tmp, tmp = "", "/dev/shm"
	case tmpErr != nil:
		r.release(h)
		return nil, &ApplyError{Msg: tmpErr.Error()}
	case !h.ns:
		j.Tmp = filepath.Join(base, strconv.FormatUint(id, 10))
		tmp = j.Tmp
	}
	j.Env = append(slices.DeleteFunc(slices.Clone(spec.Env), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }), "TMPDIR="+tmp)
	p := &Process{r: r, h: h, id: id, done: make(chan reply, 2)}
	if pol.Level == WorkspaceWrite {
		j.Policy.ReadOnly, p.absent = protection(pol, r.gits.nested(pol.Root))
	}
	if pol.Level != Unsandboxed {
		p.filled = fillApproved(pol.Writable)
	}
	files := []*os.File{spec.Stdin, spec.Stdout, spec.Stderr}
	for i, f := range files {
		if f == nil {
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				r.release(h)
				return nil, err
			}
			defer null.Close()
			files[i] = null
		}
	}
	started, err := h.submit(id, j, files, p.done)
	if err != nil {
		p.cleanUp()
		r.release(h)
		return nil, &ApplyError{Msg: err.Error()}
	}
	p.Pid = started
	p.stop = context.AfterFunc(ctx, p.Kill)
	return p, nil
}

// Kill kills the process and everything it started.
func (p *Process) Kill() {
	p.h.send(request{Op: "kill", ID: p.id}, nil)
}

// Wait waits for the process to end. Removed lists the protected paths
// it created, which Polly removed.
func (p *Process) Wait() (Exit, error) {
	p.waitOnce.Do(func() {
		rep := <-p.done
		p.stop()
		if rep.Err != "" {
			p.err = errors.New(rep.Err)
		} else {
			ws := unix.WaitStatus(rep.Status)
			p.exit = Exit{Code: ws.ExitStatus()}
			if ws.Signaled() {
				p.exit = Exit{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
			}
		}
		p.removed = p.cleanUp()
		p.r.release(p.h)
	})
	return p.exit, p.err
}

// Removed lists the protected paths the process created, which Polly
// removed after it (valid after Wait).
func (p *Process) Removed() []string { return p.removed }

// cleanUp removes what must not outlive the command: protected entries
// it created at the project's top, and the empty files Polly made so an
// approved new file could be granted alone.
func (p *Process) cleanUp() []string {
	var removed []string
	for _, a := range p.absent {
		if _, err := os.Lstat(a); err == nil {
			os.RemoveAll(a)
			removed = append(removed, a)
		}
	}
	for _, f := range p.filled {
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			os.Remove(f)
		}
	}
	return removed
}

// fillApproved creates, empty, each approved path that does not exist
// yet (its directory does): Landlock grants only what exists, and
// granting the directory would grant every file in it.
func fillApproved(paths []string) []string {
	var made []string
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			f.Close()
			made = append(made, p)
		}
	}
	return made
}

// Result is a finished command.
type Result struct {
	Exit
	Pid     int      // bash's pid in the helper's PID namespace
	Late    bool     // output was still being written waitDelay after the command ended
	Removed []string // protected paths it created, which Polly removed
	Limit   string   // the resource limit it seems to have hit ("" none)
}

// Run runs script under pol, copying its output to out, until it ends or
// ctx is done (then every process of the command is killed). An
// *ApplyError means the command did not run.
func (r *Runner) Run(ctx context.Context, pol Policy, script, dir string, env []string, out io.Writer, waitDelay time.Duration) (Result, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	p, err := r.Start(ctx, pol, Spec{Args: []string{"-c", script}, Dir: dir, Env: env, Stdout: pw, Stderr: pw})
	pw.Close()
	if err != nil {
		pr.Close()
		return Result{}, err
	}
	watch := &limitWatch{w: out}
	copied := make(chan struct{})
	go func() {
		io.Copy(watch, pr)
		close(copied)
	}()
	exit, err := p.Wait()
	res := Result{Exit: exit, Pid: p.Pid, Removed: p.Removed()}
	if err != nil {
		pr.Close()
		<-copied
		return res, err
	}
	select {
	case <-copied:
	case <-time.After(waitDelay):
		res.Late = true
	}
	pr.Close()
	<-copied
	res.Limit = watch.limit(exit, ctx.Err() != nil, r.Setup.Limits)
	return res, nil
}

// Exec runs bash with args under pol to its end, feeding it stdin and
// copying its stdout and stderr (nil: /dev/null), until it ends or ctx is
// done (then every process of it is killed). Hooks run through it.
func (r *Runner) Exec(ctx context.Context, pol Policy, args []string, dir string, env []string, stdin io.Reader, stdout, stderr io.Writer) (Exit, error) {
	spec := Spec{Args: args, Dir: dir, Env: env}
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	var copies sync.WaitGroup
	pipe := func(w io.Writer) (*os.File, error) {
		if w == nil {
			return nil, nil
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		closers = append(closers, pr, pw)
		copies.Add(1)
		go func() { defer copies.Done(); io.Copy(w, pr) }()
		return pw, nil
	}
	var err error
	if spec.Stdout, err = pipe(stdout); err != nil {
		return Exit{}, err
	}
	if spec.Stderr, err = pipe(stderr); err != nil {
		return Exit{}, err
	}
	var in *os.File
	if stdin != nil {
		pr, pw, err := os.Pipe()
		if err != nil {
			return Exit{}, err
		}
		closers = append(closers, pr)
		spec.Stdin, in = pr, pw
	}
	p, err := r.Start(ctx, pol, spec)
	for _, f := range []*os.File{spec.Stdin, spec.Stdout, spec.Stderr} {
		if f != nil {
			f.Close() // the process has its own copies
		}
	}
	if in != nil {
		go func() { io.Copy(in, stdin); in.Close() }()
	}
	if err != nil {
		if in != nil {
			in.Close()
		}
		return Exit{}, err
	}
	exit, err := p.Wait()
	copies.Wait() // every process of it is gone, so the pipes are at their end
	return exit, err
}

// limitWatch passes output on and remembers whether it showed a limit
// being hit.
type limitWatch struct {
	w                      io.Writer
	procs, mem, fsize, cpu atomic.Bool
}

func (l *limitWatch) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("fork: retry")) || bytes.Contains(b, []byte("fork: Resource temporarily unavailable")) {
		l.procs.Store(true)
	}
	if bytes.Contains(b, []byte("File size limit exceeded")) {
		l.fsize.Store(true)
	}
	if bytes.Contains(b, []byte("CPU time limit exceeded")) {
		l.cpu.Store(true)
	}
	if bytes.Contains(b, []byte("annot allocate")) || bytes.Contains(b, []byte("out of memory")) || bytes.Contains(b, []byte("MemoryError")) {
		l.mem.Store(true)
	}
	return l.w.Write(b)
}

func (l *limitWatch) limit(e Exit, killed bool, lim Limits) string {
	gib := func(n uint64) string {
		if n < 1<<30 {
			return strconv.FormatUint(n>>20, 10) + " MiB"
		}
		return strconv.FormatUint(n>>30, 10) + " GiB"
	}
	switch {
	case e.Signal == unix.SIGXFSZ || e.Code == 128+int(unix.SIGXFSZ) || l.fsize.Load():
		return "file size (" + gib(lim.FileSize) + " per file)"
	case e.Signal == unix.SIGXCPU || e.Code == 128+int(unix.SIGXCPU) || l.cpu.Load():
		return "CPU time (" + strconv.FormatUint(lim.CPUSeconds, 10) + " s per process)"
	case e.Signal == unix.SIGKILL && !killed:
		// Nobody here killed it: the kernel did, at the hard CPU limit
		// (the shell, PID 1 of its namespace, ignores SIGXCPU) or for memory.
		return "CPU time (" + strconv.FormatUint(lim.CPUSeconds, 10) + " s per process), or the kernel ran out of memory"
	case l.procs.Load():
		return "processes (" + strconv.FormatUint(lim.Procs, 10) + " for your user)"
	case l.mem.Load():
		return "address space (" + gib(lim.AddressSpace) + " per process)"
	}
	return ""
}

// helperFor returns the helper a command at level runs in: the namespaced
// one when it can be started, else an idle plain helper or a new one.
func (r *Runner) helperFor(level Level) (*helper, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("the sandbox runner is closed")
	}
	if level != Unsandboxed && r.nsWhy == "" {
		if r.ns != nil && r.ns.alive() {
			h := r.ns
			r.mu.Unlock()
			return h, nil
		}
		r.mu.Unlock()
		h, err := r.spawn(true)
		r.mu.Lock()
		switch {
		case err != nil:
			r.nsWhy = "the helper could not start in namespaces: " + err.Error()
		case r.closed:
			r.mu.Unlock()
			h.close()
			return nil, errors.New("the sandbox runner is closed")
		default:
			if r.ns != nil && r.ns.alive() { // another command started one meanwhile
				old := h
				h = r.ns
				defer old.close()
			}
			r.ns = h
			r.mu.Unlock()
			return h, nil
		}
	}
	for len(r.idle) > 0 {
		h := r.idle[len(r.idle)-1]
		r.idle = r.idle[:len(r.idle)-1]
		if h.alive() {
			r.mu.Unlock()
			return h, nil
		}
	}
	r.mu.Unlock()
	return r.spawn(false)
}

// release gives a plain helper back after its job.
func (r *Runner) release(h *helper) {
	if h.ns {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !h.alive() || len(r.idle) >= 4 {
		go h.close()
		return
	}
	r.idle = append(r.idle, h)
}

// Close stops every helper (which kills whatever still runs) and
// removes the temp dirs.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	all := r.all
	r.all, r.ns, r.idle = nil, nil, nil
	r.mu.Unlock()
	for h := range all {
		h.close()
	}
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
}

// helper is Polly's side of one helper process.
type helper struct {
	ns   bool
	conn *net.UnixConn
	cmd  *exec.Cmd
	wmu  sync.Mutex
	gone chan struct{} // closed when the helper exited
	errs *tailBuffer   // its stderr, for the message when it dies
	mu   sync.Mutex
	jobs map[uint64]chan reply
	dead error
}

func (h *helper) alive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead == nil
}

// spawn starts a helper. Its parent-death signal follows the thread that
// starts it, so that thread is locked and kept until the helper exits.
func (r *Runner) spawn(ns bool) (*helper, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find Polly's executable for the sandbox helper: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox helper socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "polly-sandbox"), os.NewFile(uintptr(fds[1]), "polly-sandbox-helper")
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		theirs.Close()
		return nil, err
	}
	h := &helper{ns: ns, conn: c.(*net.UnixConn), gone: make(chan struct{}), errs: &tailBuffer{}, jobs: map[uint64]chan reply{}}
	cmd := exec.Command(exe, helperArg)
	cmd.Env = []string{}
	if v := os.Getenv(probeEnv); v != "" {
		cmd.Env = append(cmd.Env, probeEnv+"="+v)
	}
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = h.errs
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if ns {
		attr.Cloneflags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
		if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
			// An unprivileged user: a user namespace mapping the user to
			// itself (commands run as the user), with the capabilities the
			// helper needs to mount and clone kept across exec.
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
		}
	}
	cmd.SysProcAttr = attr
	h.cmd = cmd
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends after the helper
		if attr.UidMappings != nil {
			// Go writes the child's uid_map from here; the child's /proc
			// files belong to root while it inherits Polly's non-dumpable
			// flag, so Polly is dumpable until the child has exec'd.
			unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
		}
		err := cmd.Start()
		if attr.UidMappings != nil {
			unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
		}
		if err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		h.fail(fmt.Errorf("the sandbox helper exited (%v)%s", cmd.ProcessState, h.errs.tail()))
		close(h.gone)
	}()
	err = <-started
	theirs.Close()
	if err != nil {
		h.conn.Close()
		return nil, fmt.Errorf("start the sandbox helper: %w", err)
	}
	cfg := r.cfg
	cfg.Namespaces = ns
	cfg.TmpBase = r.tmp
	b, _ := json.Marshal(cfg)
	if _, err := h.conn.Write(b); err != nil {
		h.close()
		return nil, fmt.Errorf("configure the sandbox helper: %w", err)
	}
	h.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := h.conn.Read(buf)
	h.conn.SetReadDeadline(time.Time{})
	var rep reply
	if err == nil {
		err = json.Unmarshal(buf[:n], &rep)
	}
	if err == nil && !rep.Ready {
		err = errors.New(rep.Err)
	}
	if err != nil {
		h.close()
		return nil, fmt.Errorf("%v%s", err, h.errs.tail())
	}
	go h.read()
	r.mu.Lock()
	if r.all == nil {
		r.all = map[*helper]bool{}
	}
	r.all[h] = true
	r.mu.Unlock()
	return h, nil
}

// read dispatches the helper's replies to their jobs.
func (h *helper) read() {
	buf := make([]byte, 64<<10)
	for {
		n, err := h.conn.Read(buf)
		if err != nil || n == 0 {
			h.fail(fmt.Errorf("the sandbox helper stopped answering (%v)", err))
			return
		}
		var rep reply
		if json.Unmarshal(buf[:n], &rep) != nil {
			continue
		}
		h.mu.Lock()
		ch := h.jobs[rep.ID]
		if rep.Done || rep.Err != "" {
			delete(h.jobs, rep.ID)
		}
		h.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
}

// fail ends every job still waiting with err.
func (h *helper) fail(err error) {
	h.mu.Lock()
	if h.dead == nil {
		h.dead = err
	}
	jobs := h.jobs
	h.jobs = map[uint64]chan reply{}
	h.mu.Unlock()
	for _, ch := range jobs {
		ch <- reply{Err: err.Error()}
	}
}

func (h *helper) send(r request, files []*os.File) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, _, err = h.conn.WriteMsgUnix(b, oob, nil)
	return err
}

// submit sends a job and waits until it started (its pid) or failed.
func (h *helper) submit(id uint64, j *job, files []*os.File, done chan reply) (int, error) {
	h.mu.Lock()
	if h.dead != nil {
		err := h.dead
		h.mu.Unlock()
		return 0, err
	}
	h.jobs[id] = done
	h.mu.Unlock()
	if err := h.send(request{Op: "run", ID: id, Job: j}, files); err != nil {
		h.mu.Lock()
		delete(h.jobs, id)
		h.mu.Unlock()
		return 0, fmt.Errorf("send the job to the sandbox helper: %w", err)
	}
	rep := <-done
	if rep.Err != "" {
		return 0, errors.New(rep.Err)
	}
	return rep.Pid, nil
}

// close stops the helper: it sees the socket close and kills its jobs.
func (h *helper) close() {
	h.conn.Close()
	select {
	case <-h.gone:
	case <-time.After(2 * time.Second):
		if h.cmd.Process != nil {
			h.cmd.Process.Kill()
		}
		<-h.gone
	}
}

// tailBuffer keeps the last bytes a helper wrote to stderr.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := strings.TrimSpace(string(t.b)); s != "" {
		return ": " + s
	}
	return ""
}

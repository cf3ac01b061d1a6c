package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// statusFD is where the helper tells Polly whether the sandbox applied:
// "ok", or "error: …" and no command runs.
const statusFD = 3

// exitApply is the helper's exit code when the sandbox could not be applied.
const exitApply = 125

// helperMain is the helper: apply pol, run bash -c script, kill every
// descendant when bash exits or the helper is told to stop.
func helperMain(args []string) int {
	status := os.NewFile(statusFD, "sandbox-status")
	if status == nil {
		fmt.Fprintln(os.Stderr, "polly sandbox helper: no status descriptor; started by hand?")
		return exitApply
	}
	syscall.CloseOnExec(statusFD)
	fail := func(err error) int {
		fmt.Fprintf(status, "error: %v", err)
		status.Close()
		return exitApply
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if len(args) == 1 && args[0] == spareArg {
		// A spare started ahead of time: it says it is ready (Go's
		// start-up is over), then its job comes on jobFD.
		status.WriteString(spareReady)
		job := os.NewFile(jobFD, "sandbox-job")
		b, err := io.ReadAll(io.LimitReader(job, 1<<24))
		job.Close()
		if err != nil || len(b) == 0 {
			return exitApply // Polly closed the spare without a job
		}
		var j spareJob
		if err := json.Unmarshal(b, &j); err != nil {
			return fail(fmt.Errorf("job: %w", err))
		}
		spec, _ := json.Marshal(j.Policy)
		args = []string{string(spec), j.Script}
	}
	if len(args) != 2 {
		return fail(fmt.Errorf("want 2 arguments (policy, script), got %d", len(args)))
	}
	var pol Policy
	if err := json.Unmarshal([]byte(args[0]), &pol); err != nil {
		return fail(fmt.Errorf("policy: %w", err))
	}
	// Orphaned descendants come back to the helper, so it can find and
	// kill them all.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("become subreaper: %w", err))
	}
	if os.Getppid() == 1 {
		return fail(errors.New("the parent (Polly) exited before the command started"))
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return fail(err)
	}
	if pol.Binds {
		if err := bindReadOnly(pol.ReadOnly); err != nil {
			return fail(err)
		}
	}
	// Everything below applies to this thread, which forks bash; it is
	// never unlocked, so no other goroutine runs restricted by accident.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("no_new_privs: %w", err))
	}
	if err := dropCapabilities(); err != nil {
		return fail(err)
	}
	if pol.Level != Unsandboxed {
		if err := applyLandlock(pol); err != nil {
			return fail(fmt.Errorf("landlock: %w", err))
		}
	}
	if err := applySeccomp(pol); err != nil && pol.Level != Unsandboxed {
		return fail(fmt.Errorf("seccomp: %w", err))
	}
	proc, err := os.StartProcess(bash, []string{"bash", "-c", args[1]}, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return fail(fmt.Errorf("start bash: %w", err))
	}
	status.WriteString("ok")
	status.Close()

	done := make(chan int, 1)
	go func() {
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(proc.Pid, &ws, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			switch {
			case err != nil:
				done <- 1
			case ws.Signaled():
				done <- 128 + int(ws.Signal())
			default:
				done <- ws.ExitStatus()
			}
			return
		}
	}()
	var code int
	select {
	case code = <-done:
	case <-sigs:
		code = 128 + int(syscall.SIGKILL) // what the command's processes die of
	}
	killDescendants()
	return code
}

// dropCapabilities empties this thread's capability sets, the bounding set
// (so running a program as root gains nothing) and the ambient set: the
// command cannot read another process's /proc entries, mem or environ.
func dropCapabilities() error {
	for c := 0; c <= 63; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability
		}
		if err != nil && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("drop bounding capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// bindReadOnly makes paths read-only in the helper's own mount namespace
// (Polly started it with CLONE_NEWNS): Landlock can only allow, so a
// read-only directory inside a writable one needs a read-only bind.
func bindReadOnly(paths []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			continue // nothing to protect yet
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link; refusing to protect it by binding", p)
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// devices are writable in every policy (ioctl too: terminals).
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

func applyLandlock(pol Policy) error {
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devices...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts", "/dev/shm").WithIoctlDev().IgnoreIfMissing(),
	}
	writable := pol.Writable
	if !pol.Binds && pol.Level == WorkspaceWrite && pol.Root != "" {
		// No read-only binds: grant the project entry by entry, leaving
		// the protected ones out (new top-level entries cannot be made).
		writable = nil
		for _, w := range pol.Writable {
			if w != pol.Root {
				writable = append(writable, w)
			}
		}
		entries, err := os.ReadDir(pol.Root)
		if err != nil {
			return fmt.Errorf("list the project: %w", err)
		}
		for _, e := range entries {
			p := filepath.Join(pol.Root, e.Name())
			if covered(p, pol.ReadOnly) {
				continue
			}
			if e.IsDir() {
				writable = append(writable, p)
			} else if e.Type().IsRegular() {
				rules = append(rules, landlock.RWFiles(p).IgnoreIfMissing())
			}
		}
	}
	if len(writable) > 0 {
		rw := landlock.RWDirs(writable...).WithRefer()
		if !pol.Network {
			rw = rw.WithResolveUnix() // local sockets inside the writable places
		}
		rules = append(rules, rw.IgnoreIfMissing())
	}
	cfg := landlock.V11.BestEffort()
	if pol.Network {
		// Network granted: do not handle network rights nor pathname
		// UNIX sockets (ssh-agent, docker and the like stay usable).
		// Signals stay scoped: a command must not signal Polly.
		cfg = landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS &^ llsys.AccessFSResolveUnix, Scoped: landlock.V11.Scoped}.BestEffort()
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return errors.New("the kernel enforces no Landlock rules (not enabled at boot?)")
	}
	defer unix.Close(fd)
	return llsys.LandlockRestrictSelf(fd, flags)
}

// covered: p is one of dirs or below one.
func covered(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// seccomp filter: calls no command needs that would let it escape or spy.
var deniedAlways = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "bpf", "perf_event_open", "userfaultfd",
	"mount", "umount2", "pivot_root", "swapon", "swapoff", "reboot", "setns", "unshare",
	"keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"open_by_handle_at", "name_to_handle_at", "acct", "quotactl", "syslog", "iopl", "ioperm",
	"mount_setattr", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
}

const cloneNamespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWPID |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

func applySeccomp(pol Policy) error {
	groups := []seccomp.SyscallGroup{
		{Action: seccomp.ActionErrno, Names: deniedAlways},
		// clone3's flags are behind a pointer the filter cannot read:
		// ENOSYS makes libc fall back to clone, whose flags it can.
		{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
			{Name: "clone", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaces}}},
		}},
	}
	if !pol.Network {
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.EACCES),
			NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
			}})
	}
	// No TSYNC: only this thread (which forks bash) is filtered.
	return seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Policy: seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}})
}

// killDescendants kills every process below the helper until none is
// left. Orphans are re-parented to the helper (a subreaper), so walking
// the children lists finds them all, setsid'd ones included.
func killDescendants() {
	self := os.Getpid()
	for range 1000 {
		reapZombies()
		pids := descendants(self)
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func reapZombies() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// descendants lists the living processes below pid (children first).
func descendants(pid int) []int {
	if _, err := os.Stat("/proc/thread-self/children"); err != nil {
		return descendantsByScan(pid) // kernel without CONFIG_PROC_CHILDREN
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// descendantsByScan finds the processes below pid from every process's
// parent in /proc/<pid>/stat.
func descendantsByScan(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				children[pp] = append(children[pp], p)
			}
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, children[p]...)
		queue = append(queue, children[p]...)
	}
	return out
}

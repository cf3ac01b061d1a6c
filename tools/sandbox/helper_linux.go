package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The helper's side of the socket Polly talks to it on (its fd 3): one
// JSON message per packet (SOCK_SEQPACKET), a job's stdio passed along
// with SCM_RIGHTS.

// helperConfig is the helper's first message: what every command shares.
type helperConfig struct {
	Parent     int       `json:"parent"`     // Polly's pid (checked when the helper is in Polly's PID namespace)
	Namespaces bool      `json:"namespaces"` // started in new user (unless root), mount and PID namespaces
	ABI        int       `json:"abi"`        // the Landlock ABI to use
	DenyRead   []string  `json:"deny_read"`
	Polly      []string  `json:"polly"` // Polly's own files in DenyRead: hidden even from a command that may read secrets
	Overlays   []overlay `json:"overlays"`
	TmpBase    string    `json:"tmp_base"` // the commands' TMPDIR: a tmpfs per command (namespaces) or a directory per command below it
	Limits     Limits    `json:"limits"`
	Bash       string    `json:"bash"`
}

// request is a message from Polly.
type request struct {
	Op  string `json:"op"` // "run" (with three fds: stdin, stdout, stderr) or "kill"
	ID  uint64 `json:"id"`
	Job *job   `json:"job,omitempty"`
}

// job is one command: bash with Args (["-c", script, …]).
type job struct {
	Policy Policy   `json:"policy"`
	Args   []string `json:"args"`
	Dir    string   `json:"dir"`
	Env    []string `json:"env"`
	Tmp    string   `json:"tmp"` // its TMPDIR
}

// reply is a message to Polly: the helper is ready (ID 0), a job started
// (Pid), could not start (Err), or ended (Done, Status).
type reply struct {
	ID     uint64 `json:"id"`
	Ready  bool   `json:"ready,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	Err    string `json:"err,omitempty"`
	Done   bool   `json:"done,omitempty"`
	Status int    `json:"status,omitempty"` // the wait status
}

// helperArg is the hidden subcommand that makes Polly's binary the helper.
const helperArg = "__polly_sandbox_helper"

// helperFD is the helper's end of the socket.
const helperFD = 3

// helperMain is the helper: set up, then run jobs until Polly goes away.
func helperMain() int {
	// The main thread stays this loop's: a job's goroutine locks the
	// thread it lands on, and the main thread must not be one of them.
	runtime.LockOSThread()
	f := os.NewFile(helperFD, "polly-sandbox")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "polly sandbox helper: no socket from Polly; started by hand?")
		return 125
	}
	conn, ok := c.(*net.UnixConn)
	if !ok {
		return 125
	}
	h := &helperServer{conn: conn, pids: map[uint64]int{}}
	buf := make([]byte, 1<<20)
	n, _, _, _, err := conn.ReadMsgUnix(buf, nil)
	if err != nil {
		return 125
	}
	if err := json.Unmarshal(buf[:n], &h.cfg); err != nil {
		h.send(reply{Err: "config: " + err.Error()})
		return 125
	}
	if err := h.setup(); err != nil {
		h.send(reply{Err: err.Error()})
		return 125
	}
	h.send(reply{Ready: true})
	oob := make([]byte, unix.CmsgSpace(3*4))
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			// Polly is gone (or closed us): everything of ours dies.
			h.killAll()
			return 0
		}
		files, ferr := receivedFiles(oob[:oobn])
		var r request
		if err := json.Unmarshal(buf[:n], &r); err != nil {
			closeAll(files)
			continue
		}
		switch r.Op {
		case "run":
			if ferr != nil || len(files) != 3 || r.Job == nil {
				closeAll(files)
				h.send(reply{ID: r.ID, Err: fmt.Sprintf("bad job (%d descriptors, %v)", len(files), ferr)})
				continue
			}
			go h.run(r.ID, r.Job, files)
		case "kill":
			closeAll(files)
			h.kill(r.ID)
		}
	}
}

type helperServer struct {
	cfg  helperConfig
	conn *net.UnixConn
	wmu  sync.Mutex

	mu   sync.Mutex
	pids map[uint64]int // running jobs

	readOnce sync.Once
	readable [2]*readRules // what a command may read without namespaces: [0] without secrets, [1] with
	readErr  error

	offline int // the network namespace commands without network share (only loopback)
}

func (h *helperServer) send(r reply) {
	b, _ := json.Marshal(r)
	h.wmu.Lock()
	h.conn.Write(b)
	h.wmu.Unlock()
}

func (h *helperServer) setup() error {
	// Killed with Polly (Pdeathsig follows the thread that started us,
	// which Polly keeps alive); if Polly is already gone, stop here.
	unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	if pp := os.Getppid(); pp != 0 && pp != h.cfg.Parent {
		// pp is 0 in a new PID namespace; there the socket tells when
		// Polly goes. Polly as PID 1 (a container) is a parent like any.
		return fmt.Errorf("the parent (Polly, pid %d) exited before the helper started (parent now %d)", h.cfg.Parent, pp)
	}
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if h.cfg.Namespaces {
		if err := setupHelperMounts(&h.cfg); err != nil {
			return err
		}
		fd, err := offlineNetwork()
		if err != nil {
			return err
		}
		h.offline = fd
	} else if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become subreaper: %w", err)
	}
	return setLimits(h.cfg.Limits)
}

func (h *helperServer) kill(id uint64) {
	h.mu.Lock()
	pid, ok := h.pids[id]
	h.mu.Unlock()
	if ok {
		// In namespaces bash is PID 1 of its own: the kernel kills every
		// process of the command with it. Without, the group first, then
		// every descendant once bash is reaped.
		unix.Kill(pid, unix.SIGKILL)
		if !h.cfg.Namespaces {
			unix.Kill(-pid, unix.SIGKILL)
		}
	}
}

func (h *helperServer) killAll() {
	h.mu.Lock()
	for _, pid := range h.pids {
		unix.Kill(pid, unix.SIGKILL)
	}
	h.mu.Unlock()
	if !h.cfg.Namespaces {
		killDescendants()
	}
}

// run starts one job on a thread of its own and reports its end.
func (h *helperServer) run(id uint64, j *job, files []*os.File) {
	type started struct {
		pid int
		err error
	}
	ch := make(chan started, 1)
	go func() {
		// The thread takes the command's restrictions and is never
		// unlocked: Go ends it when this goroutine returns, so nothing
		// else ever runs on it (new threads come from an unrestricted
		// template thread). Waiting and cleaning up happen elsewhere.
		runtime.LockOSThread()
		pid, err := h.start(j, files)
		ch <- started{pid, err}
	}()
	st := <-ch
	closeAll(files)
	if st.err != nil {
		h.send(reply{ID: id, Err: st.err.Error()})
		return
	}
	h.mu.Lock()
	h.pids[id] = st.pid
	h.mu.Unlock()
	h.send(reply{ID: id, Pid: st.pid})
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(st.pid, &ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if !h.cfg.Namespaces {
		killDescendants() // one job at a time without namespaces: every orphan is this job's
		if j.Tmp != "" && j.Tmp != h.cfg.TmpBase {
			os.RemoveAll(j.Tmp)
		}
	}
	h.mu.Lock()
	delete(h.pids, id)
	h.mu.Unlock()
	h.send(reply{ID: id, Done: true, Status: int(ws)})
}

// start applies the job's sandbox to this thread and forks bash.
func (h *helperServer) start(j *job, files []*os.File) (int, error) {
	pol := j.Policy
	sandboxed := pol.Level != Unsandboxed
	ns := h.cfg.Namespaces
	attr := &syscall.SysProcAttr{Setsid: true} // a new session: no controlling terminal
	if ns {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return 0, fmt.Errorf("the command's mount namespace: %w", err)
		}
		if err := commandMounts(j.Tmp, pol.ReadOnly, pol.Writable); err != nil {
			return 0, err
		}
		if pol.ReadSecrets {
			if err := revealSecrets(h.cfg.DenyRead, h.cfg.Polly); err != nil {
				return 0, err
			}
		}
		if !pol.Network {
			if err := unix.Setns(h.offline, unix.CLONE_NEWNET); err != nil {
				return 0, fmt.Errorf("enter the offline network namespace: %w", err)
			}
		}
		attr.Cloneflags = unix.CLONE_NEWPID
	} else if j.Tmp != "" && j.Tmp != h.cfg.TmpBase {
		if err := os.Mkdir(j.Tmp, 0o700); err != nil {
			return 0, fmt.Errorf("private TMPDIR: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("no_new_privs: %w", err)
	}
	if sandboxed {
		lj := landlockJob{pol: pol, abi: h.cfg.ABI, ns: ns, tmp: j.Tmp}
		if ns {
			for _, o := range h.cfg.Overlays {
				lj.overlays = append(lj.overlays, o.Dir)
			}
		} else {
			h.readOnce.Do(func() {
				if h.readable[0], h.readErr = newReadRules(h.cfg.DenyRead); h.readErr == nil {
					h.readable[1], h.readErr = newReadRules(h.cfg.Polly)
				}
			})
			if h.readErr != nil {
				return 0, fmt.Errorf("list what commands may read: %w", h.readErr)
			}
			lj.readable = h.readable[0]
			if pol.ReadSecrets {
				lj.readable = h.readable[1]
			}
		}
		if err := applyLandlock(lj); err != nil {
			return 0, fmt.Errorf("landlock: %w", err)
		}
	}
	// Keep CAP_SYS_ADMIN (effective only) for the PID namespace clone;
	// exec empties it: bounding, inheritable and ambient sets are empty.
	if err := dropCapabilities(ns); err != nil {
		return 0, err
	}
	if sandboxed {
		prog, err := buildFilter(filterFor(pol, ns, h.cfg.ABI))
		if err != nil {
			return 0, err
		}
		if err := loadFilter(prog); err != nil {
			return 0, err
		}
	}
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd()
	}
	args, err := h.limitedArgs(j.Args)
	if err != nil {
		return 0, err
	}
	pid, err := syscall.ForkExec(h.cfg.Bash, append([]string{"bash"}, args...), &syscall.ProcAttr{
		Dir: j.Dir, Env: j.Env, Files: fds, Sys: attr,
	})
	if err != nil {
		return 0, fmt.Errorf("start bash: %w", err)
	}
	return pid, nil
}

// filterFor is the seccomp filter's variable part for one command.
func filterFor(pol Policy, ns bool, abi int) filterSpec {
	var s filterSpec
	if abi >= 9 {
		s.sockets = append(s.sockets, unix.AF_UNIX) // Landlock scopes pathname sockets
	}
	if pol.Network || ns {
		// With the network, or in a network namespace of its own (only
		// loopback): IP and netlink; never packet, vsock or the rest.
		s.sockets = append(s.sockets, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK)
	}
	s.truncate = abi < 3
	return s
}

// dropCapabilities empties this thread's capability sets but, when
// keepAdmin, an effective CAP_SYS_ADMIN for cloning the PID namespace.
// The bounding and ambient sets are emptied too, so the command gains
// nothing at exec, not even as root.
func dropCapabilities(keepAdmin bool) error {
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
	if keepAdmin {
		data[0].Effective = 1 << unix.CAP_SYS_ADMIN
		data[0].Permitted = 1 << unix.CAP_SYS_ADMIN
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// Limits are per-command resource limits (0: the inherited one).
type Limits struct {
	Procs        uint64 `json:"procs"`         // processes of the user (RLIMIT_NPROC)
	FileSize     uint64 `json:"file_size"`     // bytes (RLIMIT_FSIZE)
	CPUSeconds   uint64 `json:"cpu_seconds"`   // per process (RLIMIT_CPU)
	AddressSpace uint64 `json:"address_space"` // bytes per process (RLIMIT_AS)
}

// limitedArgs has bash lower the CPU-time and address-space limits
// itself, with its ulimit builtin, before the command's first word: the
// helper cannot live under them (a Go runtime reserves about a GiB of
// address space; the helper's CPU time adds up over a session) and
// cannot set them between fork and exec, and setting them on bash from
// outside once it has started would race its first fork. Every job is
// bash -c; the prefix adds no line, so bash's messages keep their line
// numbers. Only lowered: a limit the user set lower stays.
func (h *helperServer) limitedArgs(args []string) ([]string, error) {
	l := h.cfg.Limits
	if l.CPUSeconds == 0 && l.AddressSpace == 0 {
		return args, nil
	}
	if len(args) < 2 || args[0] != "-c" {
		return nil, fmt.Errorf("the command's limits: not a bash -c job (%q)", args)
	}
	var soft, hard []string
	for _, r := range []struct {
		res  int
		flag string
		v    uint64 // bytes or seconds
		unit uint64 // ulimit's unit, in bytes or seconds
	}{{unix.RLIMIT_CPU, "-t", l.CPUSeconds, 1}, {unix.RLIMIT_AS, "-v", l.AddressSpace, 1024}} {
		if r.v == 0 {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.res, &cur); err != nil {
			return nil, fmt.Errorf("the command's limits: %w", err)
		}
		s, h := r.v/r.unit, r.v/r.unit
		if r.res == unix.RLIMIT_CPU {
			h = s + 5 // SIGXCPU first (a message), SIGKILL 5 s later
		}
		if cur.Cur != unix.RLIM_INFINITY {
			s = min(s, cur.Cur/r.unit)
		}
		if cur.Max != unix.RLIM_INFINITY {
			h = min(h, cur.Max/r.unit)
		}
		soft = append(soft, r.flag, strconv.FormatUint(min(s, h), 10))
		hard = append(hard, r.flag, strconv.FormatUint(h, 10))
	}
	// The soft limits first: a hard limit below the soft one is refused.
	prefix := "builtin ulimit -S " + strings.Join(soft, " ") + " && builtin ulimit -H " + strings.Join(hard, " ") +
		" || { echo 'polly: could not set the limits on this command' >&2; exit 125; }; "
	return append([]string{"-c", prefix + args[1]}, args[2:]...), nil
}

// setLimits sets the helper's own limits, which every command inherits
// from its first instruction: processes (a count of the user's; the
// helper forks little) and file size (the helper writes no file). CPU
// time and address space are limitedArgs'. Only lowered: a limit the
// user set lower stays. The kernel does not apply RLIMIT_NPROC to root.
func setLimits(l Limits) error {
	for _, r := range []struct {
		res int
		v   uint64
	}{{unix.RLIMIT_NPROC, l.Procs}, {unix.RLIMIT_FSIZE, l.FileSize}} {
		if r.v == 0 {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.res, &cur); err != nil {
			return fmt.Errorf("read limit %d: %w", r.res, err)
		}
		v := min(r.v, cur.Max)
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("set limit %d: %w", r.res, err)
		}
	}
	return nil
}

func receivedFiles(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "job-fd"))
		}
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

func closeFD(fd int) { unix.Close(fd) }

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

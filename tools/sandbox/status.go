package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// Status is what the sandbox can do on this machine with these settings.
// The permission side reads Active and Refuse: when the sandbox is not
// active, every command asks (or is refused with mode on).
type Status struct {
	Mode   Mode
	Active bool   // commands run in the OS sandbox
	Refuse bool   // mode on without kernel support: commands must not run
	Why    string // why it is not active ("" when it is)
	ABI    int    // Landlock ABI version used (0: none)
	Kernel Kernel // what the kernel offers (as probed, or as forced by POLLY_SANDBOX_PROBE)
	// Namespaces says whether commands get their own user, mount, PID and
	// network namespaces. Resolve guesses it from the kernel's settings; a
	// Runner's Status knows it once its helper started. NoNamespaces is why not.
	Namespaces   bool
	NoNamespaces string
}

// Kernel is what the kernel enforces for the sandbox.
type Kernel struct {
	ABI        int    // Landlock ABI (0: none)
	NoLandlock string // why there is none
	Seccomp    bool   // seccomp filters for this architecture
	NoSeccomp  string // why not
	UserNS     bool   // namespaces look available (known for sure only when the helper starts)
	NoUserNS   string // why not
	Forced     string // POLLY_SANDBOX_PROBE's value, when set
}

// Resolve combines the settings with a probe of the kernel. The sandbox
// is active only when both Landlock and seccomp work: without either,
// file writes or the network and the kernel's attack surface would be
// unguarded, so Polly fails closed (every command asks).
func Resolve(s Settings) Status {
	st := Status{Mode: s.Mode}
	if st.Mode == "" {
		st.Mode = ModeAuto
	}
	k := Probe()
	st.Kernel = k
	st.Namespaces, st.NoNamespaces = k.UserNS, k.NoUserNS
	if st.Mode == ModeOff {
		st.Why = "sandbox.mode is off"
		return st
	}
	switch {
	case k.ABI < 1:
		st.Why = k.NoLandlock
	case !k.Seccomp:
		st.Why = k.NoSeccomp
	default:
		st.Active, st.ABI = true, k.ABI
		return st
	}
	st.Refuse = st.Mode == ModeOn
	return st
}

// Notice is the one-line message for stderr and the status bar when the
// sandbox is not active, or "".
func (s Status) Notice() string {
	switch {
	case s.Active:
		return ""
	case s.Refuse:
		return "sandbox unavailable (" + s.Why + "); sandbox.mode is on, so commands will not run"
	case s.Mode == ModeOff:
		return "sandbox off (sandbox.mode off): commands run without the OS sandbox"
	}
	return "sandbox unavailable (" + s.Why + "): every command asks but a few that only read project files"
}

// Short is the status bar label.
func (s Status) Short() string {
	switch {
	case s.Active:
		return "sandbox on"
	case s.Refuse:
		return "sandbox unavailable: commands refused"
	case s.Mode == ModeOff:
		return "sandbox off"
	}
	return "no sandbox: asking"
}

// Protection is one promise of the sandbox and how this machine keeps it.
type Protection struct {
	Name string
	How  string // how it is enforced, or what Polly does instead
	Held bool   // false: not enforced here (the policy fails closed where it says so)
}

// Protections lists, for this machine, each protection and how it is
// enforced — what `polly sandbox` prints.
func (s Status) Protections() []Protection {
	if !s.Active {
		why := s.Why
		instead := "every command asks first (read-only ones included, but a few pure ones), and an approved one runs unsandboxed"
		if s.Refuse {
			instead = "commands are refused (sandbox.mode on)"
		}
		if s.Mode == ModeOff {
			instead = "commands run without Landlock and seccomp; the helper still drops capabilities, scrubs the environment, leaves them without a terminal and kills their leftover processes"
		}
		return []Protection{{Name: "sandbox", How: "not active: " + why + "; " + instead}}
	}
	ns := s.Namespaces
	abi := s.ABI
	var p []Protection
	add := func(name, how string, held bool) { p = append(p, Protection{name, how, held}) }

	add("file writes", fmt.Sprintf("Landlock ABI %d: the project, the private temp dir and the build caches; nothing else", abi), true)
	if ns {
		add("protected paths in the project", "read-only bind mounts in the command's own mount namespace: every .git (nested ones, .git files, commondir), .agent, AGENTS.md, CLAUDE.md, .claude/, .agents/, .mcp.json; new ones a command creates at the top are removed when it ends; anything else new in the project is writable", true)
		add("secrets (deny-read)", "an empty read-only tmpfs (directories) or an unopenable file mounted over each path: ~/.ssh, ~/.aws, ~/.gnupg, ~/.netrc, ~/.docker, ~/.kube, ~/.config/gh, Polly's config and trust store, keyrings, browser profiles, sandbox.deny_read", true)
		add("network off", "the command's own network namespace with only loopback up (tests on 127.0.0.1 work, nothing leaves)", true)
		add("processes", "own PID namespace per command: bash is its PID 1 and killing it kills every process it started; /proc shows only the helper and this Polly's commands, never Polly or your other processes", true)
		add("temp dirs", "a private tmpfs per command for $TMPDIR and /dev/shm", true)
		add("caches", "~/.cache and ~/.npm are a throwaway tmpfs with their entries bound back read-only (GOMODCACHE, ~/.npm/_npx, ~/.cargo/registry, pre-commit and Polly's own cache stay read-only); GOCACHE and ~/.npm/_cacache are writable", true)
		add("terminal", "a new session with no controlling terminal (/dev/tty cannot be opened); the helper's own /dev with a private devpts, so the user's terminals are not there; seccomp refuses TIOCSTI and TIOCLINUX", true)
	} else {
		add("protected paths in the project", "no namespaces ("+s.NoNamespaces+"): Landlock grants the project entry by entry around them, so a command cannot create a new entry next to a protected one (the project's top, a nested repository's parent) and git commands cannot write .git (the file tools still can)", true)
		add("secrets (deny-read)", "no namespaces: Landlock read rules granted around each path (their names can be listed, their contents not read)", true)
		add("network off", "no namespaces: seccomp refuses every socket but UNIX ones Landlock can scope, and Landlock refuses TCP; loopback servers in tests do not work", true)
		add("processes", "no namespaces: Landlock grants no /proc/<pid> (other processes' command lines are unreadable); the helper, a subreaper running one command at a time, kills every descendant", true)
		add("temp dirs", "no namespaces: a private directory per command for $TMPDIR, removed after it; /dev/shm is not writable", true)
		add("caches", "no namespaces: only GOCACHE and ~/.npm/_cacache are writable; everything else in the home is read-only", true)
		add("terminal", "a new session with no controlling terminal (/dev/tty cannot be opened); Landlock grants no terminal device; seccomp refuses TIOCSTI and TIOCLINUX", true)
	}
	if abi >= 9 {
		add("UNIX sockets", "Landlock ABI 9+: connecting to a pathname socket only inside the writable places; abstract ones scoped by Landlock", true)
	} else {
		add("UNIX sockets", fmt.Sprintf("Landlock ABI %d cannot scope pathname sockets, so seccomp refuses creating AF_UNIX sockets (socketpair still works); SSH_AUTH_SOCK, TMUX, DBUS_SESSION_BUS_ADDRESS, DOCKER_HOST are not passed", abi), true)
	}
	if abi >= 6 {
		add("signals and abstract sockets", "Landlock scopes them: a command can signal or reach only its own processes", true)
	} else if ns {
		add("signals and abstract sockets", fmt.Sprintf("Landlock ABI %d has no scopes; the PID and network namespaces keep Polly and other programs out of reach", abi), true)
	} else {
		add("signals and abstract sockets", fmt.Sprintf("not held: Landlock ABI %d has no scopes and there are no namespaces, so a command could signal your other processes (abstract sockets stay refused with AF_UNIX)", abi), false)
	}
	add("foreign architectures", archNote(), true)
	add("kernel attack surface", "seccomp refuses ptrace, process_vm_*, bpf, perf_event_open, userfaultfd, io_uring, keyctl, mount APIs, unshare, setns, user-namespace clone (clone3: ENOSYS), kexec, modules", true)
	if os.Geteuid() == 0 {
		add("limits", "rlimits on file size, CPU time and address space (below); a command that hits one is told which. The number of processes is not limited: the kernel does not apply RLIMIT_NPROC to root", true)
	} else {
		add("limits", "rlimits on processes, file size, CPU time and address space (below); a command that hits one is told which", true)
	}
	add("environment", "credential-looking variables and SSH_AUTH_SOCK, TMUX, DBUS_SESSION_BUS_ADDRESS, DOCKER_HOST (and the like) are removed unless sandbox.pass_env names them", true)
	return p
}

// Report is `polly sandbox`: the status and each protection.
func (s Status) Report() string {
	var b strings.Builder
	switch {
	case s.Active:
		fmt.Fprintf(&b, "sandbox: on (mode %s, Landlock ABI %d", s.Mode, s.ABI)
		if s.Namespaces {
			b.WriteString(", user/mount/PID/network namespaces")
		} else {
			b.WriteString(", no namespaces: " + s.NoNamespaces)
		}
		b.WriteString(")\n")
	default:
		fmt.Fprintf(&b, "sandbox: %s\n", s.Short())
	}
	if s.Kernel.Forced != "" {
		fmt.Fprintf(&b, "POLLY_SANDBOX_PROBE=%s: the probe is forced\n", s.Kernel.Forced)
	}
	for _, p := range s.Protections() {
		mark := "ok"
		if !p.Held {
			mark = "NO"
		}
		fmt.Fprintf(&b, "%s  %s\n", mark, p.Name)
		for _, line := range wrap(p.How, 96) {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	return b.String()
}

// wrap breaks s into lines of at most width bytes at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// Package sandbox runs the commands Polly executes for the model inside an
// OS sandbox. The policy is data (Policy); a hidden subcommand of Polly's own
// binary (the helper, see RunHelperIfAsked) applies it — no_new_privs, no
// capabilities, Landlock, seccomp, read-only binds — and then runs
// `bash -c`, staying as a subreaper that kills every descendant when bash
// exits, when it is signalled or when Polly dies.
//
// Go cannot run code between fork and exec, which is why the restrictions
// are applied in a re-executed helper and not in Polly itself.
package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Level is how much a command may write.
type Level int

const (
	// Unsandboxed: no Landlock and no seccomp (sandbox off, or the kernel
	// lacks Landlock and a person approved the command). The helper still
	// drops capabilities, scrubs the environment and kills descendants.
	Unsandboxed Level = iota
	// ReadOnly: reads anywhere; writes only to the private TMPDIR and
	// /dev/null-like devices.
	ReadOnly
	// WorkspaceWrite: ReadOnly plus the project root and the build caches.
	// .agent/ stays read-only; .git/ too unless the line is git only.
	WorkspaceWrite
)

func (l Level) String() string {
	switch l {
	case Unsandboxed:
		return "unsandboxed"
	case ReadOnly:
		return "read-only"
	case WorkspaceWrite:
		return "workspace-write"
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// Grant is what the permission gate allowed one command: the sandbox it
// runs in and whether it may use the network.
type Grant struct {
	Level    Level
	Network  bool
	Writable []string // extra writable paths a person approved (writes outside the project)
}

func (g Grant) String() string {
	s := g.Level.String()
	if g.Network {
		s += "+network"
	}
	return s
}

type grantKey struct{}

// WithGrant marks ctx with the grant of the call about to run.
func WithGrant(ctx context.Context, g Grant) context.Context {
	return context.WithValue(ctx, grantKey{}, g)
}

// GrantFrom returns the grant set by WithGrant.
func GrantFrom(ctx context.Context) (Grant, bool) {
	g, ok := ctx.Value(grantKey{}).(Grant)
	return g, ok
}

// Mode is the config's sandbox.mode.
type Mode string

const (
	ModeAuto Mode = "auto" // use it where the kernel has Landlock, else ask more and say so
	ModeOn   Mode = "on"   // refuse to run commands without it
	ModeOff  Mode = "off"  // never (explicit, shown)
)

// Settings are the user's sandbox configuration.
type Settings struct {
	Mode          Mode
	Network       bool     // commands may use the network without asking
	WritableRoots []string // extra writable directories in workspace-write (absolute)
	PassEnv       []string // credential-like variables passed to commands anyway
}

// Status is what the sandbox can do on this machine with these settings.
type Status struct {
	Mode   Mode
	Active bool   // commands run in the OS sandbox
	Refuse bool   // mode on without kernel support: commands must not run
	Why    string // why it is not active ("" when it is)
	ABI    int    // Landlock ABI version (0: none)
}

// Resolve combines the settings with a probe of the kernel.
func Resolve(s Settings) Status {
	st := Status{Mode: s.Mode}
	if st.Mode == "" {
		st.Mode = ModeAuto
	}
	if st.Mode == ModeOff {
		st.Why = "sandbox.mode is off"
		return st
	}
	abi, err := Probe()
	st.ABI = abi
	switch {
	case err != nil:
		st.Why = err.Error()
		st.Refuse = st.Mode == ModeOn
	default:
		st.Active = true
	}
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

// Policy is everything the helper needs to apply one command's sandbox.
// It travels to the helper on its command line (it holds no secret); a
// command that starts the helper again can only add restrictions, because
// Landlock and seccomp domains stack.
type Policy struct {
	Level    Level    `json:"level"`
	Network  bool     `json:"network"`
	Writable []string `json:"writable"`  // directories (and files) writable
	ReadOnly []string `json:"read_only"` // kept read-only inside writable ones (bind-mounted when possible)
	// Entries: when read-only binds are not possible, the writable
	// project is granted entry by entry, leaving out ReadOnly ones.
	Root   string `json:"root"`
	Binds  bool   `json:"binds"` // the helper is in its own mount namespace and may bind
	TmpDir string `json:"tmpdir"`
}

// Plan is the input to Build: a command about to run.
type Plan struct {
	Grant    Grant
	Root     string // project root (absolute)
	StateDir string // Polly's .agent directory ("" is Root/.agent)
	TmpDir   string // the private TMPDIR
	Caches   []string
	Command  string
}

// Build turns a grant into a policy.
func Build(p Plan) Policy {
	pol := Policy{Level: p.Grant.Level, Network: p.Grant.Network || p.Grant.Level == Unsandboxed, Root: p.Root, TmpDir: p.TmpDir}
	if p.Grant.Level == Unsandboxed {
		return pol
	}
	pol.Writable = []string{p.TmpDir}
	if p.Grant.Level == WorkspaceWrite {
		pol.Writable = append(pol.Writable, p.Root)
		for _, w := range p.Grant.Writable {
			// A file that does not exist yet: its directory (Landlock
			// can only grant what exists).
			if _, err := os.Lstat(w); err != nil {
				w = filepath.Dir(w)
			}
			if !slices.Contains(pol.Writable, w) {
				pol.Writable = append(pol.Writable, w)
			}
		}
		for _, c := range p.Caches {
			if c != "" && !slices.Contains(pol.Writable, c) {
				pol.Writable = append(pol.Writable, c)
			}
		}
		state := p.StateDir
		if state == "" {
			state = filepath.Join(p.Root, ".agent")
		}
		pol.ReadOnly = append(pol.ReadOnly, state)
		git := filepath.Join(p.Root, ".git")
		if GitOnly(p.Command) {
			pol.ReadOnly = append(pol.ReadOnly, filepath.Join(git, "hooks"), filepath.Join(git, "config"))
		} else {
			pol.ReadOnly = append(pol.ReadOnly, git)
		}
	}
	return pol
}

// DefaultCaches lists the build caches common toolchains write: Go's
// build and module caches, ~/.cache, ~/.npm, ~/.cargo/registry.
func DefaultCaches(home string, getenv func(string) string) []string {
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, p) {
			out = append(out, filepath.Clean(p))
		}
	}
	cache := getenv("XDG_CACHE_HOME")
	if cache == "" && home != "" {
		cache = filepath.Join(home, ".cache")
	}
	add(cache)
	add(getenv("GOCACHE"))
	if gp := getenv("GOMODCACHE"); gp != "" {
		add(gp)
	} else if gopath := getenv("GOPATH"); gopath != "" {
		add(filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "pkg", "mod"))
	} else if home != "" {
		add(filepath.Join(home, "go", "pkg", "mod"))
	}
	if home != "" {
		add(filepath.Join(home, ".npm"))
		add(filepath.Join(home, ".cargo", "registry"))
	}
	return out
}

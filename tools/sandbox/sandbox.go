// Package sandbox runs the commands Polly executes for the model inside an
// OS sandbox. The policy is data (Policy, built by Build); a long-lived
// helper (the zygote, see Runner) applies it to each command.
//
// The zygote is Polly's own binary started once per Polly process, in its
// own user, mount and PID namespaces where the kernel allows. For every
// command it takes a fresh OS thread, gives that thread its own mount (and,
// without network, network) namespace, mounts what the command may and may
// not see, drops every capability, applies Landlock and a seccomp filter,
// and forks bash as PID 1 of a new PID namespace, so killing bash kills
// every process the command started. The thread is then thrown away.
//
// Go cannot run code between fork and exec, which is why the restrictions
// are applied to a thread of a separate process and not in Polly itself.
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
	// lacks what the sandbox needs and a person approved the command). The
	// helper still drops capabilities, scrubs the environment, leaves the
	// command without a terminal and kills its descendants.
	Unsandboxed Level = iota
	// ReadOnly: reads anywhere but the deny-read set; writes only to the
	// private TMPDIR and /dev/shm and to /dev/null-like devices.
	ReadOnly
	// WorkspaceWrite: ReadOnly plus the project (minus its protected
	// paths) and the self-contained build caches.
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
	// ReadSecrets lifts the deny-read set for this command (a person
	// approved reading it, or yolo) — all of it but Polly's own files.
	ReadSecrets bool
}

func (g Grant) String() string {
	s := g.Level.String()
	if g.Network {
		s += "+network"
	}
	if g.ReadSecrets {
		s += "+secrets"
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
	ModeAuto Mode = "auto" // use it where the kernel can, else ask more and say so
	ModeOn   Mode = "on"   // refuse to run commands without it
	ModeOff  Mode = "off"  // never (explicit, shown)
)

// Settings are the user's sandbox configuration.
type Settings struct {
	Mode          Mode
	Network       bool     // commands may use the network without asking
	WritableRoots []string // extra writable directories in workspace-write (absolute)
	PassEnv       []string // credential-like variables passed to commands anyway
	DenyRead      []string // paths no command may read, on top of DefaultDenyRead (absolute)
}

// Policy is one command's sandbox as the helper applies it. Build makes
// it from a grant; the Runner adds what it finds on disk (the protected
// paths that exist) before the helper gets it. It holds no secret.
type Policy struct {
	Level   Level  `json:"level"`
	Network bool   `json:"network"`
	Root    string `json:"root"`     // the project
	State   string `json:"state"`    // Polly's .agent directory
	GitOnly bool   `json:"git_only"` // the line is plain git: the top .git is writable but for hooks and config
	// ReadSecrets: the deny-read set is readable but for Polly's own files.
	ReadSecrets bool `json:"read_secrets,omitempty"`
	// Writable are the places besides the project and the private temp
	// dir a command may write: in workspace-write the build caches and
	// configured roots; at any level what a person approved (a single
	// file stays a file) or an MCP server's config declares.
	Writable []string `json:"writable"`
	// ReadOnly are the protected paths inside writable ones, filled in
	// by the Runner from what exists when the command starts.
	ReadOnly []string `json:"read_only,omitempty"`
}

// Plan is the input to Build: a command about to run.
type Plan struct {
	Grant    Grant
	Root     string // project root (absolute)
	StateDir string // Polly's .agent directory ("" is Root/.agent)
	Caches   []string
	Command  string
}

// Build turns a grant into a policy.
func Build(p Plan) Policy {
	pol := Policy{Level: p.Grant.Level, Network: p.Grant.Network || p.Grant.Level == Unsandboxed, Root: p.Root, State: p.StateDir,
		ReadSecrets: p.Grant.ReadSecrets}
	if pol.State == "" && p.Root != "" {
		pol.State = filepath.Join(p.Root, ".agent")
	}
	if p.Grant.Level == Unsandboxed {
		return pol
	}
	// Read-only keeps only what a person (or an MCP server's config)
	// granted; workspace-write adds the caches.
	extra := p.Grant.Writable
	if p.Grant.Level == WorkspaceWrite {
		pol.GitOnly = GitOnly(p.Command)
		extra = append(slices.Clone(p.Caches), extra...)
	}
	for _, w := range extra {
		if w != "" && filepath.IsAbs(w) && !slices.Contains(pol.Writable, filepath.Clean(w)) {
			pol.Writable = append(pol.Writable, filepath.Clean(w))
		}
	}
	return pol
}

// DefaultCaches lists the build caches a workspace-write command may
// write: only caches that the build that wrote them reads back, checked
// by content (Go's GOCACHE, npm's content-addressed _cacache). Module and
// package caches that other programs later run code from (GOMODCACHE,
// ~/.npm/_npx, ~/.cargo/registry, pre-commit's) are not in it.
func DefaultCaches(home string, getenv func(string) string) []string {
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	if gc := getenv("GOCACHE"); gc != "" && gc != "off" {
		add(gc)
	} else if cache := cacheHome(home, getenv); cache != "" {
		add(filepath.Join(cache, "go-build"))
	}
	if home != "" {
		add(filepath.Join(home, ".npm", "_cacache"))
	}
	return out
}

// cacheHome is $XDG_CACHE_HOME, else ~/.cache.
func cacheHome(home string, getenv func(string) string) string {
	if c := getenv("XDG_CACHE_HOME"); filepath.IsAbs(c) {
		return filepath.Clean(c)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".cache")
}

// configHome is $XDG_CONFIG_HOME, else ~/.config.
func configHome(home string, getenv func(string) string) string {
	if c := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(c) {
		return filepath.Clean(c)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config")
}

// DefaultDenyRead is what no command reads: credentials in the home
// directory (ssh, cloud and container tools, gh, git's stored
// credentials, keyrings, password stores, browser profiles), Polly's own
// config and trust store (they hold API keys) and, when Polly runs as
// root, the system's own secrets. extra (sandbox.deny_read) is added.
func DefaultDenyRead(home string, getenv func(string) string, extra []string) []string {
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	if home != "" {
		for _, rel := range []string{
			".ssh", ".aws", ".gnupg", ".netrc", ".docker", ".kube", ".git-credentials", ".pypirc",
			".cargo/credentials", ".cargo/credentials.toml", ".azure", ".password-store", ".pki",
			".local/share/keyrings", ".mozilla", ".thunderbird", "snap/firefox", "snap/chromium",
		} {
			add(filepath.Join(home, rel))
		}
	}
	out = append(out, PollyFiles(home, getenv)...)
	if cfg := configHome(home, getenv); cfg != "" {
		for _, rel := range []string{
			"gh", "hub", "gcloud", "git/credentials", "google-chrome", "chromium", "BraveSoftware",
			"microsoft-edge", "vivaldi", "opera",
		} {
			add(filepath.Join(cfg, rel))
		}
	}
	if os.Geteuid() == 0 {
		for _, p := range []string{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private"} {
			add(p)
		}
		if keys, _ := filepath.Glob("/etc/ssh/ssh_host_*_key"); len(keys) > 0 {
			for _, k := range keys {
				add(k)
			}
		}
	}
	for _, p := range extra {
		if strings.HasPrefix(p, "~/") && home != "" {
			p = filepath.Join(home, p[2:])
		}
		add(p)
	}
	return out
}

// protectedNames are the entries at the project's top that commands may
// not change in workspace-write: the repository, Polly's state and the
// files that instruct agents and start programs.
var protectedNames = []string{".git", ".agent", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", ".claude", ".agents", ".mcp.json"}

// ProtectedNames returns the names at a project's top that commands may
// not create, change or remove (every nested .git is protected too).
func ProtectedNames() []string { return slices.Clone(protectedNames) }

// PollyFiles are Polly's own files no command reads, even when a person
// lets it read the rest of the deny-read set: its config and trust
// store (API keys) and its state.
func PollyFiles(home string, getenv func(string) string) []string {
	var out []string
	if cfg := configHome(home, getenv); cfg != "" {
		out = append(out, filepath.Join(cfg, "polly"))
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".local", "state", "polly"))
	}
	if p := getenv("POLLY_CONFIG"); filepath.IsAbs(p) {
		out = append(out, filepath.Clean(p))
	}
	return out
}

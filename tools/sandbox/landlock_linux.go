package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// abiConfigs are go-landlock's configurations by ABI version.
var abiConfigs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// Access rights by kind of path (a file rule takes file rights only).
const (
	fileRead  landlock.AccessFSSet = llsys.AccessFSReadFile | llsys.AccessFSExecute
	fileWrite landlock.AccessFSSet = fileRead | llsys.AccessFSWriteFile | llsys.AccessFSTruncate
)

// safeDevices are the devices every command may read, write and ioctl.
var safeDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// landlockJob is what one command's ruleset depends on.
type landlockJob struct {
	pol      Policy
	abi      int
	ns       bool     // the command has its own mounts: deny-read, /dev and /proc are done
	tmp      string   // its private TMPDIR
	overlays []string // throwaway cache tmpfs (ns only): writable in workspace-write
	readable *readRules
}

// applyLandlock restricts the calling thread (and what it forks).
func applyLandlock(j landlockJob) error {
	if j.abi < 1 || j.abi >= len(abiConfigs) {
		return fmt.Errorf("no Landlock configuration for ABI %d", j.abi)
	}
	base := abiConfigs[j.abi]
	cfg := landlock.Config{HandledAccessFS: base.HandledAccessFS, Scoped: base.Scoped}
	if !j.ns && !j.pol.Network {
		// Without a network namespace, TCP is refused by Landlock too
		// (seccomp refuses the sockets already).
		cfg.HandledAccessNet = base.HandledAccessNet
	}
	rules, err := landlockRules(j, cfg.HandledAccessFS)
	if err != nil {
		return err
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return errors.New("the kernel enforces no Landlock rules (not enabled at boot?)")
	}
	defer closeFD(fd)
	return llsys.LandlockRestrictSelf(fd, flags)
}

// landlockRules are the job's rules; a rule may only name rights the
// ruleset handles (an old ABI handles fewer), so access masks them.
func landlockRules(j landlockJob, handled landlock.AccessFSSet) ([]landlock.Rule, error) {
	access := func(a landlock.AccessFSSet, paths ...string) landlock.FSRule {
		return landlock.PathAccess(a&handled, paths...).IgnoreIfMissing()
	}
	pol := j.pol
	var rules []landlock.Rule
	if j.ns {
		// Secrets, other processes and host devices are not mounted in.
		rules = append(rules, landlock.RODirs("/"), landlock.RWDirs("/dev/pts", "/dev/shm").WithIoctlDev().IgnoreIfMissing())
	} else {
		rules = append(rules, j.readable.rules(access)...)
	}
	rules = append(rules, access(fileWrite|llsys.AccessFSIoctlDev, safeDevices...))
	writable := []string{}
	if j.tmp != "" {
		writable = append(writable, j.tmp)
	}
	writable = append(writable, pol.Writable...)
	if pol.Level == WorkspaceWrite {
		writable = append(writable, j.overlays...)
		if pol.Root != "" && j.ns {
			writable = append(writable, pol.Root) // protected paths are read-only binds
		}
	}
	for _, w := range writable {
		fi, err := os.Stat(w)
		switch {
		case err != nil:
			continue // an approved path that vanished; a missing cache
		case fi.IsDir():
			rw := landlock.RWDirs(w).WithRefer()
			if j.abi >= 9 {
				rw = rw.WithResolveUnix() // the command's own sockets
			}
			rules = append(rules, rw.IgnoreIfMissing())
		default:
			rules = append(rules, access(fileWrite, w))
		}
	}
	if pol.Level == WorkspaceWrite && pol.Root != "" && !j.ns {
		// No mounts: grant the project around its protected paths (and
		// the whole .git: a bind cannot keep its hooks read-only here).
		protected := append(slices.Clone(pol.ReadOnly), filepath.Join(pol.Root, ".git"))
		err := around(pol.Root, protected, func(p string, dir bool) {
			if dir {
				rules = append(rules, landlock.RWDirs(p).WithRefer().IgnoreIfMissing())
			} else {
				rules = append(rules, access(fileWrite, p))
			}
		}, nil)
		if err != nil {
			return nil, fmt.Errorf("grant the project: %w", err)
		}
	}
	return rules, nil
}

// around calls grant for every entry below root that is neither one of
// excluded nor holds one, descending into those that hold one (calling
// parent for each of them). Symbolic links are never granted: Landlock
// would grant their target.
func around(root string, excluded []string, grant func(p string, dir bool), parent func(p string)) error {
	if !holdsAny(root, excluded) {
		fi, err := os.Lstat(root)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		grant(root, fi.IsDir())
		return nil
	}
	if parent != nil {
		parent(root)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(root, e.Name())
		switch {
		case slices.Contains(excluded, p), e.Type()&os.ModeSymlink != 0:
		case holdsAny(p, excluded):
			if err := around(p, excluded, grant, parent); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		case e.IsDir():
			grant(p, true)
		case e.Type().IsRegular():
			grant(p, false)
		}
	}
	return nil
}

// holdsAny: dir is one of paths or an ancestor of one.
func holdsAny(dir string, paths []string) bool {
	for _, p := range paths {
		if p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") {
			return true
		}
	}
	return false
}

// readRules are what a command without namespaces may read: everything
// but the deny-read set, /proc's per-process entries and /dev (all but a
// few devices). Listed once per helper: the entries beside the excluded
// paths' ancestors get read rules, the ancestors themselves only the
// right to list them (names show, contents do not).
type readRules struct {
	dirs, files, listOnly []string
}

func newReadRules(denyRead []string) (*readRules, error) {
	var excluded []string
	for _, p := range denyRead {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			excluded = append(excluded, real)
		}
	}
	excluded = append(excluded, "/proc", "/dev")
	r := &readRules{}
	err := around("/", excluded, func(p string, dir bool) {
		if dir {
			r.dirs = append(r.dirs, p)
		} else {
			r.files = append(r.files, p)
		}
	}, func(p string) { r.listOnly = append(r.listOnly, p) })
	if err != nil {
		return nil, err
	}
	// /proc without the per-process directories (and without self,
	// which would be the helper's): system-wide files tools read.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Type()&os.ModeSymlink != 0 || strings.Trim(e.Name(), "0123456789") == "" {
			continue
		}
		p := "/proc/" + e.Name()
		if e.IsDir() {
			r.dirs = append(r.dirs, p)
		} else {
			r.files = append(r.files, p)
		}
	}
	r.listOnly = append(r.listOnly, "/proc", "/dev")
	return r, nil
}

func (r *readRules) rules(access func(landlock.AccessFSSet, ...string) landlock.FSRule) []landlock.Rule {
	return []landlock.Rule{
		landlock.RODirs(r.dirs...).IgnoreIfMissing(),
		access(fileRead, r.files...),
		access(llsys.AccessFSReadDir, r.listOnly...),
	}
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// overlay is a cache directory the helper covers with a throwaway tmpfs,
// binding its entries back read-only and the listed build caches
// writable: tools that write other caches there still work, and nothing
// they write survives the Polly process.
type overlay struct {
	Dir      string   `json:"dir"`
	Writable []string `json:"writable"` // below Dir
}

// setupHelperMounts prepares the helper's own mount namespace, once: its
// own /proc (the helper is PID 1 of its PID namespace), a minimal /dev, the
// cache overlays and the deny-read set. Each command then starts from a
// copy of it.
func setupHelperMounts(c *helperConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc for the helper's PID namespace: %w", err)
	}
	if err := setupDev(); err != nil {
		return fmt.Errorf("set up /dev: %w", err)
	}
	for _, o := range c.Overlays {
		if err := mountOverlay(o); err != nil {
			return fmt.Errorf("cover %s: %w", o.Dir, err)
		}
	}
	for _, p := range c.DenyRead {
		if err := hidePath(p); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	return nil
}

// devNodes are the devices commands get (bound from the host's /dev).
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// setupDev replaces /dev with a tmpfs holding only harmless devices, a
// private devpts instance (commands can open ptys of their own, never
// the user's terminals) and /dev/shm (a tmpfs per command, mounted later).
// Block devices are not there: a root command cannot read the disk.
func setupDev() error {
	host, err := unix.Open("/dev", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(host)
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return err
	}
	for _, n := range devNodes {
		dst := "/dev/" + n
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		f.Close()
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d/%s", host, n), dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", dst, err)
		}
	}
	if err := os.Mkdir("/dev/pts", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("private devpts: %w", err)
	}
	if err := os.Mkdir("/dev/shm", 0o1777); err != nil {
		return err
	}
	for name, target := range map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, "/dev/"+name); err != nil {
			return err
		}
	}
	return unix.Mount("", "/dev", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k")
}

// mountOverlay covers o.Dir with a tmpfs and binds each of its entries
// back, read-only except the writable caches.
func mountOverlay(o overlay) error {
	fi, err := os.Lstat(o.Dir)
	if err != nil || !fi.IsDir() {
		return nil // nothing to cover (a symlink is left alone: its target is outside the home's caches)
	}
	for _, w := range o.Writable {
		// A writable cache that does not exist yet is made now, so what
		// the build writes there survives.
		if covered(w, []string{o.Dir}) && w != o.Dir {
			os.MkdirAll(w, 0o755)
		}
	}
	real, err := unix.Open(o.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(real)
	entries, err := os.ReadDir(o.Dir)
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", o.Dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=%o", fi.Mode().Perm())); err != nil {
		return err
	}
	src := func(rel string) string { return fmt.Sprintf("/proc/self/fd/%d/%s", real, rel) }
	for _, e := range entries {
		dst := filepath.Join(o.Dir, e.Name())
		switch {
		case e.Type()&os.ModeSymlink != 0:
			if target, err := os.Readlink(src(e.Name())); err == nil {
				os.Symlink(target, dst)
			}
			continue
		case e.IsDir():
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
		case e.Type().IsRegular():
			f, err := os.Create(dst)
			if err != nil {
				return err
			}
			f.Close()
		default:
			continue // sockets, fifos: not bound back
		}
		if err := unix.Mount(src(e.Name()), dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind back %s: %w", dst, err)
		}
		if slices.Contains(o.Writable, dst) {
			continue
		}
		if err := remountReadOnly(dst); err != nil {
			return err
		}
	}
	// Writable caches deeper than one level sit inside a read-only entry:
	// bind them again on top, writable.
	for _, w := range o.Writable {
		rel, err := filepath.Rel(o.Dir, w)
		if err != nil || strings.HasPrefix(rel, "..") || !strings.Contains(rel, "/") {
			continue
		}
		if err := unix.Mount(src(rel), w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("bind %s writable: %w", w, err)
		}
	}
	return nil
}

// hidePath makes p unreadable: an empty, read-only, mode-000 tmpfs over
// a directory; over a file, /dev/null on a nodev mount (opening it fails).
func hidePath(p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil // nothing there to hide
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		return unix.Mount("tmpfs", real, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=000,size=4k")
	}
	if err := unix.Mount("/dev/null", real, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.Mount("", real, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// revealSecrets takes the hiding mounts off the deny-read set but
// Polly's own files, in the command's own mount namespace.
func revealSecrets(denyRead, polly []string) error {
	for _, p := range denyRead {
		if slices.Contains(polly, p) {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if err := unix.Unmount(real, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("reveal %s: %w", p, err)
		}
	}
	return nil
}

// bindReadOnly binds p onto itself read-only (in the command's own mount
// namespace): Landlock can only allow, so a protected path inside the
// writable project needs a read-only bind.
func bindReadOnly(p string) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // gone since Polly looked: nothing to protect
		}
		return fmt.Errorf("bind %s: %w", p, err)
	}
	return remountReadOnly(p)
}

// remountReadOnly makes the bind mount at p read-only, keeping the flags
// the kernel locks in a user namespace (nosuid, nodev, noexec, atime).
func remountReadOnly(p string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", p, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", p, "", flags, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", p, err)
	}
	return nil
}

// commandMounts are the command's own: a private /dev/shm and TMPDIR,
// the protected paths of its project read-only, and inside them the
// paths a person approved writing, writable again.
func commandMounts(tmp string, readOnly, writable []string) error {
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("private /dev/shm: %w", err)
	}
	if tmp != "" {
		if err := unix.Mount("tmpfs", tmp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
			return fmt.Errorf("private TMPDIR at %s: %w", tmp, err)
		}
	}
	for _, w := range writable {
		if !covered(w, readOnly) {
			continue
		}
		// First a mount of its own: the recursive read-only bind below
		// takes it along as a submount, which stays writable.
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("bind %s writable: %w", w, err)
		}
	}
	for _, p := range readOnly {
		if err := bindReadOnly(p); err != nil {
			return err
		}
	}
	return nil
}

// offlineNetwork makes the network namespace commands without network
// run in: only loopback, up, so tests that listen on 127.0.0.1 work while
// nothing can leave. One per helper (creating one per command costs
// milliseconds); commands of one Polly share its loopback.
func offlineNetwork() (int, error) {
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- result{-1, fmt.Errorf("network namespace: %w", err)}
			return
		}
		if err := loopbackUp(); err != nil {
			done <- result{-1, err}
			return
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		done <- result{fd, err}
	}()
	r := <-done
	return r.fd, r.err
}

// loopbackUp brings lo up in the current network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	return nil
}

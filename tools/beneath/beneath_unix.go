//go:build unix

package beneath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is an open directory that paths are resolved beneath. It is safe for
// use by one goroutine at a time.
type Root struct {
	fd  int
	dir string
	// openat2 is false once the kernel said it has no openat2 (or a
	// seccomp filter hides it): the component walk is used instead.
	openat2 bool
	// resolved, when set (tests), runs after the parent directory is
	// open and before the operation: where a swap would race.
	resolved func()
}

// Open opens dir (following links in dir itself: the user chose it).
func Open(dir string) (*Root, error) {
	fd, err := unix.Open(dir, pathFlag|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{fd: fd, dir: dir, openat2: haveOpenat2}, nil
}

// Dir is the directory the root was opened on.
func (r *Root) Dir() string { return r.dir }

// Close releases the directory.
func (r *Root) Close() error { return unix.Close(r.fd) }

// parent opens the directory of rel beneath the root, creating missing
// directories with mode 0755 when create is set. The caller closes the
// descriptor unless it is r.fd.
func (r *Root) parent(rel string, create bool) (fd int, name string, err error) {
	dir, name, err := split(rel)
	if err != nil {
		return -1, "", err
	}
	if dir == "" {
		return r.fd, name, nil
	}
	if r.openat2 {
		fd, err := openBeneath(r.fd, dir)
		switch {
		case err == nil:
			return fd, name, nil
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
			r.openat2 = false // no openat2 here: walk
		case errors.Is(err, unix.ENOENT) && create:
			// the walk creates what is missing
		default:
			return -1, "", r.pathError("open", dir, err)
		}
	}
	fd, err = r.walk(dir, create)
	if err != nil {
		return -1, "", err
	}
	return fd, name, nil
}

// at opens rel's parent (see parent) and runs the resolved hook.
func (r *Root) at(rel string, create bool) (int, string, error) {
	fd, name, err := r.parent(rel, create)
	if err == nil && r.resolved != nil {
		r.resolved()
	}
	return fd, name, err
}

// walk opens dir one component at a time, never following a link.
func (r *Root) walk(dir string, create bool) (int, error) {
	cur := r.fd
	done := ""
	for _, c := range strings.Split(dir, "/") {
		done = strings.TrimPrefix(done+"/"+c, "/")
		next, err := unix.Openat(cur, c, pathFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(cur, c, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(cur, c, pathFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if err == nil {
			// O_PATH|O_NOFOLLOW opens a link itself; O_DIRECTORY should
			// refuse it, and fstat makes sure.
			var st unix.Stat_t
			if err = unix.Fstat(next, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				err = unix.ENOTDIR
			}
			if err != nil {
				unix.Close(next)
			}
		}
		if cur != r.fd {
			unix.Close(cur)
		}
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				if isLink(r, done) {
					err = unix.ELOOP
				}
			}
			return -1, r.pathError("open", done, err)
		}
		cur = next
	}
	return cur, nil
}

// isLink reports whether rel (checked) is a symbolic link, for messages.
func isLink(r *Root, rel string) bool {
	dfd, name, err := r.parent(rel, false)
	if err != nil {
		return false
	}
	defer r.release(dfd)
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// pathError names rel and turns a link on the way into ErrSymlink.
func (r *Root) pathError(op, rel string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return &fs.PathError{Op: op, Path: rel, Err: ErrSymlink}
	case errors.Is(err, unix.EXDEV):
		return &fs.PathError{Op: op, Path: rel, Err: ErrOutside}
	}
	return &fs.PathError{Op: op, Path: rel, Err: err}
}

func (r *Root) release(fd int) {
	if fd != r.fd && fd >= 0 {
		unix.Close(fd)
	}
}

// Lstat describes rel without following it if it is a link. A missing
// path gives an error that matches fs.ErrNotExist.
func (r *Root) Lstat(rel string) (Info, error) {
	dfd, name, err := r.at(rel, false)
	if err != nil {
		return Info{}, err
	}
	defer r.release(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Info{}, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return Info{Mode: modeOf(uint32(st.Mode)), Size: st.Size}, nil
}

// modeOf converts a stat mode to an fs.FileMode (type and permissions).
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFREG:
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	default:
		mode |= fs.ModeDevice
	}
	return mode
}

// ReadFile reads the regular file rel; a link or anything else is an error.
func (r *Root) ReadFile(rel string) ([]byte, fs.FileMode, error) {
	dfd, name, err := r.at(rel, false)
	if err != nil {
		return nil, 0, err
	}
	defer r.release(dfd)
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, r.pathError("open", rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, &fs.PathError{Op: "stat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, fmt.Errorf("%s is not a regular file", rel)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", rel, err)
	}
	return data, modeOf(uint32(st.Mode)).Perm(), nil
}

// Readlink returns the target of the link rel.
func (r *Root) Readlink(rel string) (string, error) {
	dfd, name, err := r.at(rel, false)
	if err != nil {
		return "", err
	}
	defer r.release(dfd)
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: rel, Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// tempName is a fresh name beside name for an atomic replace.
func tempName(name string) string {
	var b [6]byte
	rand.Read(b[:])
	return "." + name + ".polly-" + hex.EncodeToString(b[:])
}

// WriteFile replaces rel with data and mode through a temporary file and
// a rename in the same directory (a link at rel is replaced, not
// followed); missing parent directories are created.
func (r *Root) WriteFile(rel string, data []byte, mode fs.FileMode) (err error) {
	dfd, name, err := r.at(rel, true)
	if err != nil {
		return err
	}
	defer r.release(dfd)
	tmp := tempName(name)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
	if err != nil {
		return &fs.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		if err != nil {
			f.Close()
			unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err = f.Chmod(mode.Perm()); err != nil { // the umask narrowed the create mode
		return fmt.Errorf("chmod %s: %w", rel, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", rel, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", rel, err)
	}
	if err = unix.Renameat(dfd, tmp, dfd, name); err != nil {
		return &fs.PathError{Op: "rename", Path: rel, Err: err}
	}
	return nil
}

// Symlink makes rel a link to target, replacing what is there; missing
// parent directories are created. The target is stored, not resolved.
func (r *Root) Symlink(target, rel string) error {
	dfd, name, err := r.at(rel, true)
	if err != nil {
		return err
	}
	defer r.release(dfd)
	tmp := tempName(name)
	if err := unix.Symlinkat(target, dfd, tmp); err != nil {
		return &fs.PathError{Op: "symlink", Path: rel, Err: err}
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return &fs.PathError{Op: "rename", Path: rel, Err: err}
	}
	return nil
}

// Remove removes the file or link rel (not a directory). A missing path
// gives an error that matches fs.ErrNotExist.
func (r *Root) Remove(rel string) error {
	dfd, name, err := r.at(rel, false)
	if err != nil {
		return err
	}
	defer r.release(dfd)
	if err := unix.Unlinkat(dfd, name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

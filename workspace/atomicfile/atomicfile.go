// Package atomicfile replaces files so that a reader — or a crash — sees
// the old content or the new, never a part, and a finished write survives
// a power loss: the data goes to a temp file beside the target, which is
// synced, then renamed (or linked) into place, and the directory is synced
// so the rename is on disk too. It is the one way Polly writes its own
// files: checkpoints, archives, workspace memory, caches, the trust store,
// and the files the edit tools change.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces path with data, with mode perm (exactly: the umask does
// not apply). The parent directory must exist. A symlink at path is
// replaced, not followed.
func Write(path string, data []byte, perm fs.FileMode) error {
	tmp, err := temp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// WriteNew writes data to path only when nothing is there: the finished
// temp file is hard-linked into place, which fails if another process
// created path meanwhile (then it reports false, nil). On a file system
// without hard links it falls back to an exclusive create.
func WriteNew(path string, data []byte, perm fs.FileMode) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	tmp, err := temp(path, data, perm)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		f, cerr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(cerr, fs.ErrExist) {
			return false, nil
		}
		if cerr != nil {
			return false, fmt.Errorf("create %s: %w", path, cerr)
		}
		_, werr := f.Write(data)
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return false, fmt.Errorf("write %s: %w", path, werr)
		}
	}
	return true, syncDir(filepath.Dir(path))
}

// temp writes data to a new hidden file beside path, synced, with mode
// perm, and returns its name.
func temp(path string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return name, nil
}

// syncDir makes a rename or link in dir durable. A file system that cannot
// sync a directory (some network mounts) is not an error: the write
// itself is done.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

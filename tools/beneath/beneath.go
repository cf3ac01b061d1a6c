// Package beneath reads and writes files beneath one directory without ever
// following a symbolic link or leaving it: undo, redo and rewind write what
// a session store names, and a store can come from anyone.
//
// A path is relative, without "." or ".." components. Its parent directory
// is opened beneath the root (openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS where the kernel has it, else one component at a time
// with O_NOFOLLOW), and the operation works on that directory's descriptor:
// a directory swapped for a link between the check and the write cannot
// redirect it.
package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// ErrOutside: the path is absolute or climbs out with "..".
var ErrOutside = errors.New("not beneath the project")

// ErrSymlink: a directory on the way is a symbolic link.
var ErrSymlink = errors.New("goes through a symbolic link")

// Check reports whether rel names something beneath a root: relative,
// clean of "." and ".." components, not the root itself. Separators are
// slashes.
func Check(rel string) error {
	switch {
	case rel == "" || rel == ".":
		return fmt.Errorf("%q: %w (it is the project itself)", rel, ErrOutside)
	case strings.HasPrefix(rel, "/"):
		return fmt.Errorf("%s is an absolute path: %w", rel, ErrOutside)
	case strings.ContainsRune(rel, 0):
		return fmt.Errorf("%q holds a NUL byte: %w", rel, ErrOutside)
	}
	for _, c := range strings.Split(rel, "/") {
		switch c {
		case "..":
			return fmt.Errorf("%s climbs out with \"..\": %w", rel, ErrOutside)
		case ".", "":
			return fmt.Errorf("%s is not a clean path (empty or \".\" part): %w", rel, ErrOutside)
		}
	}
	return nil
}

// split checks rel and returns its directory ("" for the root) and name.
func split(rel string) (dir, name string, err error) {
	if err := Check(rel); err != nil {
		return "", "", err
	}
	dir, name = path.Split(rel)
	return strings.TrimSuffix(dir, "/"), name, nil
}

// Info is what Lstat tells about a path.
type Info struct {
	Mode fs.FileMode // type and permission bits, as fs.FileInfo.Mode
	Size int64
}

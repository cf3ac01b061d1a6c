//go:build !unix

package beneath

import (
	"errors"
	"io/fs"
)

// Root is unavailable here: undo refuses to write rather than follow links
// it cannot check.
type Root struct{ dir string }

var errUnsupported = errors.New("writing beneath a directory without following links is not supported on this system")

func Open(dir string) (*Root, error)                         { return nil, errUnsupported }
func (r *Root) Dir() string                                  { return r.dir }
func (r *Root) Close() error                                 { return nil }
func (r *Root) Lstat(string) (Info, error)                   { return Info{}, errUnsupported }
func (r *Root) ReadFile(string) ([]byte, fs.FileMode, error) { return nil, 0, errUnsupported }
func (r *Root) Readlink(string) (string, error)              { return "", errUnsupported }
func (r *Root) WriteFile(string, []byte, fs.FileMode) error  { return errUnsupported }
func (r *Root) Symlink(string, string) error                 { return errUnsupported }
func (r *Root) Remove(string) error                          { return errUnsupported }

package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"polly/memory/store"
	"polly/tools/beneath"
)

// FileChange is one change a tool is about to make to a file: the state it
// replaces (with content, so it can be restored) and the state it leaves
// (a hash is enough, to recognise it later).
type FileChange struct {
	Path   string // absolute path written (a symlink's target)
	Link   string // the symlink the call named, when it followed one to Path
	Before store.FileState
	After  store.FileState
}

// ChangeRecorder keeps the backups undo restores from. Tools that write
// files record through it before they write: when Record fails, the write
// must not happen. The agent binds it to the session, turn, agent and call.
type ChangeRecorder interface {
	Record(ctx context.Context, tool string, changes []FileChange) (ids []int64, err error)
	// Forget drops backups of changes that did not happen after all.
	Forget(ctx context.Context, ids []int64) error
}

// WithRecorder makes file-writing tools back up through r.
func WithRecorder(ctx context.Context, r ChangeRecorder) context.Context {
	return withValue(ctx, r)
}

// RecorderOf returns the recorder set by WithRecorder, or nil (no undo
// history: nothing is recorded).
func RecorderOf(ctx context.Context) ChangeRecorder { return valueOf[ChangeRecorder](ctx) }

// backupBeforeWrite records a change before it is made. The error is the
// reason the model gets for a write that did not happen.
func backupBeforeWrite(ctx context.Context, tool string, c FileChange, shown string) (ids []int64, err error) {
	rec := RecorderOf(ctx)
	if rec == nil {
		return nil, nil
	}
	ids, err = rec.Record(ctx, tool, []FileChange{c})
	if err != nil {
		return nil, fmt.Errorf("could not back up %s before changing it, so it was not changed (undo needs the backup): %w", shown, err)
	}
	return ids, nil
}

// forgetBackup drops the backup of a write that failed.
func forgetBackup(ctx context.Context, ids []int64) {
	if rec := RecorderOf(ctx); rec != nil && len(ids) > 0 {
		_ = rec.Forget(context.WithoutCancel(ctx), ids) // a stale backup only makes undo report the file unchanged
	}
}

// ReadState reads what is at path now, without following a final symlink:
// missing, a symlink (Data is its target) or a regular file (Data is its
// content). Anything else (a directory, a device) is an error.
func ReadState(path string) (store.FileState, error) { return readState(osFiles{}, path) }

// ReadStateIn is ReadState for rel beneath root: no symbolic link on the
// way is followed (see package beneath), and a final link is read as one.
func ReadStateIn(root *beneath.Root, rel string) (store.FileState, error) {
	return readState(root, rel)
}

// stateFiles is where readState looks: the OS by path, or a beneath.Root.
type stateFiles interface {
	Lstat(name string) (beneath.Info, error)
	Readlink(name string) (string, error)
	ReadFile(name string) ([]byte, fs.FileMode, error)
}

func readState(files stateFiles, name string) (store.FileState, error) {
	info, err := files.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return store.FileState{Kind: store.FileMissing}, nil
	}
	if err != nil {
		return store.FileState{}, err
	}
	switch {
	case info.Mode&fs.ModeSymlink != 0:
		target, err := files.Readlink(name)
		if err != nil {
			return store.FileState{}, err
		}
		return stateOf(store.FileSymlink, []byte(target), 0), nil
	case info.Mode.IsRegular():
		data, _, err := files.ReadFile(name)
		if err != nil {
			return store.FileState{}, err
		}
		return stateOf(store.FileRegular, data, info.Mode.Perm()), nil
	}
	return store.FileState{}, fmt.Errorf("%s is not a regular file (%s)", name, info.Mode.Type())
}

// osFiles reads by path through the OS.
type osFiles struct{}

func (osFiles) Lstat(name string) (beneath.Info, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return beneath.Info{}, err
	}
	return beneath.Info{Mode: fi.Mode(), Size: fi.Size()}, nil
}

func (osFiles) Readlink(name string) (string, error) { return os.Readlink(name) }

func (osFiles) ReadFile(name string) ([]byte, fs.FileMode, error) {
	data, err := os.ReadFile(name)
	return data, 0, err
}

func stateOf(kind store.FileKind, data []byte, mode fs.FileMode) store.FileState {
	if data == nil {
		data = []byte{}
	}
	return store.FileState{Kind: kind, Data: data, Hash: store.ContentHash(data), Mode: mode}
}

// writtenState is the state a write of content with mode leaves.
func writtenState(content []byte, mode fs.FileMode) store.FileState {
	return store.FileState{Kind: store.FileRegular, Hash: store.ContentHash(content), Mode: mode}
}

// RestoreStateIn puts want at rel beneath root: removes it (FileMissing),
// writes the content atomically with its mode, or recreates a symlink.
// Parents are created and written through the directory descriptors root
// resolved, so a directory swapped for a link meanwhile is not followed.
// What is at rel is replaced; the caller has checked it may be.
func RestoreStateIn(root *beneath.Root, rel string, want store.FileState, data []byte) error {
	switch want.Kind {
	case store.FileMissing:
		if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", rel, err)
		}
		return nil
	case store.FileRegular:
		mode := want.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		return root.WriteFile(rel, data, mode)
	case store.FileSymlink:
		return root.Symlink(string(data), rel)
	}
	return fmt.Errorf("cannot restore %s: its earlier state (%s) was not saved", rel, want.Kind)
}

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
func ReadState(path string) (store.FileState, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return store.FileState{Kind: store.FileMissing}, nil
	}
	if err != nil {
		return store.FileState{}, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return store.FileState{}, err
		}
		return stateOf(store.FileSymlink, []byte(target), 0), nil
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(path)
		if err != nil {
			return store.FileState{}, err
		}
		return stateOf(store.FileRegular, data, fi.Mode().Perm()), nil
	}
	return store.FileState{}, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
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

// ReadStateIn is ReadState for rel beneath root: no symbolic link on the
// way is followed (see package beneath), and a final link is read as one.
func ReadStateIn(root *beneath.Root, rel string) (store.FileState, error) {
	info, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return store.FileState{Kind: store.FileMissing}, nil
	}
	if err != nil {
		return store.FileState{}, err
	}
	switch {
	case info.Mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(rel)
		if err != nil {
			return store.FileState{}, err
		}
		return stateOf(store.FileSymlink, []byte(target), 0), nil
	case info.Mode.IsRegular():
		data, mode, err := root.ReadFile(rel)
		if err != nil {
			return store.FileState{}, err
		}
		return stateOf(store.FileRegular, data, mode), nil
	}
	return store.FileState{}, fmt.Errorf("%s is not a regular file (%s)", rel, info.Mode.Type())
}

// RestoreStateIn is RestoreState for rel beneath root: parents are created
// and written through the directory descriptors root resolved, so a
// directory swapped for a link meanwhile is not followed.
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

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"polly/memory/store"
)

const (
	// trackMaxFiles bounds the fingerprint of a project: past it, a
	// command's changes are not tracked (the call says so).
	trackMaxFiles = 200_000
	// trackMaxHash: larger changed files are listed but not hashed.
	trackMaxHash = 64 << 20
)

// stamp is the cheap fingerprint of one file: enough to notice a change
// without reading it.
type stamp struct {
	size  int64
	mtime int64 // nanoseconds
	mode  fs.FileMode
}

// fingerprint stamps every file below root that .gitignore does not
// exclude (.git and Polly's own .agent/ left out), by absolute path.
func fingerprint(ctx context.Context, root string) (map[string]stamp, error) {
	out := map[string]stamp{}
	state := filepath.Join(root, ".agent")
	err := walkTree(ctx, root, root, func(abs string, d fs.DirEntry, depth int) error {
		if abs == state {
			return fs.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone since it was listed
		}
		if len(out) >= trackMaxFiles {
			return fmt.Errorf("more than %d files", trackMaxFiles)
		}
		out[abs] = stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
		return nil
	})
	return out, err
}

// TreeChanges is what a command did to the project's files.
type TreeChanges struct {
	Created []string `json:"created"`
	Changed []string `json:"changed"`
	Deleted []string `json:"deleted"`
}

func compareStamps(before, after map[string]stamp) (created, changed, deleted []string) {
	for p, s := range after {
		old, ok := before[p]
		switch {
		case !ok:
			created = append(created, p)
		case old != s:
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			deleted = append(deleted, p)
		}
	}
	sort.Strings(created)
	sort.Strings(changed)
	sort.Strings(deleted)
	return created, changed, deleted
}

// TrackChanges wraps run_command: when a recorder is set and readOnly does
// not clear the command line, it fingerprints the project before the run,
// and afterwards lists what the command created, changed and deleted in the
// result's Meta["files"] and records the new contents' hashes, so undo can
// name the files a command touched and never overwrite them unawares.
// Earlier contents are not saved (that would mean copying the project
// before every command): undo removes files a command created, if unchanged
// since, and reports the others.
func TrackChanges(run Tool, root string, readOnly func(command string) bool) Tool {
	return trackedShell{Tool: run, root: filepath.Clean(root), readOnly: readOnly}
}

type trackedShell struct {
	Tool
	root     string
	readOnly func(string) bool
}

func (t trackedShell) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	rec := RecorderOf(ctx)
	var a runCommandArgs
	if rec == nil || json.Unmarshal(args, &a) != nil || (t.readOnly != nil && t.readOnly(a.Command)) {
		return t.Tool.Run(ctx, args)
	}
	before, ferr := fingerprint(ctx, t.root)
	res, err := t.Tool.Run(ctx, args)
	if err != nil {
		return res, err
	}
	note := func(msg string) {
		if res.Meta == nil {
			res.Meta = map[string]any{}
		}
		res.Meta["files_untracked"] = msg
	}
	if ferr != nil {
		note("changes not tracked for undo: " + ferr.Error())
		return res, nil
	}
	after, ferr := fingerprint(context.WithoutCancel(ctx), t.root)
	if ferr != nil {
		note("changes not tracked for undo: " + ferr.Error())
		return res, nil
	}
	created, changed, deleted := compareStamps(before, after)
	if len(created)+len(changed)+len(deleted) == 0 {
		return res, nil
	}
	var changes []FileChange
	var tc TreeChanges
	for _, p := range created {
		changes = append(changes, FileChange{Path: p, Before: store.FileState{Kind: store.FileMissing}, After: stateNow(p)})
		tc.Created = append(tc.Created, displayPath(t.root, p))
	}
	for _, p := range changed {
		changes = append(changes, FileChange{Path: p, Before: store.FileState{Kind: store.FileUnknown}, After: stateNow(p)})
		tc.Changed = append(tc.Changed, displayPath(t.root, p))
	}
	for _, p := range deleted {
		changes = append(changes, FileChange{Path: p, Before: store.FileState{Kind: store.FileUnknown}, After: store.FileState{Kind: store.FileMissing}})
		tc.Deleted = append(tc.Deleted, displayPath(t.root, p))
	}
	if res.Meta == nil {
		res.Meta = map[string]any{}
	}
	res.Meta["files"] = tc
	res.Files = append(append(res.Files, tc.Created...), tc.Changed...)
	res.Created = append(res.Created, tc.Created...)
	if _, err := rec.Record(context.WithoutCancel(ctx), "run_command", changes); err != nil {
		note("changes not recorded for undo: " + err.Error())
	}
	return res, nil
}

// stateNow is a file's state after a command, as far as it is cheap to
// know: its hash, or unknown for what cannot be read or is too large.
func stateNow(p string) store.FileState {
	fi, err := os.Lstat(p)
	if err != nil || fi.Size() > trackMaxHash {
		return store.FileState{Kind: store.FileUnknown}
	}
	st, err := ReadState(p)
	if err != nil {
		return store.FileState{Kind: store.FileUnknown}
	}
	st.Data = nil // only the hash is kept
	return st
}

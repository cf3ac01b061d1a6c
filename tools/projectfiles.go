package tools

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
)

// ErrTooManyFiles ends ProjectFiles early: the list holds the first max
// entries.
var ErrTooManyFiles = errors.New("project has more files than listed")

// ProjectFiles lists the files and directories of the project below root
// that .gitignore (and .git/info/exclude) do not exclude, as the search
// tools see them: slash-separated paths relative to root, directories
// with a trailing slash, depth first in lexical order, .git skipped and
// linked directories not followed. Past max entries it returns the first
// max with ErrTooManyFiles. Names are returned as they are on disk, which
// may include newlines and control characters: whoever shows or inserts
// one must quote it.
func ProjectFiles(ctx context.Context, root string, max int) ([]string, error) {
	var out []string
	err := walkTree(ctx, root, root, func(abs string, d fs.DirEntry, _ int) error {
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		if len(out) >= max {
			return ErrTooManyFiles
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		return out, err
	}
	return out, nil
}

package tools

import (
	"context"
	"io"
)

type progressKey struct{}

// WithProgress gives a tool call a writer for output as it is produced
// (run_command tees its output into it), so a UI can show a running
// command live. Writes must not block for long and never fail.
func WithProgress(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, progressKey{}, w)
}

// ProgressOf returns the writer set by WithProgress, or nil.
func ProgressOf(ctx context.Context) io.Writer {
	w, _ := ctx.Value(progressKey{}).(io.Writer)
	return w
}

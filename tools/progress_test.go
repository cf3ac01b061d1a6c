package tools

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"polly/memory/chat"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// run_command tees stdout and stderr, in order, into the call's progress
// writer, and still returns the whole output.
func TestShellTeesIntoProgress(t *testing.T) {
	reg := NewRegistry(ShellTool(t.TempDir(), ShellOptions{}))
	var live lockedBuffer
	ran := false
	ctx := WithProgress(context.Background(), &live)
	res := reg.Execute(ctx, chat.ToolCall{ID: "1", Name: "run_command", Arguments: `{"command":"echo out; echo err >&2; echo end"}`},
		Exec{Gate: AllowAll{}, Running: func() { ran = true }})
	if res.IsError {
		t.Fatal(res.Output)
	}
	if got := live.b.String(); got != "out\nerr\nend\n" {
		t.Errorf("progress got %q", got)
	}
	if !bytes.Contains([]byte(res.Output), []byte("out\nerr\nend\n")) {
		t.Errorf("result lost output: %q", res.Output)
	}
	if !ran {
		t.Error("Exec.Running was not called")
	}
}

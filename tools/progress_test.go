package tools

import (
	"bytes"
	"context"
	"testing"

	"polly/memory/chat"
)

// run_command tees stdout and stderr, in order, into the call's progress
// writer, and still returns the whole output. The writer is a plain buffer:
// run_command writes it from one goroutine and not after it returns, which
// -race checks.
func TestShellTeesIntoProgress(t *testing.T) {
	reg := NewRegistry(ShellTool(t.TempDir(), ShellOptions{}))
	var live bytes.Buffer
	ran := false
	ctx := WithProgress(context.Background(), &live)
	res := reg.Execute(ctx, chat.ToolCall{ID: "1", Name: "run_command", Arguments: `{"command":"echo out; echo err >&2; echo end"}`},
		Exec{Gate: AllowAll{}, Running: func() { ran = true }})
	if res.IsError {
		t.Fatal(res.Output)
	}
	if got := live.String(); got != "out\nerr\nend\n" {
		t.Errorf("progress got %q", got)
	}
	if !bytes.Contains([]byte(res.Output), []byte("out\nerr\nend\n")) {
		t.Errorf("result lost output: %q", res.Output)
	}
	if !ran {
		t.Error("Exec.Running was not called")
	}
}

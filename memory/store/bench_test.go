package store

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"polly/memory/chat"
)

// bigOutput builds about n bytes of realistic command output: numbered log
// lines with a few multi-byte runes.
func bigOutput(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %06d: compiling package pkg%d/file_%d.go — ok (%d ms) ✓\n", i, i%97, i, i%1000)
	}
	return b.String()
}

func BenchmarkAppendMessage(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	sess := mustSession(b, s)
	m := chat.Message{Role: chat.Assistant, Content: strings.Repeat("some reply text ", 30), Tokens: 120,
		ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"go test ./..."}`}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.AppendMessage(ctx, sess.ID, "coder", m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveToolExecution1MB is the offload of a 1 MB output.
// "sustained" saves back to back, so WAL checkpoints (~6 ms/MB) fall on the
// saves. "after-idle" runs the checkpoint outside the timer between saves,
// as the maintenance goroutine does while the model thinks: the latency a
// tool call sees.
func BenchmarkSaveToolExecution1MB(b *testing.B) {
	for _, idle := range []bool{false, true} {
		name := "sustained"
		if idle {
			name = "after-idle"
		}
		b.Run(name, func(b *testing.B) {
			s := openTest(b)
			ctx := context.Background()
			sess := mustSession(b, s)
			out := bigOutput(1 << 20)
			e := ToolExecution{SessionID: sess.ID, Persona: "coder", CallID: "c1", Tool: "bash",
				Arguments: `{"command":"make"}`, Output: out, Preview: out[:400], Status: ExecOK}
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.SaveToolExecution(ctx, e); err != nil {
					b.Fatal(err)
				}
				if idle {
					b.StopTimer()
					if err := s.checkpoint(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
		})
	}
}

func BenchmarkOutputSlice(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	sess := mustSession(b, s)
	for _, tc := range []struct{ name, out string }{
		{"ascii", strings.Repeat("x", 1<<20)},
		{"utf8", bigOutput(1 << 20)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			id, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "bash", Output: tc.out, Status: ExecOK})
			if err != nil {
				b.Fatal(err)
			}
			total := utf8.RuneCountInString(tc.out)
			b.ReportAllocs()
			for b.Loop() {
				// Mid-output, across a chunk boundary.
				part, n, err := s.OutputSlice(ctx, id, total/2, 4096)
				if err != nil || n != total || utf8.RuneCountInString(part) != 4096 {
					b.Fatalf("slice: %d runes, total %d, err %v", utf8.RuneCountInString(part), n, err)
				}
			}
		})
	}
}

// BenchmarkIndexOutputs1MB is the deferred cost of making 1 MB searchable,
// paid in the background (or by the next search).
func BenchmarkIndexOutputs1MB(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	sess := mustSession(b, s)
	out := bigOutput(1 << 20)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if _, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "bash", Output: out, Status: ExecOK}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.IndexOutputs(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMessagesLoad1000(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	sess := mustSession(b, s)
	for i := range 1000 {
		m := chat.Message{Role: chat.Assistant, Content: strings.Repeat("x", 500), Tokens: 125}
		if i%2 == 1 {
			m = chat.Message{Role: chat.Tool, ToolCallID: "c", ToolName: "bash", Content: strings.Repeat("y", 800),
				Output: &chat.Output{Chars: 5000, Lines: 100, Offloaded: true}}
		} else if i%4 == 0 {
			m.ToolCalls = []chat.ToolCall{{ID: "c", Name: "bash", Arguments: `{"command":"ls"}`}}
		}
		if _, err := s.AppendMessage(ctx, sess.ID, "coder", m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		ms, err := s.Messages(ctx, sess.ID, "coder")
		if err != nil || len(ms) != 1000 {
			b.Fatalf("%d messages, %v", len(ms), err)
		}
	}
}

func BenchmarkSplitOutput1MB(b *testing.B) {
	out := bigOutput(1 << 20)
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		splitOutput(out)
	}
}

// BenchmarkStepWrites is what one tool-call step of the agent writes, in
// its two transactions: the model's reply with its call accounted (before
// the tool runs, so a crash then leaves the call on disk), then the tool's
// 5 KB output, its message and the task state.
func BenchmarkStepWrites(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	sess := mustSession(b, s)
	reply := chat.Message{Role: chat.Assistant, Content: strings.Repeat("Looking at how the loop hands results back. ", 12), Tokens: 120,
		ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"src/file1.go"}`}}}
	out := bigOutput(5000)
	state := []byte(`{"original_request":"work: 4","tool_calls":3,"files_read":["src/file1.go"]}`)
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		err := s.Batch(ctx, func(ctx context.Context) error {
			if err := s.RecordLLMCall(ctx, LLMCall{SessionID: sess.ID, Persona: "coder", Model: "m", Usage: chat.Usage{PromptTokens: 40_000, CompletionTokens: 120}}); err != nil {
				return err
			}
			_, err := s.AppendMessage(ctx, sess.ID, "coder", reply)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		err = s.Batch(ctx, func(ctx context.Context) error {
			id, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Persona: "coder", CallID: "call_1", Tool: "read_file",
				Arguments: `{"path":"src/file1.go"}`, Output: out, Status: ExecOK})
			if err != nil {
				return err
			}
			m := chat.Message{Role: chat.Tool, ToolCallID: "call_1", ToolName: "read_file", Content: out, Tokens: 1400,
				Output: &chat.Output{ExecID: id, Chars: len(out), Lines: 60}}
			if _, err := s.AppendMessage(ctx, sess.ID, "coder", m); err != nil {
				return err
			}
			return s.SaveAgentState(ctx, sess.ID, "coder", state)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	// CPU time as well as wall time: on a loaded machine the wall clock
	// also counts the time other processes had the cores.
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

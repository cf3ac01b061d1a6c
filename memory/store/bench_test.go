package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
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

package hooks

import (
	"context"
	"testing"
)

// The cost a tool call pays when hooks exist but none matches it.
func BenchmarkFireNoMatch(b *testing.B) {
	s, _, _ := New([]Hook{{Event: PreToolUse, Matcher: "Bash", Command: "true"}, {Event: PostToolUse, Matcher: "Edit|Write", Command: "true"}}, Options{Dir: b.TempDir()})
	in := Input{HookEventName: PreToolUse, ToolName: "Read"}
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Fire(context.Background(), in, "Read", "read_file"); len(r.Runs) != 0 {
			b.Fatal(r)
		}
	}
}

// One matching hook: bash started, the event written to it, its exit read.
func BenchmarkFireOneHook(b *testing.B) {
	s, _, _ := New([]Hook{{Event: PreToolUse, Matcher: "Bash", Command: "cat >/dev/null"}}, Options{Dir: b.TempDir()})
	in := Input{HookEventName: PreToolUse, ToolName: "Bash"}
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Fire(context.Background(), in, "Bash", "run_command"); len(r.Runs) != 1 || r.Runs[0].Outcome != "ok" {
			b.Fatal(r)
		}
	}
}

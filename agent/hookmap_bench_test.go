package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"polly/memory/chat"
)

// The cost a tool call pays when hooks exist: its call mapped to Claude
// Code's name and shape (a 6 KB write, the common large case). cpu-ns/op
// is the process's CPU time per call, steadier than wall time on a busy
// machine.
func BenchmarkToClaude(b *testing.B) {
	args, _ := json.Marshal(map[string]string{"path": "src/main.go", "content": strings.Repeat("x := 1\n", 900)})
	call := chat.ToolCall{ID: "call_1", Name: "write_file", Arguments: string(args)}
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if cc := toClaude(call, "/project"); cc.name != "Write" {
			b.Fatal(cc.name)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

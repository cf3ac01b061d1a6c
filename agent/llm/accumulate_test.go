package llm

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/openai/openai-go/v3"
)

// chunks decodes SSE data payloads the way the SDK's stream does.
func chunks(tb testing.TB, payloads ...string) []openai.ChatCompletionChunk {
	tb.Helper()
	out := make([]openai.ChatCompletionChunk, len(payloads))
	for i, p := range payloads {
		if err := json.Unmarshal([]byte(p), &out[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// Servers that number every tool call 0 but give each its own id, and
// fragments without index or id, still make separate, whole calls.
func TestAccumulatorSeparatesCallsByID(t *testing.T) {
	acc := newAccumulator()
	for _, c := range chunks(t,
		`{"id":"a","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"x\":"}}]}}]}`,
		`{"id":"b","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c2","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"id":"d","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"g"}}]},"finish_reason":"stop"}]}`,
	) {
		acc.add(&c)
	}
	msg := acc.message()
	if len(msg.ToolCalls) != 2 || msg.ToolCalls[0].ID != "c1" || msg.ToolCalls[0].Arguments != `{"x":1}` ||
		msg.ToolCalls[1].ID != "c2" || msg.ToolCalls[1].Name != "g" || msg.ToolCalls[1].Arguments != "{}" || acc.finish != "stop" {
		t.Fatalf("calls = %+v, finish %q", msg.ToolCalls, acc.finish)
	}
}

// BenchmarkAccumulator adds a 500-chunk reply (text, then a tool call in
// fragments) — the per-chunk cost the client pays on top of decoding.
func BenchmarkAccumulator(b *testing.B) {
	var payloads []string
	for i := range 400 {
		payloads = append(payloads, fmt.Sprintf(`{"id":"x%d","choices":[{"index":0,"delta":{"content":"word %d "}}]}`, i%3, i))
	}
	payloads = append(payloads, `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"write_file","arguments":""}}]}}]}`)
	for range 98 {
		payloads = append(payloads, `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"abcdefgh"}}]}}]}`)
	}
	payloads = append(payloads, `{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	cs := chunks(b, payloads...)
	b.ReportAllocs()
	for b.Loop() {
		acc := newAccumulator()
		for i := range cs {
			acc.add(&cs[i])
		}
		_ = acc.message()
	}
}

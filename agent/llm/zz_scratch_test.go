package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"polly/agent/llm"
	"polly/memory/chat"
)

// BenchmarkScratchStep40k: one step's client work at 40k tokens: the
// request (400 cached messages + 2 new) and a 17-chunk reply.
func BenchmarkScratchStep40k(b *testing.B) {
	var body strings.Builder
	prose := strings.Repeat("Looking at how the loop hands results back, the next thing to check is the accumulator. ", 8)
	for i := 0; i < len(prose); i += 64 {
		fmt.Fprintf(&body, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", prose[i:min(i+64, len(prose))])
	}
	body.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"src/file1.go\\\"}\"}}]},\"finish_reason\":null}]}\n\n")
	body.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n")
	body.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":40000,\"completion_tokens\":200}}\n\ndata: [DONE]\n\n")
	c := llm.New(llm.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "k", HTTPClient: &http.Client{Transport: cannedTransport{body: []byte(body.String())}}})
	file := strings.Repeat("func step(s *state) bool {\n\tif s.n > 7 {\n\t\treturn false\n\t}\n\treturn true\n}\n", 80)
	msgs := []chat.Message{chat.SystemText(strings.Repeat("You are a coding agent. ", 200))}
	for i := 0; len(msgs) < 400; i++ {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs, chat.Message{Role: chat.Assistant, Content: prose, ToolCalls: []chat.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"src/file1.go"}`}}},
			chat.Message{Role: chat.Tool, ToolCallID: id, Content: file[:1200]})
	}
	req := llm.Request{Model: "m", Messages: msgs, Cache: llm.NewWireCache(), Tools: []llm.ToolSpec{{Name: "read_file", Parameters: map[string]any{"type": "object"}}}}
	if _, err := c.Stream(context.Background(), req, llm.Observer{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		// two new messages per step, as the loop appends the reply and the result
		n++
		id := fmt.Sprintf("new_%d", n)
		req.Messages = append(msgs[:len(msgs):len(msgs)], chat.Message{Role: chat.Assistant, Content: prose, ToolCalls: []chat.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"x"}`}}},
			chat.Message{Role: chat.Tool, ToolCallID: id, Content: file})
		if _, err := c.Stream(context.Background(), req, llm.Observer{OnDelta: func(llm.Delta) {}}); err != nil {
			b.Fatal(err)
		}
	}
}

package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// cannedStream is a 200-chunk reply as OpenAI sends it: every metadata
// field on every chunk, text first, then a tool call in fragments, then a
// usage-only chunk and [DONE].
func cannedStream() []byte {
	var b bytes.Buffer
	head := `"id":"chatcmpl-Ab12Cd34","object":"chat.completion.chunk","created":1732600000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5f20662549"`
	for i := range 150 {
		fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", head, i)
	}
	fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n", head)
	for range 47 {
		fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"abc\\\"def\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n", head)
	}
	fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]}\n\n", head)
	fmt.Fprintf(&b, "data: {%s,\"choices\":[],\"usage\":{\"prompt_tokens\":39000,\"completion_tokens\":240,\"total_tokens\":39240,\"prompt_tokens_details\":{\"cached_tokens\":38912,\"audio_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n", head)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// readAll decodes a whole stream as the client does: openai-go's SSE
// decoder and stream of ChatCompletionChunk, into Polly's accumulator.
func readAll(body []byte) (*accumulator, int, error) {
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
	s := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
	defer s.Close()
	acc := newAccumulator()
	n := 0
	for s.Next() {
		ck := s.Current()
		acc.add(&ck)
		n++
	}
	return acc, n, s.Err()
}

func TestSDKStreamCannedStream(t *testing.T) {
	acc, n, err := readAll(cannedStream())
	if err != nil || n != 200 {
		t.Fatalf("chunks = %d, err = %v", n, err)
	}
	msg := acc.message()
	if !strings.HasPrefix(msg.Content, "word0 word1 ") || !strings.HasSuffix(msg.Content, "word149 ") ||
		len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ID != "call_1" || msg.ToolCalls[0].Name != "write_file" ||
		msg.ToolCalls[0].Arguments != strings.Repeat(`abc"def`, 47) {
		t.Fatalf("message = %.80q…, calls %+v", msg.Content, msg.ToolCalls)
	}
	if acc.finish != "tool_calls" || acc.model != "gpt-4o-2024-08-06" ||
		acc.usage.PromptTokens != 39000 || acc.usage.CompletionTokens != 240 || acc.usage.CachedTokens != 38912 {
		t.Fatalf("finish %q model %q usage %+v", acc.finish, acc.model, acc.usage)
	}
}

// The wire tolerances of openai-go's decoder that the client relies on,
// through the whole client: served over HTTP, read by the SDK, classified.
func TestStreamFraming(t *testing.T) {
	chunkHi := `{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`
	for _, tc := range []struct {
		name, body string
		want       string // the reply, or the partial text of the error
		err        string // substring of the error; "" none
		kind       Kind
	}{
		{"crlf", "data: " + chunkHi + "\r\n\r\ndata: [DONE]\r\n\r\n", "hi", "", 0},
		{"no space after colon", "data:" + chunkHi + "\n\n", "hi", "", 0},
		{"comments and other fields", ": keep-alive\n\nevent: ping\nid: 3\nretry: 10\ndata: " + chunkHi + "\n\n: PROCESSING\n\n", "hi", "", 0},
		{"data split over lines", "data: {\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\ndata: \"delta\":{\"content\":\"hi\"}}]}\n\n", "hi", "", 0},
		{"last event without blank line is dropped", "data: " + chunkHi + "\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lost\"}}]}", "hi", "", 0},
		{"done ends the stream", "data: " + chunkHi + "\n\ndata: [DONE]\n\ndata: " + chunkHi + "\n\n", "hi", "", 0},
		{"field of the wrong type is skipped", `data: {"model":7,"choices":[{"index":0,"delta":{"content":"hi","reasoning":{"x":1}},"finish_reason":"stop"}]}` + "\n\n", "hi", "", 0},
		{"unknown fields are ignored", `data: {"id":"x","moderation_v9":{"flagged":false},"choices":[{"index":0,"delta":{"content":"hi","sparkle":true},"finish_reason":"stop","extra":[1]}]}` + "\n\n", "hi", "", 0},
		{"broken json", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\"}}]}\n\ndata: {not json\n\n", "h", "malformed stream data", KindStream},
		{"error object", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\"}}]}\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\n", "h", "stream: boom", KindStream},
		{"error string", "data: {\"error\":\"overloaded\"}\n\n", "", "stream: overloaded", KindStream},
		{"error without a message", "event: error\ndata: {\"error\":{\"code\":\"E1\"}}\n\n", "", `received error while streaming: {"code":"E1"}`, KindStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := serveStream(t, tc.body)
			if tc.err == "" {
				if err != nil || resp.Message.Content != tc.want {
					t.Fatalf("reply %q, err %v; want %q", resp.Message.Content, err, tc.want)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != tc.kind || !strings.Contains(e.Error(), tc.err) || e.Partial != tc.want {
				t.Fatalf("err = %#v, want kind %v with %q and partial %q", err, tc.kind, tc.err, tc.want)
			}
		})
	}
}

// serveStream serves body as a chat-completions stream and makes one call.
func serveStream(t *testing.T, body string) (Response, error) {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	defer hs.Close()
	c := New(Config{BaseURL: hs.URL + "/v1", MaxRetries: -1, IdleTimeout: 5 * time.Second, CallTimeout: 10 * time.Second})
	return c.Stream(context.Background(), Request{Model: "m"}, Observer{})
}

// A whole tool call's arguments may come in one line far beyond bufio's
// default 64 KiB.
func TestSSEReaderLongLine(t *testing.T) {
	args := strings.Repeat("x", 3<<20)
	body := `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"` + args + `"}}]},"finish_reason":"tool_calls"}]}` + "\n\n"
	acc, n, err := readAll([]byte(body))
	if err != nil || n != 1 || acc.message().ToolCalls[0].Arguments != args {
		t.Fatalf("chunks %d, err %v", n, err)
	}
}

// BenchmarkDecodeStream decodes the canned 200-chunk stream as the
// client does (openai-go's decoder, Polly's accumulator).
func BenchmarkDecodeStream(b *testing.B) {
	body := cannedStream()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := readAll(body); err != nil {
			b.Fatal(err)
		}
	}
}

package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// FuzzStream serves arbitrary bytes as a chat-completions SSE response and
// checks the client always returns — a response or a classified *Error —
// without a panic or a hang.
func FuzzStream(f *testing.F) {
	f.Add([]byte("data: {\"id\":\"1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"x\",\"arguments\":\"{\\\"a\"}}]}}]}\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"boom\",\"code\":\"server_error\"}}\n\n"))
	f.Add([]byte("data: {not json\n\n"))
	f.Add([]byte(": keep-alive\n\nevent: ping\ndata: {}\n\n"))
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":1e99}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("<html>502</html>"))
	f.Add([]byte{})
	// Quirks of real servers (agent/testdata/streams has them in full).
	f.Add([]byte("data:{\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"x\",\"arguments\":\"{\"}}]}}]}\n\n: PROCESSING\n\ndata:{\"id\":\"b\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"}\"}}]},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3}}\n\ndata:[DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"t\"}]},\"finish_reason\":\"stop\"}]}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(body)
		}))
		defer srv.Close()
		c := New(Config{BaseURL: srv.URL + "/v1", MaxRetries: -1, IdleTimeout: 2 * time.Second, CallTimeout: 5 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Stream(ctx, Request{Model: "m", Messages: nil}, Observer{})
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error is not classified: %T %v", err, err)
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the call hung until the test deadline")
		}
	})
}

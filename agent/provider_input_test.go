package agent

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/memory/store"
)

// Bad input from the provider, read by openai-go through the whole loop:
// an HTML page, an SSE error event, a chunk with fields nobody knows, a
// 10 MB reply and a 10 MB error body. Each is a clear error or a reply —
// never a panic — and the session is on disk afterwards (read by a second
// handle on the SQLite file, as the next Polly process would) and goes on.
func TestBadProviderInputKeepsTheSession(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 10<<20/16) // 10 MB
	unknownFields := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"x_vendor\":{\"trace\":[1,2]},\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"All \",\"x_tokens\":[\"All\"]},\"x_score\":0.5}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done.\"},\"finish_reason\":\"stop\",\"stop_reason\":151645}],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":30,\"x_cost\":\"0.1\"}}\n\n" +
		"data: [DONE]\n\n"
	htmlOK := llmtest.Fail{Status: 200, ContentType: "text/html", Body: "<html><body>Please log in to the hotel wifi</body></html>"}
	html502 := llmtest.Fail{Status: 502, ContentType: "text/html", Body: "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"}
	bigError := llmtest.Fail{Status: 500, ContentType: "text/plain", Body: "upstream exploded: " + big}
	cases := []struct {
		name    string
		steps   []llmtest.Step
		kind    llm.Kind // KindUnknown: a reply
		inError string
		final   int // length of the reply
	}{
		{"HTML page with status 200", []llmtest.Step{htmlOK, htmlOK}, llm.KindStream, "hotel wifi", 0},
		{"HTML error page", []llmtest.Step{html502, html502}, llm.KindServer, "<title>502 Bad Gateway</title>", 0},
		{"SSE error event", []llmtest.Step{llmtest.StreamError{AfterText: "par", Code: "server_error", Message: "upstream overloaded"}, llmtest.StreamError{Message: "upstream overloaded"}},
			llm.KindStream, "upstream overloaded", 0},
		{"chunks with unknown fields", []llmtest.Step{llmtest.Raw{Body: unknownFields}}, llm.KindUnknown, "", len("All done.")},
		{"10 MB reply", []llmtest.Step{llmtest.Reply{Text: big, ChunkSize: 1 << 20}}, llm.KindUnknown, "", len(big)},
		{"10 MB error body", []llmtest.Step{bigError, bigError}, llm.KindServer, "upstream exploded: 0123", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.steps...)
			h.deps.LLM = llm.New(llm.Config{BaseURL: h.srv.URL(), APIKey: "k", MaxRetries: 1, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
			out, err := h.send(context.Background(), "first prompt")
			if tc.kind == llm.KindUnknown {
				if err != nil || len(out.Final) != tc.final {
					t.Fatalf("want a reply of %d bytes, got %d bytes, %v", tc.final, len(out.Final), err)
				}
			} else {
				e := eventsOf[ErrorEvent](h)
				if llm.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.inError) || len(e) != 1 || !strings.Contains(e[0].Message, tc.inError) {
					t.Fatalf("err = %v (kind %v), error events %+v; want kind %v saying %q", err, llm.KindOf(err), e, tc.kind, tc.inError)
				}
				if len(err.Error()) > 400 {
					t.Errorf("the error is %d bytes long: a body should be cut to its start", len(err.Error()))
				}
			}

			// On disk, as a new process sees it.
			other, err := store.Open(filepath.Join(h.dir, ".agent", "polly.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			msgs, err := other.Messages(context.Background(), h.session.ID(), "default")
			if err != nil || len(msgs) == 0 || msgs[0].Content != "first prompt" {
				t.Fatalf("stored messages %d, %v: want the prompt first", len(msgs), err)
			}
			if tc.kind == llm.KindUnknown && (len(msgs) != 2 || len(msgs[1].Content) != tc.final) {
				t.Fatalf("stored %d messages, reply %d bytes; want the prompt and the %d-byte reply", len(msgs), len(msgs[len(msgs)-1].Content), tc.final)
			}

			// The session goes on, its history intact. After the 10 MB reply
			// the context is far over the window, so it is summarized first
			// (the summarizer's requests carry no tools): the first prompt
			// then reaches the model through the summary and the task block.
			h.srv.Serve(func(r llmtest.Request) llmtest.Step {
				if len(r.Tools) == 0 {
					return llmtest.Text("## CURRENT TASK\nfirst prompt\n\n## DONE SO FAR\nA long reply was given.\n\n## NEXT STEPS\nAnswer the second prompt.\n")
				}
				return llmtest.Text("ok")
			})
			if out, err := h.send(context.Background(), "second prompt"); err != nil || out.Final != "ok" {
				t.Fatalf("next prompt: %+v, %v", out, err)
			}
			last := h.srv.Last()
			if got := last.Messages; len(got) < 3 || !strings.Contains(string(last.Raw), "first prompt") || got[len(got)-1].Content != "second prompt" && last.LastTurn().Content != "second prompt" {
				t.Fatalf("next request carried %d messages", len(got))
			}
		})
	}
}

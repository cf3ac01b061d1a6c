package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"polly/memory/chat"
)

// A request record rebuilds its request: stored messages by id (with what
// replaced them when sent), unstored ones whole, the system prompt and
// tools from texts stored once per session; a missing text or a changed
// message is a RecordError, a call without a record ErrNoRecord.
func TestRequestRecordRebuilds(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	user, err := s.AppendMessage(ctx, sess.ID, "coder", chat.UserText("read a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	call := chat.ToolCall{ID: "c1", Name: "read_file", Arguments: `{"path":"a.txt"}`}
	asst, _ := s.AppendMessage(ctx, sess.ID, "coder", chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{call}})
	res, _ := s.AppendMessage(ctx, sess.ID, "coder", chat.ToolResult(call, strings.Repeat("long output\n", 100)))

	sys, tools := "You are Polly.", `[{"type":"function","function":{"name":"read_file","parameters":{}}}]`
	stub := "[output #1: hidden]"
	block := chat.Message{Role: chat.User, Kind: chat.KindTaskBlock, Content: "[TASK — anchor #0 …]"}
	sent := []chat.Message{chat.SystemText(sys), user, asst, {Role: chat.Tool, ToolCallID: "c1", Content: stub}, block}
	rec := func() *RequestRecord {
		return &RequestRecord{Kind: "main", Model: "m", System: TextHash(sys), SystemText: sys, Tools: TextHash(tools), ToolsText: tools,
			Messages: []RecordedMessage{{ID: user.ID}, {ID: asst.ID}, {ID: res.ID, Content: &stub}, {Message: &block}}, Sum: WireSum(sent)}
	}
	for i := 0; i < 2; i++ {
		if err := s.RecordLLMCall(ctx, LLMCall{SessionID: sess.ID, Persona: "coder", Model: "m", Request: rec()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordLLMCall(ctx, LLMCall{SessionID: sess.ID, Persona: "coder", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	var texts int
	s.r.QueryRow(`SELECT COUNT(*) FROM context_texts WHERE session_id = ?`, sess.ID).Scan(&texts)
	if texts != 2 {
		t.Fatalf("%d texts stored for two calls with the same prompt and tools, want 2", texts)
	}
	calls, err := s.Calls(ctx, sess.ID)
	if err != nil || len(calls) != 3 || calls[2].Record != nil {
		t.Fatalf("calls: %d, %v", len(calls), err)
	}
	rb, err := s.Rebuild(ctx, calls[0])
	if err != nil {
		t.Fatal(err)
	}
	if WireSum(rb.Messages) != WireSum(sent) || rb.Tools != tools || rb.Messages[3].Content != stub || rb.Messages[4].Kind != chat.KindTaskBlock {
		t.Fatalf("rebuilt %+v", rb.Messages)
	}
	if _, err := s.Rebuild(ctx, calls[2]); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("no record: %v", err)
	}
	var re *RecordError
	s.w.Exec(`UPDATE messages SET content = 'changed' WHERE id = ?`, user.ID)
	if _, err := s.Rebuild(ctx, calls[0]); !errors.As(err, &re) || !strings.Contains(err.Error(), "a stored message changed") {
		t.Fatalf("changed message: %v", err)
	}
	s.w.Exec(`DELETE FROM context_texts WHERE kind = 'tools'`)
	if _, err := s.Rebuild(ctx, calls[1]); !errors.As(err, &re) || !strings.Contains(err.Error(), "its tool set text") {
		t.Fatalf("missing text: %v", err)
	}
	// The texts go with their session.
	if _, err := s.w.Exec(`DELETE FROM sessions WHERE id = ?`, sess.ID); err != nil {
		t.Fatal(err)
	}
	s.r.QueryRow(`SELECT COUNT(*) FROM context_texts`).Scan(&texts)
	if texts != 0 {
		t.Fatalf("%d texts outlive their session", texts)
	}
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
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
			Messages: []RecordedMessage{{ID: user.ID}, {ID: asst.ID}, {ID: res.ID, Content: &stub}, {Message: &block}}, Sum: chat.WireSum(sent)}
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
	if chat.WireSum(rb.Messages) != chat.WireSum(sent) || rb.Tools != tools || rb.Messages[3].Content != stub || rb.Messages[4].Kind != chat.KindTaskBlock {
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

// A message sent as its stale output's stub is recorded by id ("12s"), the
// stub's text being stored with the message: a record stays a few bytes a
// message however long the task. The rebuild takes the stored stub; a
// message without one is a RecordError.
func TestRequestRecordNamesStubs(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	var sent []chat.Message
	var rec RecordedMessages
	for i := range 3 {
		call := chat.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "read_file", Arguments: `{"path":"a.txt"}`}
		res := chat.ToolResult(call, strings.Repeat("long output\n", 100))
		res.Output = &chat.Output{Chars: 1200, Lines: 100, Stub: fmt.Sprintf("[output #%d of read_file: hidden]", i+1)}
		res, err := s.AppendMessage(ctx, sess.ID, "coder", res)
		if err != nil {
			t.Fatal(err)
		}
		m := res
		m.Content = res.Output.Stub
		sent = append(sent, m)
		rec = rec.Add(RecordedMessage{ID: res.ID, Stub: true})
	}
	if len(rec) != 1 {
		t.Fatalf("three consecutive stubs made %d entries, want one run", len(rec))
	}
	r := &RequestRecord{Kind: "main", Model: "m", Messages: rec, Sum: chat.WireSum(append([]chat.Message{chat.SystemText("")}, sent...))}
	if err := s.RecordLLMCall(ctx, LLMCall{SessionID: sess.ID, Persona: "coder", Model: "m", Request: r}); err != nil {
		t.Fatal(err)
	}
	var raw string
	s.r.QueryRow(`SELECT request FROM llm_calls WHERE session_id = ?`, sess.ID).Scan(&raw)
	if want := fmt.Sprintf(`"messages":["%d-%ds"]`, sent[0].ID, sent[2].ID); !strings.Contains(raw, want) || strings.Contains(raw, "hidden") {
		t.Fatalf("stored record %s, want %s and no stub text", raw, want)
	}
	calls, err := s.Calls(ctx, sess.ID)
	if err != nil || len(calls) != 1 {
		t.Fatalf("calls: %d, %v", len(calls), err)
	}
	rb, err := s.Rebuild(ctx, calls[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range rb.Messages[1:] {
		if m.Content != sent[i].Content {
			t.Fatalf("message %d rebuilt as %q, sent as %q", i+1, m.Content, sent[i].Content)
		}
	}
	s.w.Exec(`UPDATE messages SET output_stub = '' WHERE id = ?`, sent[1].ID)
	var re *RecordError
	if _, err := s.Rebuild(ctx, calls[0]); !errors.As(err, &re) || !strings.Contains(err.Error(), "no stub is stored") {
		t.Fatalf("missing stub: %v", err)
	}
}

// encodeRecord splices the messages into the record's JSON instead of
// letting encoding/json compact them again: the bytes must be exactly
// json.Marshal's, whatever the strings hold.
func TestEncodeRecordIsJSONMarshal(t *testing.T) {
	content, temp := `"messages":[] <b>&</b>`, 0.2
	records := []*RequestRecord{
		{Kind: "main", Model: "m"},
		{Kind: "main", Persona: `co"der`, Model: `"messages":[]`, Temperature: &temp, MaxTokens: 9, System: "abc", Tools: "def", ToolCount: 2,
			Messages: RecordedMessages{{ID: 3, Through: 9}, {ID: 10, Stub: true}, {ID: 11, Content: &content, Args: map[string]string{"c1": `{"a":"<x>"}`}},
				{Message: &chat.Message{Role: chat.User, Content: "task block: \u2028 <&> \"q\"", Kind: chat.KindNormal}}, {ID: 12, Through: 14, Stub: true}},
			Sum: "s", Tokens: Breakdown{System: 1, History: 2}, Window: 32000, Budget: 30000, Threshold: 20000, Fixed: 900,
			SystemText: "not in the JSON", ToolsText: "nor this"},
	}
	for i, r := range records {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// A record's messages encoded after the entries it shares with the last
// record are, byte for byte, what MarshalJSON writes: over random lists as
// Add builds them (runs, stubs, replaced contents, whole messages), each
// the prefix of the one before with its last run cut, and more added.
func TestEncodeMessagesAfterIsMarshalJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	add := func(ms RecordedMessages, n int, next *int64) RecordedMessages {
		for range n {
			switch k := r.IntN(10); {
			case k < 6:
				ms = ms.Add(RecordedMessage{ID: *next})
			case k < 8:
				ms = ms.Add(RecordedMessage{ID: *next, Stub: true})
			case k < 9:
				c := fmt.Sprintf("shortened \"%d\" <&>", *next)
				ms = ms.Add(RecordedMessage{ID: *next, Content: &c})
			default:
				ms = ms.Add(RecordedMessage{Message: &chat.Message{Role: chat.User, Content: "block\u2028"}})
			}
			*next += int64(1 + r.IntN(2)*r.IntN(3)) // mostly consecutive ids
		}
		return ms
	}
	for range 200 {
		next := int64(1 + r.IntN(50))
		last := add(nil, r.IntN(40), &next)
		lastJSON, lastEnds, err := EncodeMessagesAfter(last, 0, nil, nil)
		if want, _ := last.MarshalJSON(); err != nil || string(lastJSON) != string(want) {
			t.Fatalf("from nothing: %s, want %s (%v)", lastJSON, want, err)
		}
		for range 5 {
			n := r.IntN(last.Len() + 1)
			ms := last.Prefix(n, 8)
			keep := max(0, len(ms)-1)
			ms = add(ms, r.IntN(6), &next)
			got, ends, err := EncodeMessagesAfter(ms, keep, lastJSON, lastEnds)
			want, _ := ms.MarshalJSON()
			if err != nil || string(got) != string(want) {
				t.Fatalf("after %d entries of %s:\ngot  %s\nwant %s (%v)", keep, lastJSON, got, want, err)
			}
			if len(ends) != len(ms) {
				t.Fatalf("%d ends for %d entries", len(ends), len(ms))
			}
			last, lastJSON, lastEnds = ms, got, ends
		}
	}
}

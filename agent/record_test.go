package agent

import (
	"testing"

	"polly/agent/llm"
	"polly/memory/chat"
	"polly/memory/store"
)

// A main request's record takes the messages it shares with the last
// request from the start (as the client found them on the wire) from the
// last record, and looks up only the rest in the history; without the
// client's word for it — another cache's request, none at all — it looks
// them all up. The proof is a history message changed between the two
// requests: taken from the last record it is named as it was, looked up
// it is named with its new text.
func TestRecordTakesTheSharedMessagesFromTheLastRecord(t *testing.T) {
	h := newHarness(t)
	p, _ := h.deps.Personas.Find("default")
	a := newAgent(h.deps, p, "", "", "default", func(Event) {}, nil, 0)
	a.session = h.session.ID()
	for i := range 8 {
		a.history = append(a.history, chat.Message{ID: int64(100 + i), Role: chat.User, Content: "message"})
	}
	sys := chat.SystemText("You are Polly.")
	req := func(n int) llm.Request {
		return llm.Request{Model: "m", Messages: append([]chat.Message{sys}, a.history[:n]...)}
	}
	first := a.requestRecord("main", req(5), nil, llm.Response{Encoded: llm.Encoded{Seq: 1}})
	if got, _ := first.Messages.MarshalJSON(); string(got) != `["100-104"]` {
		t.Fatalf("first record: %s", got)
	}
	// Message 102 is sent again as it was (the client kept the first 6
	// messages: the system prompt and 5), while its history entry has
	// changed since: a lookup would name it with the text it carries.
	a.history[2].Content = "edited since"
	r := req(7)
	r.Messages[3].Content = "message"
	second := a.requestRecord("main", r, nil, llm.Response{Encoded: llm.Encoded{Seq: 2, Kept: 6}})
	if got, _ := second.Messages.MarshalJSON(); string(got) != `["100-106"]` {
		t.Fatalf("second record, from the first: %s", got)
	}
	if first.Messages[0].Through != 104 {
		t.Fatalf("the first record changed with the second: %+v", first.Messages)
	}
	// Not the cache's next request: every message is looked up, and 102
	// is named with the text the request carries.
	third := a.requestRecord("main", r, nil, llm.Response{Encoded: llm.Encoded{Seq: 9, Kept: 7}})
	if got, _ := third.Messages.MarshalJSON(); string(got) != `["100-101",{"id":102,"content":"message"},"103-106"]` {
		t.Fatalf("third record, looked up: %s", got)
	}
	// Sharing only the system prompt: everything looked up.
	fourth := a.requestRecord("main", req(8), nil, llm.Response{Encoded: llm.Encoded{Seq: 10, Kept: 1}})
	if got, _ := fourth.Messages.MarshalJSON(); string(got) != `["100-107"]` {
		t.Fatalf("fourth record: %s", got)
	}
	// A run cut where the shared messages end: 3 shared, then the rest.
	fifth := a.requestRecord("main", req(8), nil, llm.Response{Encoded: llm.Encoded{Seq: 11, Kept: 4}})
	if got, _ := fifth.Messages.MarshalJSON(); string(got) != `["100-107"]` || len(fifth.Messages) != 1 {
		t.Fatalf("fifth record: %s (%d entries)", got, len(fifth.Messages))
	}
	// Each record's messages were encoded as it was made, from the last
	// one's JSON: what the store saves instead of encoding them again.
	for i, r := range []*store.RequestRecord{first, second, third, fourth, fifth} {
		if want, _ := r.Messages.MarshalJSON(); string(r.MessagesJSON) != string(want) {
			t.Errorf("record %d: messages JSON %s, want %s", i+1, r.MessagesJSON, want)
		}
	}
}

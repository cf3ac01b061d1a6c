package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"polly/memory/chat"
)

func TestMessagesRoundTrip(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	execID, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Persona: "coder", Tool: "bash",
		Output: "whole output", Status: ExecError})
	if err != nil {
		t.Fatal(err)
	}

	in := []chat.Message{
		{Role: chat.System, Content: "you are polly", Tokens: 4},
		{Role: chat.User, Content: "  fix   the\n build  ", Tokens: 5},
		{Role: chat.Assistant, Content: "", ToolCalls: []chat.ToolCall{
			{ID: "call_1", Name: "bash", Arguments: `{"command":"go build ./..."}`},
			{ID: "call_2", Name: "read_file", Arguments: `{"path":"ü.go"}`},
		}},
		{Role: chat.Tool, ToolCallID: "call_1", ToolName: "bash", Content: "preview…",
			Output: &chat.Output{ExecID: execID, Chars: 12, Lines: 1, Offloaded: true, Failed: true, Stub: "[output #1 of grep: 12 chars]"}},
		{Role: chat.Tool, ToolCallID: "call_2", ToolName: "read_file", Content: "short",
			Output: &chat.Output{Chars: 5, Lines: 1}}, // Output without a stored execution
		{Role: chat.User, Kind: chat.KindAnchor, Content: "[TASK ANCHOR — Reminder #1]"},
		{Role: chat.Assistant, Content: "done ✓", Tokens: 3},
	}
	var want []chat.Message
	for _, m := range in {
		got, err := s.AppendMessage(ctx, sess.ID, "coder", m)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID == 0 {
			t.Fatal("AppendMessage did not set ID")
		}
		m.ID = got.ID
		want = append(want, m)
	}
	// Another persona's messages in the same session stay apart.
	if _, err := s.AppendMessage(ctx, sess.ID, "reviewer", chat.UserText("review it")); err != nil {
		t.Fatal(err)
	}

	got, err := s.Messages(ctx, sess.ID, "coder")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	assertSeqGapFree(t, s, sess.ID, "coder", len(in))
	assertSeqGapFree(t, s, sess.ID, "reviewer", 1)

	personas, err := s.Personas(ctx, sess.ID)
	if err != nil || !reflect.DeepEqual(personas, []string{"coder", "reviewer"}) {
		t.Errorf("personas %v (%v)", personas, err)
	}
	got2, err := s.Session(ctx, sess.ID)
	if err != nil || got2.Title != "fix the build" {
		t.Errorf("title %q (%v), want the first user prompt, whitespace collapsed", got2.Title, err)
	}
}

func TestArchiveAndDelete(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	var ids []int64
	for i := range 6 {
		m, err := s.AppendMessage(ctx, sess.ID, "coder", chat.UserText(fmt.Sprint("m", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	sumID, err := s.SaveSummary(ctx, Summary{SessionID: sess.ID, Persona: "coder", Content: "CURRENT TASK …",
		TokensBefore: 900, TokensAfter: 100, MessagesReplaced: 3, ArchivePath: ".agent/archive/x.json"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ArchiveMessages(ctx, ids[:3], sumID); err != nil {
		t.Fatal(err)
	}
	live, _ := s.Messages(ctx, sess.ID, "coder")
	all, _ := s.AllMessages(ctx, sess.ID, "coder")
	if len(live) != 3 || live[0].ID != ids[3] || len(all) != 6 || all[0].ID != ids[0] {
		t.Fatalf("after archive: %d live (first %d), %d all", len(live), live[0].ID, len(all))
	}

	// All or nothing: one already archived id spoils the batch.
	err = s.ArchiveMessages(ctx, []int64{ids[3], ids[0]}, sumID)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("archive again: %v, want ErrNotFound", err)
	}
	if live, _ := s.Messages(ctx, sess.ID, "coder"); len(live) != 3 {
		t.Errorf("failed archive changed %d messages", 3-len(live))
	}
	// Unknown summary: the foreign key says no.
	if err := s.ArchiveMessages(ctx, ids[3:4], 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("archive under unknown summary: %v, want ErrNotFound", err)
	}

	if err := s.DeleteMessage(ctx, ids[4]); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMessage(ctx, ids[4]); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete twice: %v, want ErrNotFound", err)
	}
	live, _ = s.Messages(ctx, sess.ID, "coder")
	if len(live) != 2 || live[0].ID != ids[3] || live[1].ID != ids[5] {
		t.Errorf("after delete: %+v", live)
	}
	// A new message still goes last.
	m, err := s.AppendMessage(ctx, sess.ID, "coder", chat.AssistantText("new"))
	if err != nil {
		t.Fatal(err)
	}
	if live, _ = s.Messages(ctx, sess.ID, "coder"); live[len(live)-1].ID != m.ID {
		t.Errorf("appended message is not last")
	}
}

func TestConcurrentAppend(t *testing.T) {
	const workers, perWorker = 8, 100
	for _, tc := range []struct {
		name    string
		persona func(w int) string
	}{
		{"same persona", func(int) string { return "coder" }},
		{"own persona", func(w int) string { return fmt.Sprint("sub", w) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			ctx := context.Background()
			sess := mustSession(t, s)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perWorker {
						_, err := s.AppendMessage(ctx, sess.ID, tc.persona(w), chat.AssistantText(fmt.Sprintf("%d/%d", w, i)))
						if err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()

			personas, err := s.Personas(ctx, sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, p := range personas {
				msgs, err := s.Messages(ctx, sess.ID, p)
				if err != nil {
					t.Fatal(err)
				}
				assertSeqGapFree(t, s, sess.ID, p, len(msgs))
				// Each worker's messages appear in the order it wrote them.
				next := map[int]int{}
				for _, m := range msgs {
					var w, i int
					fmt.Sscanf(m.Content, "%d/%d", &w, &i)
					if i != next[w] {
						t.Fatalf("%s: worker %d message %d where %d expected", p, w, i, next[w])
					}
					next[w]++
					seen[m.Content] = true
				}
			}
			if len(seen) != workers*perWorker {
				t.Errorf("%d distinct messages stored, want %d", len(seen), workers*perWorker)
			}
		})
	}
}

package store

import (
	"context"
	"errors"
	"testing"

	"polly/memory/chat"
)

// TestBatchCommitsOnce: the writes made inside a Batch are one
// transaction — another connection sees none of them until fn returns,
// then all of them — and a write that fails inside it is undone alone.
func TestBatchCommitsOnce(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	count := func() int {
		t.Helper()
		ms, err := s.Messages(ctx, sess.ID, "default")
		if err != nil {
			t.Fatal(err)
		}
		return len(ms)
	}
	err := s.Batch(ctx, func(ctx context.Context) error {
		if _, err := s.AppendMessage(ctx, sess.ID, "default", chat.AssistantText("one")); err != nil {
			return err
		}
		id, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Persona: "default", CallID: "c1", Tool: "read_file", Arguments: "{}", Output: "body", Status: ExecOK})
		if err != nil {
			return err
		}
		if err := s.SetToolPreview(ctx, id, "preview"); err != nil {
			return err
		}
		if err := s.RecordLLMCall(ctx, LLMCall{SessionID: sess.ID, Persona: "default", Model: "m", Usage: chat.Usage{PromptTokens: 10}}); err != nil {
			return err
		}
		if err := s.SaveAgentState(ctx, sess.ID, "default", []byte(`{"n":1}`)); err != nil {
			return err
		}
		// A write that fails (no such session: a foreign key) is undone
		// alone and reports its error; the batch goes on.
		if _, err := s.AppendMessage(ctx, "no-such-session", "default", chat.AssistantText("lost")); err == nil {
			t.Error("a message for a missing session was stored")
		}
		if _, err := s.AppendMessage(ctx, sess.ID, "default", chat.AssistantText("two")); err != nil {
			return err
		}
		if n := count(); n != 0 {
			t.Errorf("another connection saw %d messages before the batch committed", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Errorf("after the batch: %d messages, want 2", n)
	}
	u, err := s.Usage(ctx, sess.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if u.Total.Calls != 1 || u.Total.PromptTokens != 10 {
		t.Errorf("usage after the batch = %+v, want the one call", u)
	}
	if st, err := s.AgentState(ctx, sess.ID, "default"); err != nil || string(st) != `{"n":1}` {
		t.Errorf("agent state = %q, %v", st, err)
	}

	// fn failing rolls everything back.
	boom := errors.New("boom")
	err = s.Batch(ctx, func(ctx context.Context) error {
		if _, err := s.AppendMessage(ctx, sess.ID, "default", chat.AssistantText("three")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Batch = %v, want fn's error", err)
	}
	if n := count(); n != 2 {
		t.Errorf("after a failed batch: %d messages, want 2", n)
	}
}

package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"polly/memory/chat"
)

// What a transcript showed comes back: a user message's label, an
// execution's exit code, duration, status and diff (cut past DiffMax).
func TestTranscriptRecords(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess, err := s.CreateSession(ctx, Session{Persona: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, sess.ID, "default", chat.Message{Role: chat.User, Content: "long text", Label: "[pasted 300 lines #1]"}); err != nil {
		t.Fatal(err)
	}
	one := 1
	id, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "run_command", Output: "boom", Status: ExecError, ExitCode: &one, Duration: 18 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	big, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "write_file", Output: "ok", Status: ExecOK})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetToolDiff(ctx, big, strings.Repeat("+line\n", DiffMax/6+10)); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx, sess.ID, "default")
	if err != nil || msgs[0].Label != "[pasted 300 lines #1]" {
		t.Fatalf("label: %+v %v", msgs, err)
	}
	recs, err := s.ToolRecords(ctx, []int64{id, big, 999})
	if err != nil {
		t.Fatal(err)
	}
	r := recs[id]
	if len(recs) != 2 || r.Status != ExecError || r.ExitCode == nil || *r.ExitCode != 1 || r.Duration != 18*time.Millisecond || r.Diff != "" {
		t.Fatalf("records: %+v", recs)
	}
	if d := recs[big].Diff; len(d) > DiffMax+100 || !strings.HasSuffix(d, "(the diff was cut here when it was stored)") {
		t.Fatalf("big diff: %d bytes, ends %q", len(d), d[len(d)-40:])
	}
}

// A model chosen in a session is remembered per persona, replaced by the
// next choice, and forgotten with "".
func TestSessionModels(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess, err := s.CreateSession(ctx, Session{Persona: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"default", "gpt-4.1-mini"}, {"coder", "ollama/qwen"}, {"default", "gpt-4.1"}} {
		if err := s.SetSessionModel(ctx, sess.ID, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SessionModels(ctx, sess.ID)
	if err != nil || len(got) != 2 || got["default"] != "gpt-4.1" || got["coder"] != "ollama/qwen" {
		t.Fatalf("%v %v", got, err)
	}
	if err := s.SetSessionModel(ctx, sess.ID, "coder", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SessionModels(ctx, sess.ID); len(got) != 1 {
		t.Fatalf("after forgetting: %v", got)
	}
}

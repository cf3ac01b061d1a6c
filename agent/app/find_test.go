package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"polly/agent"
	"polly/agent/llmtest"
)

// What a user types after --continue / --session / /resume finds the
// session in the store: "latest", a whole id, a unique prefix; anything
// else is a NoSessionError (bad usage), never a fresh session.
func TestFindSession(t *testing.T) {
	srv := llmtest.NewServer(t)
	a := openLocal(t, srv, t.TempDir())
	ctx := context.Background()
	var none *NoSessionError
	if _, err := a.FindSession(ctx, "latest"); !errors.As(err, &none) || !strings.Contains(err.Error(), "no earlier session") {
		t.Fatalf("latest in an empty store: %v", err)
	}

	sess, err := a.Session(ctx, func(agent.Event) {}, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Push(llmtest.Text("hello back"))
	if _, err := sess.Send(ctx, "default", "hello"); err != nil {
		t.Fatal(err)
	}
	id := sess.ID()
	for _, typed := range []string{"latest", id, " " + id + " ", id[:3]} {
		got, err := a.FindSession(ctx, typed)
		if err != nil || got != id {
			t.Errorf("FindSession(%q) = %q, %v; want %s", typed, got, err, id)
		}
	}
	for typed, want := range map[string]string{
		"":         "no session id given",
		"zz-nope":  `no session "zz-nope"`,
		id + "0xx": "no session",
	} {
		if _, err := a.FindSession(ctx, typed); !errors.As(err, &none) || !strings.Contains(err.Error(), want) {
			t.Errorf("FindSession(%q) = %v, want a NoSessionError saying %q", typed, err, want)
		}
	}
}

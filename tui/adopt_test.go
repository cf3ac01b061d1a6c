package tui

import (
	"context"
	"strings"
	"testing"

	"polly/memory/chat"
	"polly/memory/store"
)

// Issue 25 #1 in the TUI: /sessions marks a session Polly did not make
// here; resuming it shows what it is and asks. n leaves it alone (nothing
// of it is loaded); a adopts it and resumes it with its history.
func TestForeignSessionAsksBeforeResume(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	st := h.app.Store
	shipped, err := st.CreateSession(ctx, store.Session{Persona: "default", Title: "shipped work", Project: "/home/mallory/proj",
		Owner: "v1:0123456789ab:00112233445566778899aabbccddeeff"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMessage(ctx, shipped.ID, "default", chat.Message{Role: chat.User, Content: "FAKE USER HISTORY"}); err != nil {
		t.Fatal(err)
	}

	open := func() {
		h.key("ctrl+s")
		h.until("the list", func() bool { return sessP(h).done && len(sessP(h).rows) > 0 })
		if scr := h.screen(); !strings.Contains(scr, "(not made here) shipped work") {
			t.Fatalf("the list does not mark the shipped session:\n%s", scr)
		}
		h.key("enter")
		h.until("the question", func() bool { return h.m.adopt != nil && h.idle() })
	}
	open()
	scr := h.screen()
	for _, want := range []string{"Continue a session Polly did not make here?", shipped.ID, "another Polly install (0123456789ab)", "/home/mallory/proj", "a adopt and continue"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the question lacks %q:\n%s", want, scr)
		}
	}
	h.key("n")
	if h.m.adopt != nil || h.m.sessID == shipped.ID || hasItem(h.m.current().tr, kUser, "FAKE USER HISTORY") {
		t.Fatal("n did not leave the session alone")
	}

	open()
	h.key("a")
	h.until("the history", func() bool { return h.idle() && hasItem(h.m.current().tr, kUser, "FAKE USER HISTORY") })
	if h.m.sessID != shipped.ID {
		t.Fatalf("resumed %q, want %s", h.m.sessID, shipped.ID)
	}
	got, err := st.Session(ctx, shipped.ID)
	if err != nil || h.app.Owner.Check(got) != nil {
		t.Fatalf("not adopted: %+v %v", got, err)
	}
}

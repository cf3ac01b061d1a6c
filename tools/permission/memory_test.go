package permission

import (
	"context"
	"strings"
	"testing"

	"polly/tools"
)

// Issue 25 #3: a write to the workspace memory is asked like a file edit
// in mode ask, applied in auto-edit and yolo; after the session read
// untrusted content it asks in every mode but yolo, whatever the allow
// rules say; deny rules still deny.
func TestMemoryWrites(t *testing.T) {
	pr := newProject(t)
	clean := tools.Access{Kind: tools.AccessMemory, Paths: []string{"MEMORY.md"}, Preview: "+- a fact"}
	tainted := clean
	tainted.Untrusted = []string{"https://evil.test/notes"}
	allowSave := Rules{Allow: []Rule{rule("workspace_save_fact", "")}}
	denySave := Rules{Deny: []Rule{rule("workspace_save_fact", "")}}
	for _, c := range []struct {
		mode  Mode
		rules Rules
		acc   tools.Access
		want  Verdict
	}{
		{Ask, Rules{}, clean, Asks},
		{AutoEdit, Rules{}, clean, Allowed},
		{Yolo, Rules{}, clean, Allowed},
		{Ask, allowSave, clean, Allowed},
		{Ask, Rules{}, tainted, Asks},
		{AutoEdit, Rules{}, tainted, Asks},
		{Ask, allowSave, tainted, Asks}, // an allow rule does not lift it
		{Yolo, Rules{}, tainted, Allowed},
		{Yolo, denySave, clean, Refused},
		{Yolo, denySave, tainted, Refused},
	} {
		d := pr.policy(t, c.mode, c.rules, nil).Decide("workspace_save_fact", c.acc)
		if d.Verdict != c.want {
			t.Errorf("%s, rules %+v, untrusted %v: %s (%s), want %s", c.mode, c.rules, c.acc.Untrusted, d.Verdict, d.Reason, c.want)
		}
	}

	// Headless: denied, with a message that names the source, for the
	// model to pass on.
	err := pr.policy(t, AutoEdit, Rules{}, nil).Allow(context.Background(), "workspace_save_fact", tainted)
	if !tools.IsDenied(err) || !strings.Contains(err.Error(), "https://evil.test/notes") || !strings.Contains(err.Error(), "untrusted content") ||
		!strings.Contains(err.Error(), "Tell the user") {
		t.Fatalf("headless tainted write: %v", err)
	}
	t.Logf("headless: %v", err)

	// "Allow for this session" before the page was read does not cover a
	// write after it.
	a := &fakeAsker{replies: []Reply{{Answer: AllowSession}, {Answer: Deny}}}
	p := pr.policy(t, Ask, Rules{}, a)
	for i, acc := range []tools.Access{clean, clean, tainted} {
		err := p.Allow(context.Background(), "workspace_save_fact", acc)
		if (err == nil) != (i < 2) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if a.count() != 2 || a.asked[1].Access.Preview != "+- a fact" || !strings.Contains(a.asked[1].Reason, "untrusted content") {
		t.Fatalf("asked %d times: %+v", a.count(), a.asked)
	}
}

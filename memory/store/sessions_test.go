package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"polly/memory/chat"
)

func TestSessions(t *testing.T) {
	s := openTest(t)
	tickClock(s)
	ctx := context.Background()

	if _, err := s.LatestSession(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("latest of empty store: %v, want ErrNotFound", err)
	}
	a := mustSession(t, s)
	b := mustSession(t, s)
	child := mustChild(t, s, a.ID)
	if len(a.ID) != 8 || a.ID == b.ID || a.Status != StatusActive || a.CreatedAt.IsZero() {
		t.Fatalf("created %+v", a)
	}
	if _, err := s.CreateSession(ctx, Session{ParentID: "nope"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown parent: %v, want ErrNotFound", err)
	}
	if _, err := s.CreateSession(ctx, Session{ID: a.ID}); !errors.Is(err, ErrConflict) {
		t.Errorf("duplicate id: %v, want ErrConflict", err)
	}

	// Activity on a moves it before b; the child never shows in the list.
	for _, m := range []chat.Message{chat.UserText(strings.Repeat("long prompt ", 40)), chat.AssistantText("ok")} {
		if _, err := s.AppendMessage(ctx, a.ID, "coder", m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AppendMessage(ctx, child.ID, "sub", chat.UserText("sub task")); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLLMCall(ctx, LLMCall{SessionID: a.ID, Persona: "coder", Usage: chat.Usage{PromptTokens: 100, CompletionTokens: 7}}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListSessions(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("list order %v", ids(list))
	}
	if l := list[0]; l.Messages != 2 || l.PromptTokens != 100 || l.CompletionTokens != 7 ||
		len([]rune(l.Title)) != TitleMax || !l.UpdatedAt.After(l.CreatedAt) {
		t.Errorf("summary %+v", l)
	}
	if list, _ := s.ListSessions(ctx, 1); len(list) != 1 {
		t.Errorf("limit 1 gave %d", len(list))
	}
	latest, err := s.LatestSession(ctx)
	if err != nil || latest.ID != a.ID {
		t.Errorf("latest %v (%v), want %s", latest.ID, err, a.ID)
	}
	kids, err := s.ChildSessions(ctx, a.ID)
	if err != nil || len(kids) != 1 || kids[0].ID != child.ID || kids[0].ParentID != a.ID || kids[0].Messages != 1 {
		t.Errorf("children %+v (%v)", kids, err)
	}

	if err := s.SetSessionStatus(ctx, b.ID, StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Session(ctx, b.ID); got.Status != StatusInterrupted {
		t.Errorf("status %q", got.Status)
	}
	if err := s.SetSessionStatus(ctx, b.ID, "paused"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad status: %v, want ErrInvalid", err)
	}
	if err := s.SetSessionStatus(ctx, "nope", StatusDone); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown session: %v, want ErrNotFound", err)
	}
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Session(unknown): %v", err)
	}
}

func ids(l []SessionSummary) []string {
	var out []string
	for _, s := range l {
		out = append(out, s.ID)
	}
	return out
}

func TestUsage(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	root := mustSession(t, s)
	child := mustChild(t, s, root.ID)
	grandchild := mustChild(t, s, child.ID)
	other := mustSession(t, s)
	cost := func(f float64) *float64 { return &f }

	calls := []LLMCall{
		{SessionID: root.ID, Persona: "coder", Usage: chat.Usage{PromptTokens: 1000, CompletionTokens: 100, CachedTokens: 500}, Cost: cost(0.5)},
		{SessionID: root.ID, Persona: "coder", Usage: chat.Usage{PromptTokens: 2000, CompletionTokens: 200, CachedTokens: 1500}, Cost: cost(0.25)},
		{SessionID: root.ID, Persona: "architect", Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 1}, Error: "429", ErrorKind: "rate_limit", Attempts: 3},
		{SessionID: child.ID, Persona: "researcher", Usage: chat.Usage{PromptTokens: 300, CompletionTokens: 30}, Cost: cost(0.125)},
		{SessionID: grandchild.ID, Persona: "coder", Usage: chat.Usage{PromptTokens: 4, CompletionTokens: 4}},
		{SessionID: other.ID, Persona: "coder", Usage: chat.Usage{PromptTokens: 99999}},
	}
	for _, c := range calls {
		if err := s.RecordLLMCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	own, err := s.Usage(ctx, root.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	want := UsageTotals{
		Total: UsageStats{Usage: chat.Usage{PromptTokens: 3010, CompletionTokens: 301, CachedTokens: 2000}, Cost: 0.75, Calls: 3, Errors: 1},
		ByPersona: []PersonaUsage{
			{"architect", UsageStats{Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 1}, Calls: 1, Errors: 1}},
			{"coder", UsageStats{Usage: chat.Usage{PromptTokens: 3000, CompletionTokens: 300, CachedTokens: 2000}, Cost: 0.75, Calls: 2}},
		},
	}
	if !reflect.DeepEqual(own, want) {
		t.Errorf("own usage\n got %+v\nwant %+v", own, want)
	}

	all, err := s.Usage(ctx, root.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	want = UsageTotals{
		Total: UsageStats{Usage: chat.Usage{PromptTokens: 3314, CompletionTokens: 335, CachedTokens: 2000}, Cost: 0.875, Calls: 5, Errors: 1},
		ByPersona: []PersonaUsage{
			{"architect", UsageStats{Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 1}, Calls: 1, Errors: 1}},
			{"coder", UsageStats{Usage: chat.Usage{PromptTokens: 3004, CompletionTokens: 304, CachedTokens: 2000}, Cost: 0.75, Calls: 3}},
			{"researcher", UsageStats{Usage: chat.Usage{PromptTokens: 300, CompletionTokens: 30}, Cost: 0.125, Calls: 1}},
		},
	}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("usage with children\n got %+v\nwant %+v", all, want)
	}
	// The per-persona rows add up to the total.
	var sum UsageStats
	for _, p := range all.ByPersona {
		sum = sum.add(p.UsageStats)
	}
	if sum != all.Total {
		t.Errorf("personas sum to %+v, total %+v", sum, all.Total)
	}
}

func TestSummariesAgentStateDecisions(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)

	if _, err := s.LatestSummary(ctx, sess.ID, "coder"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no summary yet: %v", err)
	}
	for i, h := range []bool{false, true} {
		if _, err := s.SaveSummary(ctx, Summary{SessionID: sess.ID, Persona: "coder", Content: string(rune('A' + i)),
			TokensBefore: 40000, TokensAfter: 3000, MessagesReplaced: 50, Heuristic: h}); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := s.LatestSummary(ctx, sess.ID, "coder")
	if err != nil || latest.Content != "B" || !latest.Heuristic || latest.TokensBefore != 40000 || latest.MessagesReplaced != 50 {
		t.Errorf("latest summary %+v (%v)", latest, err)
	}
	if all, err := s.Summaries(ctx, sess.ID, "coder"); err != nil || len(all) != 2 || all[0].Content != "A" {
		t.Errorf("summaries %+v (%v)", all, err)
	}

	if _, err := s.AgentState(ctx, sess.ID, "coder"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no state yet: %v", err)
	}
	for _, st := range []string{`{"plan":[1]}`, `{"plan":[1,2]}`} {
		if err := s.SaveAgentState(ctx, sess.ID, "coder", []byte(st)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.AgentState(ctx, sess.ID, "coder")
	if err != nil || !json.Valid(st) || string(st) != `{"plan":[1,2]}` {
		t.Errorf("state %s (%v)", st, err)
	}

	for _, d := range []Decision{
		{SessionID: sess.ID, Tool: "bash", Kind: "exec", Target: "rm -rf build", Allowed: false, Scope: ScopeOnce, Reason: "user said no"},
		{SessionID: sess.ID, Tool: "write_file", Kind: "write", Target: "main.go", Allowed: true, Scope: ScopeSession},
	} {
		if err := s.LogDecision(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.LogDecision(ctx, Decision{SessionID: sess.ID, Tool: "bash", Scope: "forever"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad scope: %v, want ErrInvalid", err)
	}
	ds, err := s.Decisions(ctx, sess.ID)
	if err != nil || len(ds) != 2 || ds[0].Allowed || !ds[1].Allowed || ds[0].Target != "rm -rf build" || ds[1].Scope != ScopeSession {
		t.Errorf("decisions %+v (%v)", ds, err)
	}
}

func TestLeads(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	id1, err := s.UpsertLead(ctx, Lead{List: "saas", Company: "Acme", Website: "https://www.Acme.com/about", SourceURL: "https://dir.example/acme"})
	if err != nil {
		t.Fatal(err)
	}
	// Same company, no email: same row, fields filled in, empty ones kept.
	id2, err := s.UpsertLead(ctx, Lead{List: "saas", Domain: "acme.com.", Phone: "+1 555", SourceURL: "https://acme.com"})
	if err != nil || id2 != id1 {
		t.Fatalf("upsert same company: id %d vs %d (%v)", id2, id1, err)
	}
	// A contact at the company is another lead; its domain comes from the email.
	id3, err := s.UpsertLead(ctx, Lead{List: "saas", Email: " Jane@ACME.com ", ContactName: "Jane", SourceURL: "https://acme.com/team"})
	if err != nil || id3 == id1 {
		t.Fatalf("contact: id %d (%v)", id3, err)
	}
	if _, err := s.UpsertLead(ctx, Lead{List: "saas", Domain: "x.com"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("lead without source: %v, want ErrInvalid", err)
	}
	leads, err := s.Leads(ctx, "saas")
	if err != nil || len(leads) != 2 {
		t.Fatalf("leads %+v (%v)", leads, err)
	}
	if l := leads[0]; l.Company != "Acme" || l.Domain != "acme.com" || l.Phone != "+1 555" || l.Email != "" {
		t.Errorf("merged lead %+v", l)
	}
	if l := leads[1]; l.Email != "jane@acme.com" || l.Domain != "acme.com" {
		t.Errorf("contact lead %+v", l)
	}
}

// Every session made (root, child, fork) records the stamper's project and
// owner, stamped over its own id; Restamp stamps a session tree anew and
// moves its backups from the old project to the new one, leaving paths
// outside the old project alone.
func TestStampAndRestamp(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	project := "/old/proj"
	s.SetStamper(func(id string) (string, string) { return project, "stamp(" + id + "@" + project + ")" })
	root := mustSession(t, s)
	child := mustChild(t, s, root.ID)
	for _, got := range []Session{root, child} {
		if got.Project != "/old/proj" || got.Owner != "stamp("+got.ID+"@/old/proj)" {
			t.Fatalf("created %+v", got)
		}
		stored, err := s.Session(ctx, got.ID)
		if err != nil || stored.Project != got.Project || stored.Owner != got.Owner {
			t.Fatalf("stored %+v, %v", stored, err)
		}
	}
	turn, err := s.BeginTurn(ctx, root.ID, "coder", 0, "p")
	if err != nil {
		t.Fatal(err)
	}
	backup := func(path, link string) Backup {
		return Backup{SessionID: root.ID, TurnID: turn, Path: path, Link: link,
			Before: FileState{Kind: FileMissing}, After: FileState{Kind: FileMissing}}
	}
	if _, err := s.SaveBackups(ctx, []Backup{
		backup("/old/proj/a.txt", ""), backup("/old/proj/sub/b.txt", "/old/proj/l.txt"),
		backup("/old/projX/c.txt", ""), backup("/etc/passwd", ""),
	}); err != nil {
		t.Fatal(err)
	}
	fork, err := s.ForkSession(ctx, root.ID, 1)
	if err != nil || fork.Owner != "stamp("+fork.ID+"@/old/proj)" {
		t.Fatalf("fork %+v, %v", fork, err)
	}

	project = "/new/proj"
	moved, err := s.Restamp(ctx, root.ID)
	if err != nil || moved != 2 {
		t.Fatalf("restamp: moved %d, %v", moved, err)
	}
	for _, id := range []string{root.ID, child.ID} {
		got, _ := s.Session(ctx, id)
		if got.Project != "/new/proj" || got.Owner != "stamp("+id+"@/new/proj)" {
			t.Fatalf("after restamp %+v", got)
		}
	}
	if got, _ := s.Session(ctx, fork.ID); got.Owner != fork.Owner {
		t.Fatalf("restamp reached another tree: %+v", got)
	}
	bs, err := s.Backups(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, b := range bs {
		paths = append(paths, b.Path+"|"+b.Link)
	}
	want := []string{"/new/proj/a.txt|", "/new/proj/sub/b.txt|/new/proj/l.txt", "/old/projX/c.txt|", "/etc/passwd|"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("backup paths %q, want %q", paths, want)
	}
	s.SetStamper(nil)
	if _, err := s.Restamp(ctx, root.ID); !errors.Is(err, ErrInvalid) {
		t.Fatalf("restamp without a stamper: %v", err)
	}
}

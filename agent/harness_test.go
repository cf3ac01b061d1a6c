package agent

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/agent/owner"
	"polly/memory/store"
	"polly/personas"
	"polly/tools"
)

// harness is a real agent stack in a temp project: real SQLite, real tools,
// Polly's real HTTP client (agent/llm) talking to the fake server.
type harness struct {
	t       *testing.T
	dir     string
	srv     *llmtest.Server
	store   *store.Store
	deps    *Deps
	session *Session

	mu     sync.Mutex
	events []Event
}

func newHarness(t *testing.T, steps ...llmtest.Step) *harness {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, ".agent", "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	install, err := owner.Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	own := owner.Checker{Install: install, Project: config.ProjectKey(dir)}
	st.SetStamper(own.Stamp)
	srv := llmtest.NewServer(t, steps...)
	set, errs := personas.Load("")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	reg := tools.NewRegistry(tools.FileTools(dir)...)
	reg.Add(tools.ShellTool(dir, tools.ShellOptions{}))
	h := &harness{t: t, dir: dir, srv: srv, store: st}
	h.deps = &Deps{
		Store:      st,
		Owner:      own,
		LLM:        llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test-key", InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}),
		Tools:      reg,
		Personas:   set,
		Model:      Model{Name: "gpt-4.1", ContextWindow: 1_000_000},
		Gate:       tools.AllowAll{},
		ProjectDir: dir,
		StateDir:   filepath.Join(dir, ".agent"),
		MaxTurns:   50,
	}
	sess, err := OpenSession(context.Background(), h.deps, h.record, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.session = sess
	return h
}

func (h *harness) record(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func (h *harness) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

func (h *harness) send(ctx context.Context, prompt string) (Outcome, error) {
	return h.session.Send(ctx, "default", prompt)
}

// eventsOf returns the events of type T.
func eventsOf[T Event](h *harness) []T {
	var out []T
	for _, e := range h.Events() {
		if v, ok := e.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// noticeText is the text of every Notice so far, one a line.
func noticeText(h *harness) string {
	var texts []string
	for _, n := range eventsOf[Notice](h) {
		texts = append(texts, n.Text)
	}
	return strings.Join(texts, "\n")
}

// shellWithScrub is run_command with the API-key variables scrubbed, as the
// app wires it.
func shellWithScrub(dir string) tools.Tool {
	return tools.ShellTool(dir, tools.ShellOptions{Scrub: []string{"OPENAI_API_KEY"}})
}

package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"polly/agent"
	"polly/agent/app"
	"polly/agent/config"
	"polly/agent/llmtest"
)

// harness is a real Polly (store, workspace, tools, agents) in a temp
// project, talking to the fake OpenAI server, with the TUI model driven by
// a small loop that runs Cmds and feeds their messages back to Update on
// the test goroutine — as Bubble Tea does, minus the terminal.
type harness struct {
	t   testing.TB
	dir string
	srv *llmtest.Server
	app *app.App
	b   *bridge
	m   *Model
	raw []string // tea.Raw output the model sent the terminal
	driver
}

type harnessOpts struct {
	mode     string // permission mode; default yolo
	modelErr error
	w, h     int
	config   string            // the user's config.json (a project's file would need trust)
	models   string            // the fake server's GET /v1/models body ("" the default list)
	personas map[string]string // workspace persona files: name → JSON
	files    map[string]string // project files (commands, agents): path → text
	wsFiles  map[string]string // workspace files written before it opens: relative path → content
}

func newHarness(t testing.TB, o harnessOpts, steps ...llmtest.Step) *harness {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	if o.config != "" {
		if err := os.MkdirAll(filepath.Join(home, ".config", "polly"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".config", "polly", "config.json"), []byte(o.config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, text := range o.files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := llmtest.NewServer(t, steps...)
	if o.models != "" {
		srv.SetModelsResponse(200, "application/json", o.models)
	}
	if o.mode == "" {
		o.mode = "yolo"
	}
	ws := filepath.Join(t.TempDir(), "ws")
	for name, body := range o.wsFiles {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range o.personas {
		if err := os.MkdirAll(filepath.Join(ws, "personas"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "personas", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL(),
		"OPENAI_API_KEY":  "test-key",
		"POLLY_WORKSPACE": ws,
		"POLLY_MODE":      o.mode,
	}
	cfg, err := config.Load(config.LoadOptions{ProjectDir: dir, Home: home, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	b := newBridge()
	t.Cleanup(b.close)
	a, err := app.Open(context.Background(), app.Options{Config: cfg, ProjectDir: dir, Template: os.DirFS("../.agent-template"), Asker: &asker{b: b}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := a.Session(context.Background(), b.Emit, "")
	if err != nil {
		t.Fatal(err)
	}
	runs := &runGroup{}
	t.Cleanup(func() {
		if !runs.close(10 * time.Second) {
			t.Error("runs did not end")
		}
		a.Close()
	})
	h := &harness{t: t, dir: dir, srv: srv, app: a, b: b}
	h.m = newModel(options{ctx: context.Background(), app: a, sess: sess, bridge: b, runs: runs, modelErr: o.modelErr, noColor: true, editor: "true"})
	h.driver = newDriver(t, func(msg tea.Msg) tea.Cmd {
		if r, ok := msg.(tea.RawMsg); ok { // written to the terminal as it is
			h.raw = append(h.raw, fmt.Sprint(r.Msg))
		}
		_, cmd := h.m.Update(msg)
		return cmd
	}, h.screen)
	t.Cleanup(func() {
		for _, p := range h.m.personas { // stop what a failed test left running
			if p.cancel != nil {
				p.cancel()
			}
		}
	})
	if o.w == 0 {
		o.w, o.h = 120, 40
	}
	h.send(tea.WindowSizeMsg{Width: o.w, Height: o.h})
	h.run(h.m.Init())
	h.until("start-up (the first status read)", h.idle)
	return h
}

// driver runs a model as Bubble Tea does: Cmds off the test goroutine,
// their messages back to Update on it (shared by harness and startHarness).
type driver struct {
	tb     testing.TB
	msgs   chan tea.Msg
	quit   bool
	update func(tea.Msg) tea.Cmd
	show   func() string // the screen, for a timeout's message
}

func newDriver(tb testing.TB, update func(tea.Msg) tea.Cmd, show func() string) driver {
	return driver{tb: tb, msgs: make(chan tea.Msg, 4096), update: update, show: show}
}

// run executes a Cmd off the test goroutine, as Bubble Tea does.
func (d *driver) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		if msg := cmd(); msg != nil {
			d.msgs <- msg
		}
	}()
}

// send gives a message to Update and runs the Cmd it returns.
func (d *driver) send(msg tea.Msg) {
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			d.run(c)
		}
		return
	case tea.QuitMsg:
		d.quit = true
		return
	}
	d.run(d.update(msg))
}

// until processes messages until cond holds.
func (d *driver) until(what string, cond func() bool) {
	d.tb.Helper()
	deadline := time.After(10 * time.Second)
	poll := time.NewTicker(5 * time.Millisecond) // cond may change without a message (a reply channel)
	defer poll.Stop()
	for !cond() {
		select {
		case msg := <-d.msgs:
			d.send(msg)
		case <-poll.C:
		case <-deadline:
			d.tb.Fatalf("timed out waiting for %s; screen:\n%s", what, d.show())
		}
	}
}

// settle processes messages for d.
func (h *harness) settle(d time.Duration) {
	end := time.After(d)
	for {
		select {
		case msg := <-h.msgs:
			h.send(msg)
		case <-end:
			return
		}
	}
}

func (h *harness) key(k string) { h.send(keyMsg(k)) }

// answerable waits until the permission dialog takes keys (keyGuard after
// the question appeared).
func (h *harness) answerable() { h.until("the dialog to take keys", h.m.perm.accepting) }

// typeText types into the input, one key per character.
func (h *harness) typeText(s string) {
	for _, r := range s {
		if r == ' ' {
			h.send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
			continue
		}
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// prompt types s and presses Enter.
func (h *harness) prompt(s string) {
	h.typeText(s)
	h.key("enter")
}

// screen is the current view without escape codes.
func (h *harness) screen() string { return ansi.Strip(h.m.View().Content) }

func (h *harness) idle() bool { return !h.m.anyOp() }

// keyMsg builds a key press from its String() form.
func keyMsg(k string) tea.KeyPressMsg {
	var mod tea.KeyMod
	for {
		switch {
		case strings.HasPrefix(k, "ctrl+"):
			mod |= tea.ModCtrl
			k = k[5:]
			continue
		case strings.HasPrefix(k, "alt+"):
			mod |= tea.ModAlt
			k = k[4:]
			continue
		case strings.HasPrefix(k, "shift+"):
			mod |= tea.ModShift
			k = k[6:]
			continue
		}
		break
	}
	codes := map[string]rune{"enter": tea.KeyEnter, "tab": tea.KeyTab, "esc": tea.KeyEscape, "up": tea.KeyUp, "down": tea.KeyDown,
		"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "backspace": tea.KeyBackspace, "f1": tea.KeyF1, "f2": tea.KeyF2, "space": tea.KeySpace}
	if c, ok := codes[k]; ok {
		return tea.KeyPressMsg{Code: c, Mod: mod}
	}
	r := []rune(k)[0]
	msg := tea.KeyPressMsg{Code: r, Mod: mod}
	if mod == 0 {
		msg.Text = k
	}
	return msg
}

// texts lists a transcript's items as kind:text, for assertions.
func texts(tr *transcript) []string {
	var out []string
	for _, it := range tr.items {
		out = append(out, it.text)
	}
	return out
}

func hasItem(tr *transcript, k kind, sub string) bool {
	for _, it := range tr.items {
		if it.kind == k && strings.Contains(it.text, sub) {
			return true
		}
	}
	return false
}

// hdr is an event header for synthetic events.
func hdr(persona string) agent.Header {
	return agent.Header{Session: "s1", Agent: persona, Persona: persona, Time: time.Now()}
}

// The open panel as its type (a zero one when another is open, so a
// condition polled by until stays false).
func outs(h *harness) *outputsPanel   { return openAs[*outputsPanel](h) }
func mem(h *harness) *memoryPanel     { return openAs[*memoryPanel](h) }
func sessP(h *harness) *sessionsPanel { return openAs[*sessionsPanel](h) }
func rewP(h *harness) *rewindPanel    { return openAs[*rewindPanel](h) }

func openAs[P interface {
	panel
	*T
}, T any](h *harness) P {
	if p, ok := h.m.panel.(P); ok {
		return p
	}
	return P(new(T))
}

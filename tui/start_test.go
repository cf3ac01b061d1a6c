package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"polly/agent/app"
	"polly/agent/cli"
	"polly/agent/config"
	"polly/agent/llmtest"
	"polly/personas"
)

// startHarness drives a startModel as Bubble Tea does: Cmds run off the
// test goroutine and their messages come back to Update on it.
type startHarness struct {
	t    *testing.T
	s    *startModel
	opts app.Options
	open *opening
	b    *bridge
	driver
}

func newStartHarness(t *testing.T, srv *llmtest.Server, prompt string) *startHarness {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k",
		"POLLY_WORKSPACE": filepath.Join(t.TempDir(), "ws"), "POLLY_MODE": "yolo"}
	cfg, err := config.Load(config.LoadOptions{ProjectDir: dir, Home: home, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	b := newBridge()
	t.Cleanup(b.close)
	runs := &runGroup{}
	h := &startHarness{t: t, b: b, open: &opening{done: make(chan struct{})},
		opts: app.Options{Config: cfg, ProjectDir: dir, Template: os.DirFS("../.agent-template"), Asker: &asker{b: b}}}
	set, _ := personas.Load("")
	h.s = newStartModel(options{ctx: context.Background(), bridge: b, runs: runs, noColor: true, editor: "true",
		prompt: prompt, personas: set, model: cfg.ActiveModel()}, h.open)
	h.driver = newDriver(t, func(msg tea.Msg) tea.Cmd { _, cmd := h.s.Update(msg); return cmd }, h.screen)
	t.Cleanup(func() {
		if !runs.close(10 * time.Second) {
			t.Error("runs did not end")
		}
		<-h.open.done
		if h.open.app != nil {
			h.open.app.Close()
		}
	})
	h.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	h.run(h.s.Init())
	return h
}

func (h *startHarness) typeLine(s string, enter bool) {
	for _, r := range s {
		if r == ' ' {
			h.send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
			continue
		}
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	if enter {
		h.send(tea.KeyPressMsg{Code: tea.KeyEnter})
	}
}

func (h *startHarness) screen() string { return ansi.Strip(h.s.View().Content) }

// The first screen needs no store: it shows the tabs, who the user talks
// to, the model and the input while the session still opens; what is sent
// meanwhile waits, then goes to the model in order after the command
// line's prompt, and the unsent draft stays in the input.
func TestInputBeforeTheSessionOpensIsSentOnceItIs(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("reply one"), llmtest.Text("reply two"), llmtest.Text("reply three"))
	h := newStartHarness(t, srv, "from the command line")
	scr := h.screen()
	for _, want := range []string{"You are talking to Polly", "model gpt", "Message Polly", "opening the session"} {
		if !strings.Contains(scr, want) {
			t.Errorf("first screen lacks %q:\n%s", want, scr)
		}
	}
	h.typeLine("first typed", true)
	h.typeLine("second typed", true)
	h.typeLine("draft", false)
	if scr := h.screen(); !strings.Contains(scr, "┃ first typed") || !strings.Contains(scr, "┃ second typed") {
		t.Errorf("queued messages not shown:\n%s", scr)
	}
	if n := srv.Calls(); n != 0 {
		t.Fatalf("%d requests before the session was open", n)
	}

	go openSession(context.Background(), h.opts, "", h.b.Emit, h.open)
	h.until("three replies", func() bool {
		return h.s.real != nil && !h.s.real.anyOp() && srv.Calls() == 3 && strings.Contains(h.screen(), "reply three")
	})
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, r.LastMessage().Content)
	}
	want := []string{"from the command line", "first typed", "second typed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the server got %q, want %q", got, want)
	}
	if v := h.s.real.input.Value(); v != "draft" {
		t.Errorf("input after the hand-over = %q, want the draft", v)
	}
	// On disk: the session holds the three messages.
	msgs, err := h.open.app.Store.AllMessages(context.Background(), h.s.real.sess.ID(), personas.DefaultID)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, m := range msgs {
		if m.Role == "user" {
			stored = append(stored, m.Content)
		}
	}
	if strings.Join(stored, "|") != strings.Join(want, "|") {
		t.Errorf("stored user messages %q, want %q", stored, want)
	}
}

// A session that cannot be opened shows why on the screen, sends
// nothing, and gives back every unsent line in the input.
func TestOpenFailureShowsAndLosesNothing(t *testing.T) {
	srv := llmtest.NewServer(t)
	h := newStartHarness(t, srv, "")
	h.typeLine("keep me", true)
	h.typeLine("and me", false)
	h.open.err = errors.New("open store: disk on fire")
	close(h.open.done)
	h.until("the error", func() bool { return strings.Contains(h.screen(), "disk on fire") })
	if v := h.s.pre.input.Value(); v != "keep me\nand me" {
		t.Errorf("input after the failure = %q", v)
	}
	h.send(tea.KeyPressMsg{Code: tea.KeyEnter})
	if h.s.real != nil || srv.Calls() != 0 {
		t.Errorf("sent after a failed open (%d requests)", srv.Calls())
	}
	if !errors.Is(h.s.failed, h.open.err) {
		t.Errorf("failed = %v", h.s.failed)
	}
}

// Through Run: a store that cannot open (here: no directory for the
// commands' private TMPDIR) is shown on screen, the text typed stays, and
// on quit Run prints it and returns the error.
func TestRunOpenFailurePrintsUnsentInput(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	srv := llmtest.NewServer(t)
	dir, home := t.TempDir(), t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k", "NO_COLOR": "1",
		"POLLY_WORKSPACE": filepath.Join(t.TempDir(), "ws")}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(config.LoadOptions{ProjectDir: dir, Home: home, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	keys, typing := io.Pipe()
	defer typing.Close()
	screen := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), cli.TUIStart{
			App:   app.Options{Config: cfg, ProjectDir: dir, Template: os.DirFS("../.agent-template")},
			Stdin: keys, Stdout: screen, Getenv: getenv, Environ: []string{"TERM=xterm-256color"},
		}, tea.WithWindowSize(100, 30))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(ansi.Strip(screen.String()), "could not open its session") {
		if time.Now().After(deadline) {
			t.Fatalf("no error on screen:\n%q", screen.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := typing.Write([]byte("keep me\r")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := typing.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "TMPDIR") {
			t.Errorf("Run = %v, want the open error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ctrl+c did not quit")
	}
	if out := screen.String(); !strings.Contains(out, "not sent (the session did not open):\nkeep me") {
		t.Errorf("unsent text not printed:\n%q", out[max(0, len(out)-300):])
	}
	if srv.Calls() != 0 {
		t.Errorf("%d requests", srv.Calls())
	}
}

package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

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

// Through Run: a session that cannot open (here: a permission rule naming
// a tool Polly does not have, which only opening the app checks) is shown
// on screen, the text typed stays, and on quit Run prints it and returns
// the error.
func TestRunOpenFailurePrintsUnsentInput(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(cfgFile, []byte(`{"permissions": {"allow": ["no_such_tool"]}}`), 0o644)
	srv := llmtest.NewServer(t)
	r := startOnPipe(t, map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k", "NO_COLOR": "1",
		"POLLY_WORKSPACE": filepath.Join(t.TempDir(), "ws"), "POLLY_CONFIG": cfgFile}, []string{"TERM=xterm-256color"}, 100, 30)
	r.waitFor(t, "could not open its session")
	r.typeKeys(t, "keep me\r")
	time.Sleep(100 * time.Millisecond)
	if err := r.quit(t); err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("Run = %v, want the open error", err)
	}
	if out := r.screen.String(); !strings.Contains(out, "not sent (the session did not open):\nkeep me") {
		t.Errorf("unsent text not printed:\n%q", out[max(0, len(out)-300):])
	}
	if srv.Calls() != 0 {
		t.Errorf("%d requests", srv.Calls())
	}
}

// lockedBuffer is a terminal's screen the test reads while the program
// writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Run draws on the terminal its caller gives and reads keys from it, and
// takes its environment from the caller, not the process: the first screen
// arrives on the given writer, ctrl+c typed on the given reader quits, the
// given environment makes the pipe a true-colour terminal
// (CLICOLOR_FORCE), and the caller's NO_COLOR takes the colours away.
func TestRunUsesTheCallersTerminalAndEnvironment(t *testing.T) {
	const trueColour = "\x1b[38;2;"
	if out := runOnPipe(t, false); !strings.Contains(out, trueColour) {
		t.Errorf("no true colour although the given environment forces it:\n%q", out)
	}
	if out := runOnPipe(t, true); strings.Contains(out, trueColour) {
		t.Errorf("colours drawn although the caller's environment sets NO_COLOR:\n%q", out)
	}
}

// runOnPipe runs the TUI on a pipe of a true-colour terminal until its
// first screen, types ctrl+c, and returns all it wrote.
func runOnPipe(t *testing.T, noColor bool) string {
	srv := llmtest.NewServer(t)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k", "POLLY_WORKSPACE": filepath.Join(t.TempDir(), "ws")}
	if noColor {
		env["NO_COLOR"] = "1"
	}
	r := startOnPipe(t, env, []string{"TERM=xterm-256color", "COLORTERM=truecolor", "CLICOLOR_FORCE=1"}, 80, 24)
	r.waitFor(t, "You are talking to Polly")
	if err := r.quit(t); err != nil {
		t.Fatalf("Run: %v (stderr %q)", err, r.errOut.String())
	}
	return r.screen.String()
}

// pipeRun is Run on a pipe, as a terminal program runs it: the keys typed
// into it, the screen and stderr it writes, and what Run returns.
type pipeRun struct {
	typing *io.PipeWriter
	screen *lockedBuffer
	errOut bytes.Buffer // read only once Run has returned
	done   chan error
}

// startOnPipe starts Run in a fresh project with env as the caller's
// environment, environ as the terminal's, at w×h.
func startOnPipe(t *testing.T, env map[string]string, environ []string, w, h int) *pipeRun {
	t.Helper()
	dir := t.TempDir()
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(config.LoadOptions{ProjectDir: dir, Home: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	keys, typing := io.Pipe()
	t.Cleanup(func() { typing.Close() })
	r := &pipeRun{typing: typing, screen: &lockedBuffer{}, done: make(chan error, 1)}
	go func() {
		r.done <- run(context.Background(), cli.TUIStart{
			App:   app.Options{Config: cfg, ProjectDir: dir, Template: os.DirFS("../.agent-template")},
			Stdin: keys, Stdout: r.screen, Stderr: &r.errOut, Getenv: getenv, Environ: environ,
		}, tea.WithWindowSize(w, h))
	}()
	return r
}

// waitFor waits up to 10 s for text on the screen.
func (r *pipeRun) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(ansi.Strip(r.screen.String()), text) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the screen:\n%q", text, r.screen.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *pipeRun) typeKeys(t *testing.T, keys string) {
	t.Helper()
	if _, err := r.typing.Write([]byte(keys)); err != nil {
		t.Fatal(err)
	}
}

// quit types ctrl+c and returns what Run returned, failing after 10 s.
func (r *pipeRun) quit(t *testing.T) error {
	t.Helper()
	r.typeKeys(t, "\x03")
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("ctrl+c on the given input did not quit")
		return nil
	}
}

// Without a terminal to draw on, Run says so instead of taking the
// process's.
func TestRunNeedsATerminal(t *testing.T) {
	cfg, err := config.Load(config.LoadOptions{ProjectDir: t.TempDir(), Home: t.TempDir(), Getenv: func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "k", "POLLY_WORKSPACE": filepath.Join(t.TempDir(), "ws")}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), cli.TUIStart{App: app.Options{Config: cfg, ProjectDir: t.TempDir(), Template: os.DirFS("../.agent-template")}})
	if err == nil || !strings.Contains(err.Error(), "no terminal") {
		t.Fatalf("Run without Stdin/Stdout: %v", err)
	}
}

// The session opens after the first frame, not beside it: when the first
// screen is written nothing is on disk yet (no database, no workspace);
// then the session opens by itself and the command line's prompt reaches
// the model.
func TestTheSessionOpensAfterTheFirstFrame(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("hello from the model"))
	dir, home, ws := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "ws")
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k", "POLLY_WORKSPACE": ws, "POLLY_MODE": "yolo"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(config.LoadOptions{ProjectDir: dir, Home: home, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, ".agent", "polly.db")
	screen := &firstFrameCheck{check: func() []string {
		var early []string
		for _, p := range []string{db, ws} {
			if _, err := os.Stat(p); err == nil {
				early = append(early, p)
			}
		}
		return early
	}}
	keys, typing := io.Pipe()
	defer typing.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cli.TUIStart{
			App:   app.Options{Config: cfg, ProjectDir: dir, Template: os.DirFS("../.agent-template")},
			Stdin: keys, Stdout: screen, Getenv: getenv, Prompt: "from the command line",
			Environ: []string{"TERM=xterm-256color"},
		}, tea.WithWindowSize(100, 30))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(ansi.Strip(screen.String()), "hello from the model") {
		if time.Now().After(deadline) {
			t.Fatalf("the session did not open and answer by itself:\n%q", ansi.Strip(screen.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel() // as the end of the process does: work still running after the answer need not be asked about
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if early := screen.early(); len(early) > 0 {
		t.Errorf("opened before the first frame was written: %v", early)
	}
	if got := srv.Requests(); len(got) != 1 || got[0].LastMessage().Content != "from the command line" {
		t.Errorf("the model got %d requests, want the command line's prompt once", len(got))
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("no database after the session opened: %v", err)
	}
}

// firstFrameCheck is a screen that runs check when the first write that
// shows text arrives, before it stores it.
type firstFrameCheck struct {
	lockedBuffer
	check   func() []string
	checked bool
	found   []string
}

func (f *firstFrameCheck) Write(p []byte) (int, error) {
	f.mu.Lock()
	if !f.checked && ansi.Strip(string(p)) != "" {
		f.checked, f.found = true, f.check()
	}
	f.mu.Unlock()
	return f.lockedBuffer.Write(p)
}

func (f *firstFrameCheck) early() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.found
}

// The watched output of a terminal is still that terminal (Bubble Tea
// takes its size and raw mode from the file), and a write of escape
// sequences alone is not the first frame.
func TestWatchedTerminalStaysATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	drawn := 0
	out := watchFrames(w, func() { drawn++ })
	f, ok := out.(term.File)
	if !ok || f.Fd() != w.Fd() {
		t.Fatalf("the watched output of a file is %T, not that file", out)
	}
	if _, err := out.Write([]byte("\x1b[?2026$p\x1b]11;?\a")); err != nil || drawn != 0 {
		t.Fatalf("queries counted as the first frame (drawn %d, err %v)", drawn, err)
	}
	for range 2 {
		if _, err := out.Write([]byte("\x1b[1mMessage Polly\x1b[m")); err != nil {
			t.Fatal(err)
		}
	}
	if drawn != 1 {
		t.Errorf("drawn called %d times, want once", drawn)
	}
	if _, ok := watchFrames(&bytes.Buffer{}, func() {}).(term.File); ok {
		t.Error("a plain writer became a terminal")
	}
}

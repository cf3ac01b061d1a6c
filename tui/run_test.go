package tui

import (
	"bytes"
	"context"
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
)

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

// runOnPipe runs the TUI on a pipe until its first screen, types ctrl+c,
// and returns all it wrote.
func runOnPipe(t *testing.T, noColor bool) string {
	srv := llmtest.NewServer(t)
	dir, home := t.TempDir(), t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k", "POLLY_WORKSPACE": filepath.Join(t.TempDir(), "ws")}
	if noColor {
		env["NO_COLOR"] = "1"
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(config.LoadOptions{ProjectDir: dir, Home: home, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	keys, typing := io.Pipe()
	defer typing.Close()
	screen := &lockedBuffer{}
	var errOut bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), cli.TUIStart{
			App:   app.Options{Config: cfg, ProjectDir: dir, Template: os.DirFS("../.agent-template")},
			Stdin: keys, Stdout: screen, Stderr: &errOut, Getenv: getenv,
			Environ: []string{"TERM=xterm-256color", "COLORTERM=truecolor", "CLICOLOR_FORCE=1"},
		}, tea.WithWindowSize(80, 24))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(ansi.Strip(screen.String()), "You are talking to Polly") {
		if time.Now().After(deadline) {
			t.Fatalf("no first screen on the given writer:\n%q", screen.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := typing.Write([]byte{0x03}); err != nil { // ctrl+c
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ctrl+c on the given input did not quit")
	}
	return screen.String()
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

package tui

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/agent/app"
	"polly/agent/cli"
	"polly/agent/config"
	"polly/agent/llmtest"
)

// $EDITOR gets the terminal itself, not a pipe, on a normal start (the
// first frame drawn before the session opens): an editor run from the
// memory inspector finds its standard input and output are a terminal.
func TestEditorRunsOnTheTerminal(t *testing.T) {
	master, slave := openPTY(t)
	t.Cleanup(func() { slave.Close(); master.Close() })
	var screen lockedBuffer
	go io.Copy(&screen, master) //nolint:errcheck // ends when the pty closes

	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "editor-saw")
	editor := filepath.Join(t.TempDir(), "editor.sh")
	script := "#!/bin/sh\nif [ -t 0 ] && [ -t 1 ]; then echo terminal > " + marker + "; else echo pipe > " + marker + "; fi\n"
	if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "k", "POLLY_WORKSPACE": filepath.Join(t.TempDir(), "ws"), "EDITOR": editor}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(config.LoadOptions{ProjectDir: dir, Home: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), cli.TUIStart{
			App:   app.Options{Config: cfg, ProjectDir: dir, Template: os.DirFS("../.agent-template")},
			Stdin: slave, Stdout: slave, Stderr: io.Discard, Getenv: getenv, Environ: []string{"TERM=xterm-256color"},
		})
	}()
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; the terminal got:\n%q", what, screen.String())
			}
		}
	}
	wait("the first screen", func() bool { return strings.Contains(screen.String(), "Polly") })
	wait("the session", func() bool {
		return !strings.Contains(screen.String(), "opening the session") || strings.Contains(screen.String(), "mode yolo") || strings.Contains(screen.String(), "mode ask")
	})
	time.Sleep(300 * time.Millisecond)
	master.Write([]byte{0x19}) // ctrl+y: the memory inspector
	wait("the memory inspector", func() bool { return strings.Contains(screen.String(), "SOUL.md") })
	time.Sleep(300 * time.Millisecond)
	master.Write([]byte("e"))
	wait("the editor", func() bool { _, err := os.Stat(marker); return err == nil })
	time.Sleep(100 * time.Millisecond)
	if b, _ := os.ReadFile(marker); strings.TrimSpace(string(b)) != "terminal" {
		t.Fatalf("$EDITOR ran on a %s", strings.TrimSpace(string(b)))
	}
	master.Write([]byte{0x1b})
	time.Sleep(100 * time.Millisecond)
	master.Write([]byte{0x03})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ctrl+c did not quit")
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// Must show (issue 16 #1): a headless run creates new.txt and edits
// old.txt; polly undo removes new.txt and gives old.txt back byte for byte
// (exit 0). A second run edits old.txt, someone edits it outside Polly:
// polly undo keeps their edit, names the file and exits 1.
func TestHeadlessUndo(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("write_file", `{"path":"new.txt","content":"brand new\n"}`),
		llmtest.Call("edit_file", `{"path":"old.txt","old_string":"second","new_string":"2nd"}`),
		llmtest.Text("created new.txt and edited old.txt"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	oldPath, newPath := filepath.Join(env.Dir, "old.txt"), filepath.Join(env.Dir, "new.txt")
	original := []byte("first line\nsecond line\r\n\ttail without a newline ✓")
	if err := os.WriteFile(oldPath, original, 0o644); err != nil {
		t.Fatal(err)
	}
	r := polly("-p", "make new.txt and fix old.txt", "--yolo")
	if r.code != 0 {
		t.Fatalf("run: code=%d stderr=%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(oldPath); bytes.Equal(b, original) {
		t.Fatal("the run did not edit old.txt")
	}
	if _, err := os.Stat(newPath); err != nil {
		t.Fatalf("the run did not create new.txt: %v", err)
	}

	r = polly("undo")
	if r.code != 0 {
		t.Fatalf("undo: code=%d stdout=%s stderr=%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(newPath); !os.IsNotExist(err) {
		t.Fatalf("new.txt is still there: %v", err)
	}
	if b, _ := os.ReadFile(oldPath); !bytes.Equal(b, original) {
		t.Fatalf("old.txt = %q, want %q", b, original)
	}
	if !strings.Contains(r.stdout, "restored  old.txt") || !strings.Contains(r.stdout, "removed   new.txt") {
		t.Fatalf("undo said: %s", r.stdout)
	}

	// Second run; then an outside edit.
	srv.Push(
		llmtest.Call("edit_file", `{"path":"old.txt","old_string":"first","new_string":"1st"}`),
		llmtest.Text("edited"),
	)
	if r = polly("-p", "edit old.txt again", "--yolo"); r.code != 0 {
		t.Fatalf("second run: code=%d stderr=%s", r.code, r.stderr)
	}
	mine := []byte("my own edit\n")
	if err := os.WriteFile(oldPath, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	r = polly("undo")
	if r.code != 1 {
		t.Fatalf("undo over an outside edit: code=%d stdout=%s stderr=%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(oldPath); !bytes.Equal(b, mine) {
		t.Fatalf("the outside edit was clobbered: %q", b)
	}
	if !strings.Contains(r.stdout, "skipped   old.txt: changed outside Polly") || !strings.Contains(r.stderr, "old.txt") {
		t.Fatalf("undo did not name old.txt: stdout=%s stderr=%s", r.stdout, r.stderr)
	}
}

// Bad input (issue 16): an unknown session, --turns 0 or more turns than
// exist, a rewind target out of range: a clear error and exit 2, and the
// files stay as they are.
func TestUndoBadInput(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("write_file", `{"path":"a.txt","content":"a"}`),
		llmtest.Text("done"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	if r := polly("undo"); r.code != 2 || !strings.Contains(r.stderr, "no Polly sessions") {
		t.Fatalf("undo before any session: code=%d stderr=%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(env.Dir, ".agent")); !os.IsNotExist(err) {
		t.Fatal("undo created .agent/ just to say there is nothing")
	}
	if r := polly("-p", "write a.txt", "--yolo"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"undo", "--session", "deadbeef"}, `no session "deadbeef"`},
		{[]string{"undo", "--turns", "0"}, "at least 1"},
		{[]string{"undo", "--turns", "2"}, "only 1 turn(s)"},
		{[]string{"undo", "--turns", "x"}, "expected a whole number"},
		{[]string{"rewind", "--to", "1"}, "out of range"},
		{[]string{"rewind"}, "needs --to"},
		{[]string{"redo"}, "nothing to redo"},
		{[]string{"undo", "--to", "1"}, "are for polly rewind"},
	} {
		r := polly(c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: code=%d stderr=%s", c.args, r.code, r.stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(env.Dir, "a.txt")); err != nil || string(b) != "a" {
		t.Fatalf("a.txt = %q, %v", b, err)
	}
	// Undo, then more undo than there is, then redo, JSON report.
	if r := polly("undo", "--output-format", "json"); r.code != 0 {
		t.Fatalf("undo: %d %s", r.code, r.stderr)
	} else {
		var rep struct {
			Kind    string   `json:"kind"`
			Removed []string `json:"removed"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Kind != "undo" || len(rep.Removed) != 1 {
			t.Fatalf("json report %q: %v", r.stdout, err)
		}
	}
	if r := polly("undo"); r.code != 2 || !strings.Contains(r.stderr, "nothing to undo") {
		t.Fatalf("second undo: code=%d stderr=%s", r.code, r.stderr)
	}
	if r := polly("redo"); r.code != 0 {
		t.Fatalf("redo: %d %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(env.Dir, "a.txt")); string(b) != "a" {
		t.Fatalf("redo did not bring a.txt back: %q", b)
	}
}

// undo, redo and rewind take a session id prefix, as --session does.
func TestUndoSubcommandsTakeAPrefix(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("write_file", `{"path":"a.txt","content":"one\n"}`), llmtest.Text("wrote"),
		llmtest.Call("write_file", `{"path":"b.txt","content":"two\n"}`), llmtest.Text("wrote"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	for _, p := range []string{"write a", "write b"} {
		if r := polly("-p", p, "--yolo"); r.code != 0 {
			t.Fatalf("run: code=%d stderr=%s", r.code, r.stderr)
		}
	}
	r := polly("sessions")
	var id string
	for _, f := range strings.Fields(r.stdout) {
		if len(f) == 8 && strings.Trim(f, "0123456789abcdef") == "" {
			id = f
			break
		}
	}
	if id == "" {
		t.Fatalf("no session id in %q", r.stdout)
	}
	prefix := id[:4]
	exists := func(f string) bool { _, err := os.Stat(filepath.Join(env.Dir, f)); return err == nil }
	if r = polly("undo", "--session", prefix); r.code != 0 || exists("b.txt") || !exists("a.txt") {
		t.Fatalf("undo --session %s: code=%d stderr=%s", prefix, r.code, r.stderr)
	}
	if r = polly("redo", "--session", prefix); r.code != 0 || !exists("b.txt") {
		t.Fatalf("redo --session %s: code=%d stderr=%s", prefix, r.code, r.stderr)
	}
	// Each -p run is a session of its own: the latest one wrote b.txt.
	if r = polly("rewind", "--session", prefix, "--to", "0"); r.code != 0 || exists("b.txt") || !exists("a.txt") {
		t.Fatalf("rewind --session %s: code=%d stdout=%s stderr=%s", prefix, r.code, r.stdout, r.stderr)
	}
}

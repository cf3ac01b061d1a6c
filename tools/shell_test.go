package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"polly/tools/sandbox/sandboxtest"
)

// sleepTag starts the arguments of the tests' sleeps: unique to this
// test process, since other runs of these tests may share the machine.
var sleepTag = fmt.Sprintf("30.%d", os.Getpid())

// sleepsOf are the living processes running `sleep <arg>` for one of args
// (found by their unique arguments: a command's pids are those of its own
// PID namespace, not Polly's).
func sleepsOf(args ...string) []sandboxtest.Proc {
	return sandboxtest.Living(func(p sandboxtest.Proc) bool {
		for _, a := range args {
			if p.Cmdline == "sleep\x00"+a+"\x00" {
				return true
			}
		}
		return false
	})
}

// waitSleeps waits until n of the sleeps run.
func waitSleeps(t *testing.T, n int, args ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(sleepsOf(args...)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the command's sleeps never started: %v", sleepsOf(args...))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// assertSleepsGone waits until none of the sleeps is alive (zombies, which
// stay until their parent reaps them, do not count).
func assertSleepsGone(t *testing.T, args ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		live := sleepsOf(args...)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range live {
				syscall.Kill(p.PID, syscall.SIGKILL)
			}
			t.Fatalf("processes of the command survived: %+v", live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunCommandCancelKillsEveryProcess(t *testing.T) {
	root := t.TempDir()
	r := NewRegistry(ShellTool(root, ShellOptions{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		// A background grandchild (holding the output pipe open) and one
		// that left the session: every one of them dies.
		done <- callCtx(ctx, t, r, "run_command", map[string]any{
			"command": fmt.Sprintf("setsid sleep %s3 & sleep %[1]s1 & sleep %[1]s2; wait", sleepTag),
		}, Exec{Gate: AllowAll{}})
	}()
	waitSleeps(t, 3, sleepTag+"1", sleepTag+"2", sleepTag+"3")
	cancelled := time.Now()
	cancel()
	var res Result
	select {
	case res = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("run_command did not return after cancel")
	}
	latency := time.Since(cancelled)
	if latency > time.Second {
		t.Fatalf("returned %v after cancel, want < 1s", latency)
	}
	if !res.IsError || res.ExitCode == nil || *res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Fatalf("result = %+v", res)
	}
	mustContain(t, res.Output, "exit code: 137\ncancelled; every process of the command killed\n")
	assertSleepsGone(t, sleepTag+"1", sleepTag+"2", sleepTag+"3")
	t.Logf("cancel latency %v", latency)
}

func TestRunCommandTimeoutKillsEveryProcess(t *testing.T) {
	root := t.TempDir()
	r := NewRegistry(ShellTool(root, ShellOptions{}))
	start := time.Now()
	res := call(t, r, "run_command", map[string]any{
		"command":         fmt.Sprintf("echo started; setsid sleep %s6 & sleep %[1]s4 & sleep %[1]s5; wait", sleepTag),
		"timeout_seconds": 1,
	})
	took := time.Since(start)
	if took < time.Second || took > 2*time.Second {
		t.Fatalf("took %v, want about 1s", took)
	}
	if !res.IsError || res.ExitCode == nil || *res.ExitCode != 137 {
		t.Fatalf("result = %+v", res)
	}
	if res.Output != "exit code: 137\ntimed out after 1s; every process of the command killed\nstarted\n" {
		t.Fatalf("output = %q", res.Output)
	}
	assertSleepsGone(t, sleepTag+"4", sleepTag+"5", sleepTag+"6")
}

func TestRunCommand(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"here.txt": ""})
	cases := []struct {
		name     string
		opts     ShellOptions
		args     string
		exact    string
		want     []string
		code     int
		wantErr  bool
		maxTaken time.Duration
	}{
		{"success", ShellOptions{}, `{"command":"echo out; echo err >&2"}`, "exit code: 0\nout\nerr\n", nil, 0, false, 0},
		{"non-zero exit", ShellOptions{}, `{"command":"echo oops; exit 3"}`, "exit code: 3\noops\n", nil, 3, true, 0},
		{"no output", ShellOptions{}, `{"command":"true"}`, "exit code: 0\n(no output)\n", nil, 0, false, 0},
		{"runs in root", ShellOptions{}, `{"command":"ls"}`, "exit code: 0\nhere.txt\n", nil, 0, false, 0},
		{"stdin is empty", ShellOptions{}, `{"command":"read x; echo rc=$?"}`, "exit code: 0\nrc=1\n", nil, 0, false, 0},
		{"env", ShellOptions{Env: []string{"FOO=bar", "NO_COLOR="}},
			`{"command":"echo $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $FOO [$NO_COLOR]"}`, "exit code: 0\ncat cat 0 bar []\n", nil, 0, false, 0},
		{"timeout clamped", ShellOptions{MaxTimeout: 3 * time.Second}, `{"command":"true","timeout_seconds":100000}`,
			"exit code: 0\ntimeout_seconds=100000 is above the maximum; used 3s\n(no output)\n", nil, 0, false, 0},
		{"default timeout", ShellOptions{DefaultTimeout: 500 * time.Millisecond}, `{"command":"sleep 5"}`,
			"exit code: 137\ntimed out after 500ms; every process of the command killed\n(no output)\n", nil, 137, true, 2 * time.Second},
		// The helper kills background processes when the shell exits, so
		// nothing holds the output open.
		{"background process killed at the end", ShellOptions{}, `{"command":"sleep 3 & echo bg"}`, "exit code: 0\nbg\n",
			nil, 0, false, 2 * time.Second}, // well under the 3 s sleep, with room for -race
		{"head and tail of 100 MB", ShellOptions{}, `{"command":"head -c 100000000 /dev/zero | tr '\\0' x; echo; echo END"}`, "",
			[]string{"exit code: 0\nxxxx", fmt.Sprintf("x\n[... %d bytes omitted ...]\nxxx", 100000005-4<<20), "x\nEND\n"}, 0, false, 0},
		{"empty command", ShellOptions{}, `{"command":"  "}`, "", []string{"command is empty"}, -1, true, 0},
		{"negative timeout", ShellOptions{}, `{"command":"true","timeout_seconds":-1}`, "", []string{"timeout_seconds"}, -1, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRegistry(ShellTool(root, c.opts))
			start := time.Now()
			res := call(t, r, "run_command", c.args)
			if c.maxTaken > 0 && time.Since(start) > c.maxTaken {
				t.Fatalf("took %v, want < %v", time.Since(start), c.maxTaken)
			}
			if res.IsError != c.wantErr {
				t.Fatalf("IsError = %v:\n%.500s", res.IsError, res.Output)
			}
			if c.exact != "" && res.Output != c.exact {
				t.Fatalf("output = %q, want %q", res.Output, c.exact)
			}
			mustContain(t, res.Output, c.want...)
			if c.code >= 0 && (res.ExitCode == nil || *res.ExitCode != c.code) {
				t.Fatalf("ExitCode = %v, want %d", res.ExitCode, c.code)
			}
			if len(res.Output) > 4<<20+200 {
				t.Fatalf("output is %d bytes; must stay near MaxOutputBytes", len(res.Output))
			}
		})
	}
}

func TestRunCommandAccess(t *testing.T) {
	tool := ShellTool(t.TempDir(), ShellOptions{})
	acc, err := tool.Access(context.Background(), json.RawMessage(`{"command":"go test ./..."}`))
	if err != nil || acc.Kind != AccessExecute || acc.Command != "go test ./..." || acc.Preview != "go test ./..." {
		t.Fatalf("access = %+v, %v", acc, err)
	}
	mustContain(t, tool.Description(), "Default timeout 120s, max 600s")
}

func TestHeadTail(t *testing.T) {
	cases := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"fits", 10, []string{"abc", "de"}, "abcde"},
		{"exactly full", 6, []string{"abc", "def"}, "abcdef"},
		{"overflow keeps head and tail", 6, []string{"abcdefghij"}, "abc\n[... 4 bytes omitted ...]\nhij"},
		{"many small writes wrap the ring", 6, []string{"ab", "cd", "ef", "gh", "ij", "kl"}, "abc\n[... 6 bytes omitted ...]\njkl"},
		{"write larger than tail", 6, []string{"abcd", "0123456789"}, "abc\n[... 8 bytes omitted ...]\n789"},
		{"no split rune", 8, []string{"aaaé", "xxxxxxxx", "ééx"}, "aaa\n[... 12 bytes omitted ...]\néx"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newHeadTail(c.max)
			for _, s := range c.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got := w.String()
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8: %q", got)
			}
			if w.kept() > c.max {
				t.Fatalf("kept %d bytes, max %d", w.kept(), c.max)
			}
		})
	}
}

// TestHeadTailBounded writes 100 MB and checks memory stays at the cap.
func TestHeadTailBounded(t *testing.T) {
	w := newHeadTail(1 << 20)
	chunk := []byte(strings.Repeat("y\n", 16<<10))
	for written := 0; written < 100_000_000; written += len(chunk) {
		w.Write(chunk)
	}
	if w.kept() != 1<<20 || cap(w.head) > 1<<20 || len(w.tail) != 1<<19 {
		t.Fatalf("kept %d bytes (head cap %d, tail %d); want exactly 1 MiB", w.kept(), cap(w.head), len(w.tail))
	}
}

package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"polly/agent/llmtest"
	"polly/memory/chat"
	"polly/tools/sandbox"
	"polly/tools/sandbox/sandboxtest"
)

// TestMain lets a test re-run this binary as a real Polly process (the
// kill -9 tests): with POLLY_CHILD_ARGS set it runs cli.Main and exits.
func TestMain(m *testing.M) {
	sandbox.RunHelperIfAsked() // run_command re-executes this binary as the sandbox helper
	if args := os.Getenv("POLLY_CHILD_ARGS"); args != "" {
		var argv []string
		if args == "argv" {
			// Polly's arguments are on the real command line after "--",
			// as main gets them (so /proc/<pid>/cmdline holds them).
			argv = sandbox.HideSecretArgs(os.Args[slices.Index(os.Args, "--")+1:])
		} else if err := json.Unmarshal([]byte(args), &argv); err != nil {
			panic(err)
		}
		code := Main(Env{Args: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
			Dir: os.Getenv("POLLY_CHILD_DIR"), Home: os.Getenv("HOME"), Template: os.DirFS("../../.agent-template"), Signals: true})
		writeChildStatus() // the RSS tests read the child's own peak
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// startPolly starts a real Polly process in env's project.
func startPolly(t *testing.T, env Env, base string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := pollyCmd(t, env, base, args)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// pollyCmd is the command startPolly starts.
func pollyCmd(t *testing.T, env Env, base string, args []string) *exec.Cmd {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "POLLY_CHILD_ARGS="+string(argv), "POLLY_CHILD_DIR="+env.Dir, "HOME="+env.Home,
		"OPENAI_BASE_URL="+base, "OPENAI_API_KEY=sk-test-1234", "XDG_CONFIG_HOME="+filepath.Join(env.Home, ".config"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func storedMessages(t *testing.T, dir string) (string, []chat.Message) {
	t.Helper()
	st, s := latestSession(t, dir)
	msgs, err := st.Messages(context.Background(), s.ID, "default")
	if err != nil {
		t.Fatal(err)
	}
	return s.ID, msgs
}

// Must show (issue 8 #2): kill -9 during a tool run, then resume: nothing
// stored before the kill is lost, the dangling call gets an "interrupted"
// result (the fake server rejects orphaned tool calls as OpenAI does), and
// the checkpoint is injected.
func TestKill9DuringToolRunThenResume(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("write_file", `{"path":"a.txt","content":"first step done\n"}`),
		llmtest.Call("run_command", `{"command":"echo started > started; sleep 30.913"}`),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	child := startPolly(t, env, srv.URL(), "-p", "write a.txt, then wait for the build", "--yolo")
	started := filepath.Join(env.Dir, "started")
	waitFor(t, "the command to start", func() bool { b, _ := os.ReadFile(started); return len(b) > 0 })
	sleeps := func() []sandboxtest.Proc {
		return sandboxtest.Living(func(p sandboxtest.Proc) bool { return p.Cmdline == "sleep\x0030.913\x00" })
	}
	waitFor(t, "the command's sleep", func() bool { return len(sleeps()) == 1 })
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	_, msgs := storedMessages(t, env.Dir)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, string(m.Role))
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" {
		t.Fatalf("stored after kill -9: %v", roles)
	}
	if got, _ := os.ReadFile(filepath.Join(env.Dir, "a.txt")); string(got) != "first step done\n" {
		t.Fatal("the first step's file is missing")
	}
	// The command died with Polly (the helper's PR_SET_PDEATHSIG; it is
	// PID 1 of the namespace the command runs in).
	waitFor(t, "the orphaned command to die", func() bool { return len(sleeps()) == 0 })

	srv.Push(llmtest.Text("Resumed: a.txt exists; I will re-run the build."))
	r := polly("-p", "continue", "--continue", "--yolo")
	if r.code != 0 {
		t.Fatalf("resume: code %d: %s", r.code, r.stderr)
	}
	req := srv.Last()
	var sawInterrupted, sawCheckpoint bool
	for _, m := range req.Messages {
		if m.Role == "tool" && strings.Contains(m.Content, "interrupted") {
			sawInterrupted = true
		}
		if m.Role == "user" && strings.HasPrefix(m.Content, "[RESUMED") {
			sawCheckpoint = true
		}
	}
	// The task state comes with the live task block, not a stored copy.
	if blocks := req.TaskBlocks(); len(blocks) != 1 || !strings.Contains(blocks[0].Content, "write a.txt, then wait for the build") ||
		!strings.Contains(blocks[0].Content, "Files written: a.txt") {
		t.Fatalf("resumed request's task blocks: %+v", blocks)
	}
	if !sawInterrupted || !sawCheckpoint {
		t.Fatalf("resumed request: interrupted=%v checkpoint=%v\n%+v", sawInterrupted, sawCheckpoint, req.Messages)
	}
	if req.LastTurn().Content != "continue" {
		t.Fatalf("last message = %q", req.LastTurn().Content)
	}
}

// Must show (issue 8 #2): kill -9 while the reply streams: the half-streamed
// message is not stored; resume sends a valid history with the checkpoint.
func TestKill9DuringStreamingThenResume(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	srv := llmtest.NewServer(t,
		llmtest.Call("list_dir", `{}`),
		llmtest.Reply{Text: "Here is a long answer that never finishes streaming because", ChunkSize: 10, Gate: hold},
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	child := startPolly(t, env, srv.URL(), "-p", "describe this project")
	waitFor(t, "the second request", func() bool { return srv.Calls() >= 2 })
	time.Sleep(100 * time.Millisecond) // the first chunk is on the wire
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	_, msgs := storedMessages(t, env.Dir)
	for _, m := range msgs {
		if m.Role == chat.Assistant && strings.Contains(m.Content, "never finishes") {
			t.Fatal("a half-streamed message was stored")
		}
	}
	if len(msgs) != 3 {
		t.Fatalf("stored %d messages, want user + call + result", len(msgs))
	}
	srv.Push(llmtest.Text("This project is empty."))
	r := polly("-p", "go on", "--continue")
	if r.code != 0 || !strings.Contains(r.stdout, "empty") {
		t.Fatalf("resume: %+v", r)
	}
	var sawCheckpoint bool
	for _, m := range srv.Last().Messages {
		if strings.HasPrefix(m.Content, "[RESUMED") {
			sawCheckpoint = true
		}
	}
	if !sawCheckpoint {
		t.Fatal("no checkpoint injected on resume")
	}
}

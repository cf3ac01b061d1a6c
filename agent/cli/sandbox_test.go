package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

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
			var outputs []string
			for _, m := range srv.Last().Messages {
				if m.Role == "tool" {
					outputs = append(outputs, m.Content)
				}
			}
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

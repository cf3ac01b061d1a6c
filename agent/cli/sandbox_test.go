package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"polly/agent/llmtest"
	"polly/tools/sandbox/sandboxtest"
)

// Must show (issue 11 #6): kill -9 of a real Polly process while a command
// runs `sleep 300 | cat` (plus a process that left the group with setsid):
// no process of the command survives. Checked on the helper's process
// group and on every process by its unique arguments.
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
	b, _ := os.ReadFile(started)
	shell, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitFor(t, "both sleeps", func() bool { return len(sleeps()) == 2 })
	sh, _ := sandboxtest.Read(shell)
	pgid := sh.PGrp
	if pgid <= 1 || pgid == shell {
		t.Fatalf("shell %d is in group %d; the helper should lead it", shell, pgid)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	waitFor(t, "every process of the command to die", func() bool {
		inGroup := sandboxtest.Living(func(p sandboxtest.Proc) bool { return p.PGrp == pgid })
		return len(inGroup) == 0 && len(sleeps()) == 0
	})
	t.Logf("after kill -9 of Polly: group %d empty, no sleep left", pgid)
}

// Must show (issue 11 #3): with the key in Polly's environment, or given
// with --api-key on its command line, no command gets any form of it —
// not from its own environment, not from Polly's /proc environ, cmdline or
// memory, not reversed or base64-encoded. Checked on the tool outputs the
// fake server received.
func TestKeyCannotLeakToCommands(t *testing.T) {
	const key = "sk-test-k3y-7f9a2c41d0e8b6"
	polly := `P=$(cut -d' ' -f4 /proc/$PPID/stat); `
	probes := []string{
		`env | rev; env | base64 -w0; printenv OPENAI_API_KEY POLLY_TEST_TOKEN`,
		`cat /proc/$PPID/environ | rev; base64 -w0 /proc/$PPID/environ`,
		polly + `echo polly=$P; cat /proc/$P/environ | rev; base64 -w0 /proc/$P/environ; cat /proc/$P/task/*/environ | base64 -w0`,
		polly + `rev /proc/$P/cmdline; base64 -w0 /proc/$P/cmdline; tr '\0' ' ' < /proc/$P/cmdline | rev`,
		polly + `for r in $(awk '$2 ~ /^rw/ {print $1}' /proc/$P/maps | head -40); do s=$((16#${r%-*})); e=$((16#${r#*-})); ` +
			`dd if=/proc/$P/mem bs=4096 skip=$((s/4096)) count=$(((e-s)/4096)) 2>&1 | base64 -w0; done | head -c 2000000 | tail -c 300`,
		polly + `cat /proc/$P/mem | base64 | head -c 100; ls -l /proc/$P/environ /proc/$P/mem; cat /proc/$P/status | grep -i cap`,
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
			// The probes did reach Polly's /proc entries and were refused.
			if !strings.Contains(outputs[2], "polly=") || !strings.Contains(outputs[2], "Permission denied") {
				t.Fatalf("probe 2 did not hit Polly's environ: %s", outputs[2])
			}
			if !strings.Contains(outputs[4], "Permission denied") {
				t.Fatalf("probe 4 did not hit Polly's memory: %.500s", outputs[4])
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

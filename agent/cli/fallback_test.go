package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// Must show (issue 11 #5): on a kernel without Landlock (simulated with
// POLLY_SANDBOX_PROBE=fail), sandbox.mode auto says so once on stderr and
// falls back to asking for every command but a few that only read project
// files (issue 24 #9), in ask and auto-edit alike (headless: denied, with
// the reason the model receives). sandbox.mode on refuses to run commands.
func TestSandboxFallbackWithoutLandlock(t *testing.T) {
	t.Setenv("POLLY_SANDBOX_PROBE", "fail")
	for _, mode := range []string{"ask", "auto-edit"} {
		t.Run(mode, func(t *testing.T) {
			srv := llmtest.NewServer(t,
				llmtest.Call("run_command", `{"command":"touch made-by-command"}`),
				llmtest.Call("run_command", `{"command":"ls -a"}`),
				llmtest.Text("done"))
			env, polly := cliEnv(t, srv.URL(), nil)
			r := polly("-p", "make a file", "--mode", mode)
			if r.code != 0 {
				t.Fatalf("code %d: %s", r.code, r.stderr)
			}
			if n := strings.Count(r.stderr, "sandbox unavailable (the Landlock probe failed (simulated by POLLY_SANDBOX_PROBE=fail)): every command asks but a few that only read project files"); n != 1 {
				t.Fatalf("the fallback notice appears %d times on stderr:\n%s", n, r.stderr)
			}
			var tools []string
			for _, req := range srv.Requests()[1:] { // each result as first sent (later ones fade)
				tools = append(tools, req.LastTurn().Content)
			}
			if len(tools) != 2 || !strings.Contains(tools[0], "needs approval") || !strings.Contains(tools[0], "commands run without the OS sandbox here (the Landlock probe failed") {
				t.Fatalf("the model was not told why it must ask: %q", tools)
			}
			if !strings.HasPrefix(tools[1], "exit code: 0") {
				t.Fatalf("the read-only command did not run: %s", tools[1])
			}
			if _, err := os.Stat(filepath.Join(env.Dir, "made-by-command")); err == nil {
				t.Fatal("the command that needed approval ran")
			}
		})
	}
	t.Run("mode on", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Call("run_command", `{"command":"ls"}`), llmtest.Text("done"))
		_, polly := cliEnv(t, srv.URL(), nil)
		r := polly("-p", "list", "--yolo", "--sandbox", "on")
		if !strings.Contains(r.stderr, "sandbox.mode is on, so commands will not run") {
			t.Fatalf("stderr: %s", r.stderr)
		}
		var out string
		for _, m := range srv.Last().Messages {
			if m.Role == "tool" {
				out = m.Content
			}
		}
		if !strings.Contains(out, "sandbox.mode is on, so commands will not run") || strings.Contains(out, "exit code") {
			t.Fatalf("the command was not refused: %s", out)
		}
	})
}

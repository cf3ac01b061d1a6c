package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkBashTrue is the baseline: bash -c true without the sandbox.
func BenchmarkBashTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchProject is a project with a .git and a TMPDIR, and the policy of
// the command "true" in it under g.
func benchProject(b *testing.B, g Grant) (root string, pol Policy) {
	base := b.TempDir()
	root, tmp := base+"/proj", base+"/tmp"
	os.MkdirAll(root+"/.git/hooks", 0o755)
	os.MkdirAll(tmp, 0o755)
	return root, Build(Plan{Grant: g, Root: root, TmpDir: tmp, Command: "true"})
}

func benchLevel(b *testing.B, g Grant) {
	root, pol := benchProject(b, g)
	for b.Loop() {
		c, err := Command(context.Background(), pol, "true")
		if err != nil {
			b.Fatal(err)
		}
		c.Dir = root
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// The helper's cost per command: re-exec, capability drop, Landlock,
// seccomp, the read-only binds (workspace-write as root), then bash.
func BenchmarkSandboxReadOnly(b *testing.B)       { benchLevel(b, Grant{Level: ReadOnly}) }
func BenchmarkSandboxWorkspaceWrite(b *testing.B) { benchLevel(b, Grant{Level: WorkspaceWrite}) }
func BenchmarkHelperUnsandboxed(b *testing.B)     { benchLevel(b, Grant{Level: Unsandboxed}) }

// BenchmarkRunnerWorkspaceWrite is a command through a Runner, whose spare
// helper has already started (as in Polly): the added latency is the
// sandbox itself, not the binary's start-up.
func BenchmarkRunnerWorkspaceWrite(b *testing.B) { benchRunner(b, Grant{Level: WorkspaceWrite}) }
func BenchmarkRunnerReadOnly(b *testing.B)       { benchRunner(b, Grant{Level: ReadOnly}) }

func benchRunner(b *testing.B, g Grant) {
	root, pol := benchProject(b, g)
	var r Runner
	defer r.Close()
	env := os.Environ()
	if _, err := r.Run(context.Background(), pol, "true", root, env, io.Discard, time.Second); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		waitSpare(&r) // a spare is ready, as between two model turns
		b.StartTimer()
		res, err := r.Run(context.Background(), pol, "true", root, env, io.Discard, time.Second)
		if err != nil || !res.State.Success() {
			b.Fatal(err, res.State)
		}
	}
}

func waitSpare(r *Runner) {
	for range 5000 {
		r.mu.Lock()
		ok := r.spare != nil
		r.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

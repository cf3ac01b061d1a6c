package sandbox

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// BenchmarkBashTrue is the baseline: bash -c true without the sandbox.
func BenchmarkBashTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchLevel(b *testing.B, g Grant) {
	base := b.TempDir()
	root, tmp := base+"/proj", base+"/tmp"
	os.MkdirAll(root+"/.git/hooks", 0o755)
	os.MkdirAll(tmp, 0o755)
	pol := Build(Plan{Grant: g, Root: root, TmpDir: tmp, Command: "true"})
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

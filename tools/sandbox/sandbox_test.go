package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"polly/tools/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { RunTests(m) }

type proj struct {
	root, tmp, outside string
}

func newProj(t *testing.T) proj {
	t.Helper()
	base := t.TempDir()
	p := proj{root: filepath.Join(base, "proj"), tmp: filepath.Join(base, "tmp"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{p.root, p.tmp, p.outside, filepath.Join(p.root, ".git", "hooks"), filepath.Join(p.root, ".agent"), filepath.Join(p.root, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(p.root, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(p.root, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	return p
}

func (p proj) run(t *testing.T, r *Runner, g Grant, script string) (string, int) {
	t.Helper()
	pol := Build(Plan{Grant: g, Root: p.root, Command: script})
	var out bytes.Buffer
	res, err := r.Run(context.Background(), pol, script, p.root, CommandEnv(os.Environ(), nil, nil, nil), &out, time.Second)
	if err != nil {
		t.Fatalf("run %q: %v", script, err)
	}
	return out.String(), res.Code
}

func TestSmoke(t *testing.T) {
	p := newProj(t)
	var r Runner
	defer r.Close()
	for _, tc := range []struct {
		g      Grant
		script string
		wantOK bool
	}{
		{Grant{Level: ReadOnly}, "cat .git/HEAD", true},
		{Grant{Level: ReadOnly}, "echo x > a.txt", false},
		{Grant{Level: ReadOnly}, "echo x > $TMPDIR/a.txt", true},
		{Grant{Level: ReadOnly}, "echo x > /dev/null", true},
		{Grant{Level: WorkspaceWrite}, "echo x > a.txt", true},
		{Grant{Level: WorkspaceWrite}, "echo x > src/b.txt", true},
		{Grant{Level: WorkspaceWrite}, "echo x > .git/hooks/pre-commit", false},
		{Grant{Level: WorkspaceWrite}, "rm -rf .git", false},
		{Grant{Level: WorkspaceWrite}, "echo x > .agent/config.json", false},
		{Grant{Level: WorkspaceWrite}, "echo x > " + p.outside + "/x", false},
		{Grant{Level: WorkspaceWrite}, "exec 3<>/dev/tcp/127.0.0.1/9; echo hi >&3", false},
		{Grant{Level: WorkspaceWrite}, "git status >/dev/null 2>&1; echo x > .git/FOO", false},
		{Grant{Level: WorkspaceWrite, Writable: []string{p.outside + "/approved"}}, "echo x > " + p.outside + "/approved", true},
		{Grant{Level: WorkspaceWrite, Writable: []string{p.outside + "/approved"}}, "echo x > /etc/polly-not-approved", false},
	} {
		out, code := p.run(t, &r, tc.g, tc.script)
		if (code == 0) != tc.wantOK {
			t.Errorf("%v %q: code %d, want ok=%v\n%s", tc.g, tc.script, code, tc.wantOK, out)
		}
	}
	if _, err := os.Stat(filepath.Join(p.root, ".git", "HEAD")); err != nil {
		t.Fatal(".git damaged")
	}
}

// The Runner (a spare helper started ahead of time) applies the same
// policies, and a cancelled command loses every process.
func TestRunnerSpare(t *testing.T) {
	p := newProj(t)
	var r Runner
	defer r.Close()
	env := CommandEnv(os.Environ(), nil, nil, nil)
	run := func(ctx context.Context, g Grant, script string) (string, int) {
		var out bytes.Buffer
		res, err := r.Run(ctx, Build(Plan{Grant: g, Root: p.root, Command: script}), script, p.root, env, &out, time.Second)
		if err != nil {
			t.Fatalf("%q: %v", script, err)
		}
		return out.String(), res.Code
	}
	for i := 0; i < 3; i++ { // the second and third use spares
		if out, code := run(context.Background(), Grant{Level: WorkspaceWrite}, "echo hi > a.txt && cat a.txt"); code != 0 || out != "hi\n" {
			t.Fatalf("run %d: %d %q", i, code, out)
		}
		if _, code := run(context.Background(), Grant{Level: WorkspaceWrite}, "rm -rf .git"); code == 0 {
			t.Fatalf("run %d: rm -rf .git succeeded", i)
		}
		if _, code := run(context.Background(), Grant{Level: ReadOnly}, "echo x > b.txt"); code == 0 {
			t.Fatalf("run %d: read-only wrote", i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, code := run(ctx, Grant{Level: ReadOnly}, "setsid sleep 77.7 & sleep 77.8")
	if code != 137 || time.Since(start) > 2*time.Second {
		t.Fatalf("cancelled: code %d after %v", code, time.Since(start))
	}
	if live := sandboxtest.Living(func(p sandboxtest.Proc) bool { return strings.HasPrefix(p.Cmdline, "sleep\x0077.") }); len(live) > 0 {
		t.Fatalf("processes survived: %+v", live)
	}
}

// Both ways of finding descendants agree (the scan is the fallback for
// kernels without /proc/<pid>/task/<tid>/children).
func TestDescendantsByScanMatches(t *testing.T) {
	cmd := exec.Command("bash", "-c", "sleep 5 & sleep 5 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	self := os.Getpid()
	// The two reads are a moment apart, and other tests' processes may
	// come and go between them: compare until a read pair agrees.
	var a, b []int
	for range 200 {
		a, b = descendants(self), descendantsByScan(self)
		slices.Sort(a)
		slices.Sort(b)
		if len(a) >= 3 && slices.Equal(a, b) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(a) < 3 || !slices.Equal(a, b) {
		t.Fatalf("children files %v, scan %v", a, b)
	}
	for _, p := range a {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	RunHelperIfAsked()
	os.Exit(m.Run())
}

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

func (p proj) run(t *testing.T, g Grant, script string) (string, int) {
	t.Helper()
	pol := Build(Plan{Grant: g, Root: p.root, TmpDir: p.tmp, Command: script})
	c, err := Command(context.Background(), pol, script)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Dir, c.Stdout, c.Stderr = p.root, &out, &out
	c.Env = CommandEnv(os.Environ(), nil, nil, []string{"TMPDIR=" + p.tmp})
	err = c.Run()
	code := 0
	if err != nil {
		if c.ProcessState == nil {
			t.Fatalf("run %q: %v", script, err)
		}
		code = c.ProcessState.ExitCode()
	}
	return out.String(), code
}

func TestSmoke(t *testing.T) {
	p := newProj(t)
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
	} {
		out, code := p.run(t, tc.g, tc.script)
		if (code == 0) != tc.wantOK {
			t.Errorf("%v %q: code %d, want ok=%v\n%s", tc.g, tc.script, code, tc.wantOK, out)
		}
	}
	if _, err := os.Stat(filepath.Join(p.root, ".git", "HEAD")); err != nil {
		t.Fatal(".git damaged")
	}
	_ = strings.TrimSpace
}

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	if out, err := exec.Command("git", "init", "-q", p.root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
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

// forcedConfigs are the kernels the tests pretend to run on besides this
// one: no user namespaces (Landlock-only fallbacks), old Landlock ABIs.
var forcedConfigs = []string{"", "no-userns", "abi=5", "abi=3,no-userns"}

// TestSmoke: what each level may write, on this kernel and with each
// fallback forced. Without namespaces the project is granted entry by
// entry, so a new entry at its top cannot be made (and .git is read-only
// even for a git-only line).
func TestSmoke(t *testing.T) {
	sandboxtest.UnderProbes(t, forcedConfigs, smoke)
}

func smoke(t *testing.T) {
	p := newProj(t)
	var r Runner
	defer r.Close()
	st := r.Status(Resolve(Settings{}))
	if !st.Active {
		t.Fatalf("sandbox not active: %s", st.Why)
	}
	ns := st.Namespaces
	for _, tc := range []struct {
		g      Grant
		script string
		wantOK bool
	}{
		{Grant{Level: ReadOnly}, "cat .git/HEAD", true},
		{Grant{Level: ReadOnly}, "echo x > a.txt", false},
		{Grant{Level: ReadOnly}, "echo x > $TMPDIR/a.txt", true},
		{Grant{Level: ReadOnly}, "echo x > /dev/null", true},
		{Grant{Level: WorkspaceWrite}, "echo x > a.txt", ns},
		{Grant{Level: WorkspaceWrite}, "mkdir build && touch build/x", ns},
		{Grant{Level: WorkspaceWrite}, "echo x > src/b.txt", true},
		{Grant{Level: WorkspaceWrite}, "echo x > .git/hooks/pre-commit", false},
		{Grant{Level: WorkspaceWrite}, "rm -rf .git", false},
		{Grant{Level: WorkspaceWrite}, "echo x > .agent/config.json", false},
		{Grant{Level: WorkspaceWrite}, "echo x > " + p.outside + "/x", false},
		{Grant{Level: WorkspaceWrite}, "exec 3<>/dev/tcp/127.0.0.1/9; echo hi >&3", false},
		{Grant{Level: WorkspaceWrite}, "git status >/dev/null 2>&1; echo x > .git/FOO", false},
		{Grant{Level: WorkspaceWrite}, "git update-ref refs/heads/x HEAD 2>/dev/null || git hash-object -w --stdin </dev/null", ns},
		{Grant{Level: WorkspaceWrite}, "git hash-object -w --stdin </dev/null >/dev/null && echo x > .git/hooks/post-commit", false},
		{Grant{Level: WorkspaceWrite, Writable: []string{p.outside + "/approved"}}, "echo x > " + p.outside + "/approved", true},
		{Grant{Level: WorkspaceWrite, Writable: []string{p.outside + "/approved"}}, "echo x > " + p.outside + "/other", false},
		{Grant{Level: WorkspaceWrite, Writable: []string{p.outside + "/approved"}}, "echo x > /etc/polly-not-approved", false},
		// A protected path a person approved is writable for that command
		// (and that path only): the permission side asks for them.
		{Grant{Level: WorkspaceWrite, Writable: []string{filepath.Join(p.root, ".git", "config")}}, "echo '# ok' >> .git/config", true},
		{Grant{Level: WorkspaceWrite, Writable: []string{filepath.Join(p.root, ".git", "config")}}, "echo x > .git/hooks/pre-commit", false},
		{Grant{Level: WorkspaceWrite, Writable: []string{filepath.Join(p.root, "AGENTS.md")}}, "echo 'use tabs' > AGENTS.md", true},
	} {
		out, code := p.run(t, &r, tc.g, tc.script)
		if (code == 0) != tc.wantOK {
			t.Errorf("%v %q: code %d, want ok=%v\n%s", tc.g, tc.script, code, tc.wantOK, out)
		}
	}
	if _, err := os.Stat(filepath.Join(p.root, ".git", "HEAD")); err != nil {
		t.Fatal(".git damaged")
	}
	if b, err := os.ReadFile(filepath.Join(p.outside, "approved")); err != nil || string(b) != "x\n" {
		t.Fatalf("the approved file: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(p.root, "AGENTS.md")); err != nil || string(b) != "use tabs\n" {
		t.Fatalf("the approved AGENTS.md: %q %v", b, err)
	}
}

// A Runner's helper serves command after command (and several at once),
// and a cancelled command loses every process, setsid'd ones included —
// with and without namespaces.
func TestRunnerRepeatsAndCancels(t *testing.T) {
	sandboxtest.UnderProbes(t, []string{"", "no-userns"}, repeatsAndCancels)
}

func repeatsAndCancels(t *testing.T) {
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
	for i := 0; i < 3; i++ {
		if out, code := run(context.Background(), Grant{Level: WorkspaceWrite}, "echo hi > src/a.txt && cat src/a.txt"); code != 0 || out != "hi\n" {
			t.Fatalf("run %d: %d %q", i, code, out)
		}
		if _, code := run(context.Background(), Grant{Level: WorkspaceWrite}, "rm -rf .git"); code == 0 {
			t.Fatalf("run %d: rm -rf .git succeeded", i)
		}
		if _, code := run(context.Background(), Grant{Level: ReadOnly}, "echo x > src/b.txt"); code == 0 {
			t.Fatalf("run %d: read-only wrote", i)
		}
	}
	// Several at once: each sees only its own TMPDIR.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := fmt.Sprintf("echo %d > $TMPDIR/n; sleep 0.2; cat $TMPDIR/n; ls $TMPDIR", i)
			if out, code := run(context.Background(), Grant{Level: WorkspaceWrite}, script); code != 0 || out != fmt.Sprintf("%d\nn\n", i) {
				t.Errorf("concurrent %d: %d %q", i, code, out)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	tag := fmt.Sprintf("77.%d", os.Getpid()) // unique: other runs of this test may share the machine
	_, code := run(ctx, Grant{Level: ReadOnly}, fmt.Sprintf("setsid sleep %s1 & sleep %[1]s2", tag))
	if code != 137 || time.Since(start) > 2*time.Second {
		t.Fatalf("cancelled: code %d after %v", code, time.Since(start))
	}
	if live := sandboxtest.Living(func(p sandboxtest.Proc) bool { return strings.HasPrefix(p.Cmdline, "sleep\x00"+tag) }); len(live) > 0 {
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

// A git-only line may write .git but never name a path in it or tell git
// to write a file somewhere (git log --output=.git/commondir moved config
// and hooks to a writable place); those lines are not git-only.
func TestGitOnly(t *testing.T) {
	for line, want := range map[string]bool{
		"git status":                                  true,
		"git commit -q -m 'fix' && git log -1":        true,
		"git add .gitignore src/a.go":                 true,
		"git log --output=.git/commondir -1":          false,
		"git log --out=x -1":                          false,
		"git diff --output x":                         false,
		"git bundle create .git/commondir HEAD":       false,
		"git archive -o commondir HEAD":               false,
		"git -C .git log":                             false,
		"git --git-dir=.git log":                      false,
		"git --work-tree=h checkout HEAD -- .":        false,
		"git checkout-index --prefix=.git/hooks/ -a":  false,
		"git -c core.hooksPath=/tmp/x commit":         false,
		"git status | sh":                             false,
		"git status > out.txt":                        false,
		"git init":                                    false,
		"git format-patch -o .git -1":                 false,
		"git log -- .git/config":                      false,
		"git commit -m 'edit the commondir handling'": true,
	} {
		if got := GitOnly(line); got != want {
			t.Errorf("GitOnly(%q) = %v, want %v", line, got, want)
		}
	}
}

// The same tests pass as an unprivileged user (created for the test):
// the helper then runs in a user namespace mapping the user to itself.
func TestAsUnprivilegedUser(t *testing.T) {
	if sandboxtest.IsUserRun() {
		t.Skip("this is the run as the user")
	}
	out := sandboxtest.RunAsUser(t, "TestSmoke|TestRunnerRepeatsAndCancels|TestDenyRead|TestLimits|TestAsUserIdentity")
	t.Log(out)
}

// TestAsUserIdentity: as the user, commands run as the user (not as
// root of a user namespace) and in namespaces.
func TestAsUserIdentity(t *testing.T) {
	if !sandboxtest.IsUserRun() {
		t.Skip("runs as the unprivileged user only (TestAsUnprivilegedUser)")
	}
	p := newProj(t)
	var r Runner
	defer r.Close()
	out, code := p.run(t, &r, Grant{Level: WorkspaceWrite}, "id -un; echo $$; mkdir newdir && echo made")
	if code != 0 || out != sandboxtest.UserName+"\n1\nmade\n" {
		t.Fatalf("code %d, output %q", code, out)
	}
	if st := r.Status(Resolve(Settings{})); !st.Namespaces {
		t.Fatalf("no namespaces as the user: %s", st.NoNamespaces)
	}
}

// The deny-read set cannot be read by any level, on this kernel and with
// the fallbacks forced; a grant that lifts it opens all of it but Polly's
// own files. Files beside them stay readable.
func TestDenyRead(t *testing.T) {
	sandboxtest.UnderProbes(t, forcedConfigs, func(t *testing.T) {
		p := newProj(t)
		home := filepath.Join(filepath.Dir(p.root), "home")
		files := map[string]string{
			".ssh/id_rsa": "ssh-secret", ".aws/credentials": "aws-secret", ".netrc": "netrc-secret",
			".config/polly/config.json": "polly-secret", ".bashrc": "plain", "notes/todo": "plain",
		}
		for rel, body := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o755)
			os.WriteFile(filepath.Join(home, rel), []byte(body+"\n"), 0o600)
		}
		get := func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}
		r := Runner{Setup: Setup{Home: home, DenyRead: DefaultDenyRead(home, get, nil), Polly: PollyFiles(home, get)}}
		defer r.Close()
		for _, secrets := range []bool{false, true} {
			for rel, body := range files {
				for _, level := range []Level{ReadOnly, WorkspaceWrite} {
					out, code := p.run(t, &r, Grant{Level: level, ReadSecrets: secrets}, "cat "+filepath.Join(home, rel))
					want := body == "plain" || secrets && body != "polly-secret"
					if got := code == 0 && out == body+"\n"; got != want {
						t.Errorf("secrets=%v %v cat ~/%s: code %d %q, want readable=%v", secrets, level, rel, code, out, want)
					}
				}
			}
		}
	})
}

// Bad input: no directory can be made for the private temp dirs (a
// read-only /tmp). With namespaces the command's private /dev/shm is its
// TMPDIR; without, the command is refused with a message that says why
// and what to do — never run without a private temp dir.
func TestReadOnlyTmp(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(ro, 0o555)
	sandboxtest.UnderProbes(t, []string{"", "no-userns"}, func(t *testing.T) {
		p := newProj(t)
		r := Runner{Setup: Setup{TmpDir: filepath.Join(ro, "missing")}}
		defer r.Close()
		var out bytes.Buffer
		script := "echo x > $TMPDIR/f && cat $TMPDIR/f && echo $TMPDIR"
		res, err := r.Run(context.Background(), Build(Plan{Grant: Grant{Level: WorkspaceWrite}, Root: p.root, Command: script}),
			script, p.root, CommandEnv(os.Environ(), nil, nil, nil), &out, time.Second)
		if r.Status(Resolve(Settings{})).Namespaces {
			if err != nil || res.Code != 0 || out.String() != "x\n/dev/shm\n" {
				t.Fatalf("with namespaces: %v %+v %q", err, res, out.String())
			}
			return
		}
		var ae *ApplyError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "no private temp dir for commands") || !strings.Contains(err.Error(), "set TMPDIR") {
			t.Fatalf("without namespaces: %v", err)
		}
	})
}

// Commands do not get variables that point at sockets outside the
// sandbox, nor credentials, unless the config passes them by name.
func TestCommandEnvDropsSocketsAndSecrets(t *testing.T) {
	env := []string{"PATH=/bin", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", "TMUX=/tmp/tmux-0/default,1,0", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus",
		"DOCKER_HOST=unix:///var/run/docker.sock", "GITHUB_TOKEN=ghp_x", "HOME=/h"}
	got := CommandEnv(env, nil, []string{"DOCKER_HOST"}, []string{"TMPDIR=/t"})
	want := []string{"PATH=/bin", "DOCKER_HOST=unix:///var/run/docker.sock", "HOME=/h", "TMPDIR=/t"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Item 12: per-command limits on processes, file size, CPU time and
// address space; a command that hits one is told which. Set low here so
// the test reaches them (the defaults are far above what a build needs).
func TestLimits(t *testing.T) {
	p := newProj(t)
	for _, c := range []struct {
		name   string
		limits Limits
		script string
		want   string
	}{
		{"file size", Limits{FileSize: 1 << 20}, "head -c 3000000 /dev/zero > big", "file size (1 MiB per file)"},
		{"cpu", Limits{CPUSeconds: 1}, "bash -c 'while :; do :; done'; exit $?", "CPU time (1 s per process)"},
		{"processes", Limits{Procs: uint64(userProcesses()) + 20}, "for i in $(seq 60); do sleep 3.31 & done; wait", "processes ("},
		{"address space", Limits{AddressSpace: 1 << 30}, "/usr/bin/python3 -c 'x = bytearray(1500 << 20)'", "address space (1 GiB per process)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.limits.Procs != 0 && os.Geteuid() == 0 {
				t.Skip("the kernel does not apply RLIMIT_NPROC to root (TestAsUnprivilegedUser runs this as a user)")
			}
			if c.limits.AddressSpace != 0 && raceEnabled {
				t.Skip("the race detector's shadow memory does not fit a low address-space limit")
			}
			r := Runner{Setup: Setup{Limits: c.limits}}
			defer r.Close()
			var out bytes.Buffer
			res, err := r.Run(context.Background(), Build(Plan{Grant: Grant{Level: WorkspaceWrite}, Root: p.root, Command: c.script}),
				c.script, p.root, CommandEnv(os.Environ(), nil, nil, nil), &out, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if res.Code == 0 || !strings.Contains(res.Limit, c.want) {
				t.Fatalf("code %d, limit %q, want %q\n%.500s", res.Code, res.Limit, c.want, out.String())
			}
			if fi, err := os.Stat(filepath.Join(p.root, "big")); err == nil && fi.Size() > 1<<20 {
				t.Fatalf("a %d-byte file was written past the limit", fi.Size())
			}
			t.Logf("%s: exit %d, %q", c.name, res.Code, res.Limit)
		})
	}
}

// Item 3 (and 2): the seccomp filter refuses every foreign-architecture
// call — i386 through int 0x80 from a 64-bit program, x32 — whatever it
// is, and the native calls on the deny list, and UNIX sockets (Landlock
// here cannot scope pathname ones). A probe compiled with the system C
// compiler makes the calls; outside the sandbox the same calls succeed.
func TestSeccompRefuses(t *testing.T) {
	bin := t.TempDir()
	os.Chmod(bin, 0o755)
	probe := sandboxtest.BuildProbe(t, bin)
	calls := [][]string{
		{"32", "unshare"}, {"32", "io_uring"}, {"32", "keyctl"}, {"32", "udp", "9"}, {"32", "tcp", "9"}, {"32", "mptcp", "9"},
		{"32", "unix", "@polly-seccomp-test"}, {"x32", "unshare"}, {"x32", "keyctl"},
		{"64", "unshare"}, {"64", "io_uring"}, {"64", "keyctl"}, {"64", "unix", "@polly-seccomp-test"},
	}
	l, err := net.Listen("unix", "@polly-seccomp-test")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, c := range [][]string{{"32", "unshare"}, {"32", "keyctl"}, {"64", "unix", "@polly-seccomp-test"}} {
		if out, _ := exec.Command(probe, c...).CombinedOutput(); !strings.Contains(string(out), "ESCAPED") {
			t.Fatalf("control: %v outside the sandbox: %s", c, out)
		}
	}
	sandboxtest.UnderProbes(t, forcedConfigs, func(t *testing.T) {
		p := newProj(t)
		var r Runner
		defer r.Close()
		for _, g := range []Grant{{Level: WorkspaceWrite}, {Level: WorkspaceWrite, Network: true}} {
			for _, c := range calls {
				out, _ := p.run(t, &r, g, probe+" "+strings.Join(c, " "))
				if !strings.Contains(out, "blocked") || strings.Contains(out, "ESCAPED") {
					t.Errorf("%v %v: %s", g, c, out)
				}
			}
		}
	})
}

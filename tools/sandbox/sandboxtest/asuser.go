package sandboxtest

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

//go:embed testdata/probe.c
var probeSource string

// ProbeSource is the C source of the escape probe (see testdata/probe.c).
func ProbeSource() string { return probeSource }

// BuildProbe compiles the escape probe with the system C compiler into
// dir and returns its path. The test is skipped when there is no C
// compiler (the only reason the i386 rows may not run).
func BuildProbe(t testing.TB, dir string) string {
	t.Helper()
	cc := ""
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("no C compiler (cc, gcc, clang): the probe that makes i386 and other raw system calls cannot be built")
	}
	src := filepath.Join(dir, "probe.c")
	if err := os.WriteFile(src, []byte(probeSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	if out, err := exec.Command(cc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("compile the probe: %v\n%s", err, out)
	}
	return bin
}

// SharedDir is a directory the unprivileged user can write that outlives
// one test run (a Go build cache, so that the user's builds do not start
// from nothing every time), made by root.
func SharedDir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(os.TempDir(), "polly-test-"+name)
	if err := os.MkdirAll(d, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o1777)
	return d
}

// asUserEnv marks a test binary run again by RunAsUser.
const asUserEnv = "POLLY_TEST_AS_USER"

// UserName is the unprivileged user RunAsUser creates.
const UserName = "pollytest"

// IsUserRun reports whether this process is a test run again as the
// unprivileged user (so it must not start another).
func IsUserRun() bool { return os.Getenv(asUserEnv) != "" }

// RunAsUser runs the tests matching the pattern tests of this test binary again as an
// unprivileged user (created with useradd if needed; switched to with
// setpriv), in the current directory, with its own HOME and TMPDIR and
// env on top, and fails t if it fails. It needs root: otherwise, or
// without useradd and setpriv, t is skipped with the reason.
func RunAsUser(t *testing.T, tests string, env ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running as an unprivileged user needs root to create one (this run is not root)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	u, err := user.Lookup(UserName)
	if err != nil {
		useradd, lerr := exec.LookPath("useradd")
		if lerr != nil {
			t.Skip("useradd is not installed")
		}
		if out, err := exec.Command(useradd, "--no-create-home", "--shell", "/bin/bash", UserName).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v\n%s", UserName, err, out)
		}
		if u, err = user.Lookup(UserName); err != nil {
			t.Fatal(err)
		}
	}
	// A directory the user can read: the test binary, a home and a temp dir of its own.
	dir, err := os.MkdirTemp("", "polly-as-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := copyFile(os.Args[0], bin, 0o755); err != nil {
		t.Fatal(err)
	}
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		os.Mkdir(d, 0o755)
		if out, err := exec.Command("chown", u.Uid+":"+u.Gid, d).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v\n%s", d, err, out)
		}
	}
	cmd := exec.Command(setpriv, "--reuid="+u.Uid, "--regid="+u.Gid, "--clear-groups", "--inh-caps=-all", "--",
		bin, "-test.run=^("+tests+")$", "-test.v", "-test.count=1")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "USER=" + UserName,
		"GOTOOLCHAIN=local", "GOFLAGS=" + os.Getenv("GOFLAGS"), asUserEnv + "=1"}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: ") {
		t.Fatalf("as %s (uid %s): %v\n%s", UserName, u.Uid, err, out)
	}
	return string(out)
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return nil
}

// UnderProbes runs f as a subtest once per POLLY_SANDBOX_PROBE value ("":
// this kernel as it is), so a test proves its claim with each fallback.
func UnderProbes(t *testing.T, probes []string, f func(t *testing.T)) {
	t.Helper()
	for _, p := range probes {
		t.Run("probe="+p, func(t *testing.T) {
			t.Setenv("POLLY_SANDBOX_PROBE", p)
			f(t)
		})
	}
}

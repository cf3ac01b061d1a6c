package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"polly/tools/sandbox"
)

// gitAttackRepo is a repository shipped with a .git/config (and hooks)
// whose settings run payload, which leaves a marker file named after the
// setting in marks and prints PWNED on stderr.
func gitAttackRepo(t *testing.T, omit ...string) (root, marks string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	base := t.TempDir()
	root, marks = filepath.Join(base, "proj"), filepath.Join(base, "marks")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(marks, 0o755))
	payload := filepath.Join(base, "payload.sh")
	must(os.WriteFile(payload, []byte(fmt.Sprintf(`#!/bin/sh
echo "PWNED-$1" >&2
touch %q/"$1"
if [ "$2" = cat ]; then shift 2; exec cat "$@"; fi
exit 0
`, marks)), 0o755))
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	must(os.MkdirAll(root, 0o755))
	git("init", "-q", "-b", "main")
	must(os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, ".gitattributes"), []byte("a.txt diff=evil filter=evil\nb.txt merge=evil\n"), 0o644))
	commit := func(b string) {
		must(os.WriteFile(filepath.Join(root, "b.txt"), []byte(b), 0o644))
		git("add", ".")
		git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", b)
	}
	commit("base\n")
	git("branch", "side")
	commit("main\n")
	git("checkout", "-q", "side")
	commit("side\n")
	git("checkout", "-q", "main")
	for _, kv := range [][2]string{
		{"core.fsmonitor", payload + " fsmonitor"},
		{"core.pager", payload + " pager"},
		{"core.editor", payload + " editor"},
		{"core.sshCommand", payload + " ssh"},
		{"diff.external", payload + " external"},
		{"diff.evil.command", payload + " diffcommand"},
		{"diff.evil.textconv", payload + " textconv cat"},
		{"filter.evil.clean", payload + " clean cat"},
		{"filter.evil.smudge", payload + " smudge cat"},
		{"filter.evil.process", payload + " process"},
		{"merge.evil.driver", payload + " merge"},
		{"credential.helper", payload + " credential"},
		{"gpg.program", payload + " gpg"},
		{"log.showSignature", "true"},
		{"user.name", "a"}, {"user.email", "a@b"},
	} {
		if !slices.Contains(omit, kv[0]) {
			git("config", kv[0], kv[1])
		}
	}
	must(os.WriteFile(filepath.Join(root, ".git/hooks/pre-commit"), []byte("#!/bin/sh\n"+payload+" hook\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\nworld\n"), 0o644))
	return root, marks
}

// The git lines a model runs most, and the ones that reach a shipped
// setting: status (fsmonitor, clean filter), diff (external, driver,
// textconv), log (gpg), show, blame, a commit (hook, editor), a
// credential fill and an ssh remote.
var gitAttackLines = []string{
	"git status --short",
	"git diff",
	"git diff --no-ext-diff",
	"git log -p -1",
	"git show HEAD:a.txt",
	"git blame a.txt",
	"git stash && git stash pop",
	"git commit -qam wip",
	"git commit --amend",
	"printf 'protocol=https\\nhost=example.com\\n\\n' | git credential fill",
	"git ls-remote ssh://nohost.invalid/x",
	"git --paginate log -1",
	"git merge side",
}

// Must show (issue 24 #8): a repository's configuration names programs for
// git to run; through run_command (here without the OS sandbox, so a
// payload that ran would leave its marker anywhere) none of them runs and
// the commands still do their work. The same lines with Polly's
// environment and none of its overrides run every payload: the test
// would see it.
func TestGitSafeEnvStopsRepositoryPrograms(t *testing.T) {
	root, marks := gitAttackRepo(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	off := sandbox.Status{Mode: sandbox.ModeOff}
	r := NewRegistry(ShellTool(root, ShellOptions{Sandbox: &off}))
	var outputs []string
	for _, line := range gitAttackLines {
		res := call(t, r, "run_command", map[string]any{"command": line})
		outputs = append(outputs, res.Output)
		if strings.Contains(res.Output, "PWNED") {
			t.Errorf("%s: a repository program ran:\n%s", line, res.Output)
		}
		t.Logf("$ %s\n%s", line, strings.TrimSpace(res.Output))
	}
	if got := dirNames(t, marks); len(got) > 0 {
		t.Fatalf("payloads ran: %v", got)
	}
	// The lines did their work: status and diff see the change, show and
	// blame read the file, the commit went in.
	for i, want := range map[int]string{0: " M a.txt", 1: "not diffed", 2: "+world", 4: "hello", 5: "hello"} {
		if !strings.Contains(outputs[i], want) {
			t.Errorf("%s: output lacks %q:\n%s", gitAttackLines[i], want, outputs[i])
		}
	}
	if out, _ := exec.Command("git", "-C", root, "log", "--format=%s", "-1").Output(); strings.TrimSpace(string(out)) != "wip" {
		t.Errorf("the commit did not go in: %q", out)
	}

	// Control: Polly's environment without the overrides (a filter
	// process that does not speak git's protocol stops the other filters
	// and diffs, so it has a repository of its own).
	var ran []string
	for _, omit := range []string{"filter.evil.process", ""} {
		root2, marks2 := gitAttackRepo(t, omit)
		for _, line := range gitAttackLines {
			cmd := exec.Command("bash", "-c", line)
			cmd.Dir, cmd.Env = root2, append(os.Environ(), nonInteractiveEnv()...)
			cmd.CombinedOutput()
		}
		ran = append(ran, dirNames(t, marks2)...)
	}
	for _, want := range []string{"fsmonitor", "clean", "smudge", "process", "diffcommand", "textconv", "hook", "merge", "credential", "ssh"} {
		if !slices.Contains(ran, want) {
			t.Errorf("control: the %s payload did not run without the overrides (ran: %v), so the test proves nothing for it", want, ran)
		}
	}
	t.Logf("without the overrides these payloads ran: %v", ran)
}

// A bare repository's files at the project root (HEAD, config, objects,
// refs — no .git) are not taken for a repository, so its config's
// fsmonitor does not run.
func TestGitSafeEnvIgnoresBareRepositoryAtRoot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, marks := t.TempDir(), t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", root).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	payload := filepath.Join(marks, "p.sh")
	os.WriteFile(payload, []byte("#!/bin/sh\ntouch "+marks+"/fsmonitor\n"), 0o755)
	f, _ := os.OpenFile(filepath.Join(root, "config"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = %s\n", payload)
	f.Close()
	off := sandbox.Status{Mode: sandbox.ModeOff}
	r := NewRegistry(ShellTool(root, ShellOptions{Sandbox: &off}))
	res := call(t, r, "run_command", map[string]any{"command": "git status; git log"})
	if _, err := os.Stat(filepath.Join(marks, "fsmonitor")); err == nil {
		t.Fatalf("the bare repository's fsmonitor ran:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "bare repository") && !strings.Contains(res.Output, "not a git repository") {
		t.Errorf("git should refuse the implicit bare repository: %s", res.Output)
	}
	// Control: without the overrides git uses it and runs the program.
	cmd := exec.Command("git", "status")
	cmd.Dir = root
	cmd.Run()
	if _, err := os.Stat(filepath.Join(marks, "fsmonitor")); err != nil {
		t.Errorf("control: plain git did not run the bare repository's fsmonitor (%v)", err)
	}
}

// The user's own settings stay: a credential helper and an LFS filter in
// the user's config come back after the repository's are overridden; a
// GIT_CONFIG_COUNT already in the environment keeps its entries.
func TestGitSafeEnvKeepsUserSettings(t *testing.T) {
	root, _ := gitAttackRepo(t)
	home := t.TempDir()
	global := filepath.Join(home, ".gitconfig")
	os.WriteFile(global, []byte("[credential]\n\thelper = store\n[filter \"evil\"]\n\tclean = git-lfs clean -- %f\n"), 0o644)
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Mine"}
	env, err := GitSafeEnv(context.Background(), env, root, true)
	if err != nil {
		t.Fatal(err)
	}
	get := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"config"}, args...)...)
		cmd.Dir, cmd.Env = root, env
		out, _ := cmd.Output()
		return strings.TrimSpace(string(out))
	}
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://me:s3cret@example.com\n"), 0o600)
	fill := exec.Command("git", "credential", "fill")
	fill.Dir, fill.Env, fill.Stdin = root, append(env, "GIT_TERMINAL_PROMPT=0"), strings.NewReader("protocol=https\nhost=example.com\n\n")
	out, err := fill.CombinedOutput()
	if !strings.Contains(string(out), "password=s3cret") || strings.Contains(string(out), "PWNED") {
		t.Errorf("credential fill should use the user's helper only: %v\n%s", err, out)
	}
	if got := get("filter.evil.clean"); got != "git-lfs clean -- %f" {
		t.Errorf("filter.evil.clean = %q, want the user's", got)
	}
	if got := get("filter.evil.smudge"); got != "cat" {
		t.Errorf("filter.evil.smudge = %q, want cat", got)
	}
	for key, want := range map[string]string{"user.name": "Mine", "core.fsmonitor": "false", "core.hookspath": "/dev/null", "diff.evil.command": gitNoDriver, "gpg.program": "gpg"} {
		if got := get(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// BenchmarkGitSafeEnv: what the overrides add to a command: the fixed ones
// (every line) and the probe of the repository's settings (lines naming
// git), which starts one git process.
func BenchmarkGitSafeEnv(b *testing.B) {
	root := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		b.Skipf("git init: %v %s", err, out)
	}
	env := os.Environ()
	for _, probe := range []bool{false, true} {
		b.Run(fmt.Sprintf("probe=%v", probe), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := GitSafeEnv(context.Background(), env, root, probe); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

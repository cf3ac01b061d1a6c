package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A repository's git configuration can name programs git runs: a shipped
// .git/config with core.fsmonitor runs a script on `git status`, a diff
// driver on `git diff`. Every git that Polly starts (the model's commands,
// hooks) gets overrides in the environment (GIT_CONFIG_COUNT: the
// "command" scope, above every configuration file and below `git -c`).

// gitFixed are set for every command: settings that run a program no
// command needs here, hooks shipped in .git/hooks, and the settings that
// let a repository reach beyond itself.
var gitFixed = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.editor", "true"},
	{"sequence.editor", "true"},
	{"safe.bareRepository", "explicit"}, // a bare repository's files at the project root are not a repository
	{"protocol.ext.allow", "never"},
	{"gc.auto", "0"}, // no automatic gc or maintenance: it prunes what undo and the reflog keep
	{"maintenance.auto", "false"},
}

// gitNamed matches the settings whose value is a program: the ones with a
// name inside (diff.NAME.command) cannot be listed ahead, so the
// repository's own are read (git config) and overridden one by one.
var gitNamed = `^(core\.(sshcommand|gitproxy|askpass|alternaterefscommand)|diff\.external|credential\.(.+\.)?helper|` +
	`diff\..+\.(command|textconv)|filter\..+\.(clean|smudge|process)|merge\..+\.driver|gpg\.((.+\.)?program|ssh\.defaultkeycommand)|` +
	`remote\..+\.(uploadpack|receivepack)|(difftool|mergetool|man|browser|guitool)\..+\.(cmd|path)|submodule\..+\.update|` +
	`hook\..+\.command|imap\.tunnel|sendemail\.(.+\.)?(smtpserver|sendmailcmd)|interactive\.difffilter|instaweb\.httpd)$`

// gitNoDriver replaces a diff driver or diff.external: git has no value
// meaning "the built-in diff", so it says what it did not run. Git appends
// "$@" to a command with shell characters; the # ends the line before it.
const gitNoDriver = `printf 'polly: %s: not diffed; the repository config names a diff program, which Polly does not run\n' "$1" #`

// gitNeutral is what replaces a repository's value of key when no other
// scope (the user's own config) sets one: a program with the default
// behaviour, or none.
func gitNeutral(key string) string {
	last := key[strings.LastIndexByte(key, '.')+1:]
	switch {
	case key == "diff.external" || strings.HasPrefix(key, "diff.") && last == "command":
		return gitNoDriver
	case last == "textconv" || last == "clean" || last == "smudge" || key == "interactive.difffilter":
		return "cat"
	case key == "core.sshcommand":
		return "ssh"
	case key == "gpg.x509.program":
		return "gpgsm"
	case key == "gpg.ssh.program":
		return "ssh-keygen"
	case key == "gpg.program" || key == "gpg.openpgp.program":
		return "gpg"
	case last == "uploadpack":
		return "git-upload-pack"
	case last == "receivepack":
		return "git-receive-pack"
	case last == "update": // submodule.NAME.update=!command
		return "none"
	case last == "command": // hook.NAME.command
		return "true"
	case last == "process" || last == "helper" || last == "askpass" || last == "alternaterefscommand" ||
		last == "tunnel" || last == "smtpserver" || last == "defaultkeycommand":
		return ""
	}
	return "false" // tools' cmd and path, merge drivers, sendmailcmd, httpd
}

// gitSetting is one value of a setting and the scope it comes from.
type gitSetting struct{ scope, key, value string }

// repoScope: set by the repository (its .git/config, what that includes,
// config.worktree), not by the user.
func repoScope(s string) bool { return s == "local" || s == "worktree" }

// GitSafeEnv returns env with git overrides added after any
// GIT_CONFIG_COUNT entries env already has. With probe set it also runs
// `git config` in dir to find the repository's program settings (those
// with a name inside) and overrides each: with the user's own value when
// there is one, else with a neutral program (cat for a textconv or
// filter, ssh, false, or nothing). Probing costs one short git process.
func GitSafeEnv(ctx context.Context, env []string, dir string, probe bool) ([]string, error) {
	pairs := slices.Clone(gitFixed)
	if probe {
		named, err := gitProgramSettings(ctx, withGitConfig(env, gitFixed), dir)
		if err != nil {
			return nil, err
		}
		extra, proxy := gitOverrides(named)
		pairs = append(pairs, extra...)
		if proxy && !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GIT_PROXY_COMMAND=") }) {
			// core.gitProxy holds a list the command scope cannot shorten;
			// the variable (set, even empty) makes git ignore it.
			env = append(slices.Clone(env), "GIT_PROXY_COMMAND=")
		}
	}
	return withGitConfig(env, pairs), nil
}

// gitOverrides turns the settings found into overrides, and says whether
// the repository sets core.gitProxy.
func gitOverrides(named []gitSetting) (pairs [][2]string, proxy bool) {
	var keys []string
	byKey := map[string][]gitSetting{}
	for _, s := range named {
		if _, ok := byKey[s.key]; !ok {
			keys = append(keys, s.key)
		}
		byKey[s.key] = append(byKey[s.key], s)
	}
	for _, k := range keys {
		vals := byKey[k]
		if !slices.ContainsFunc(vals, func(s gitSetting) bool { return repoScope(s.scope) }) {
			continue
		}
		own := slices.DeleteFunc(slices.Clone(vals), func(s gitSetting) bool { return repoScope(s.scope) })
		last := k[strings.LastIndexByte(k, '.')+1:]
		switch {
		case k == "core.gitproxy":
			proxy = true
		case last == "helper":
			// A list: an empty value empties it, then the user's own
			// helpers come back in their order.
			pairs = append(pairs, [2]string{k, ""})
			for _, s := range own {
				pairs = append(pairs, [2]string{k, s.value})
			}
		case last == "update":
			if repo := vals[len(vals)-1]; repoScope(repo.scope) && strings.HasPrefix(repo.value, "!") {
				pairs = append(pairs, [2]string{k, gitNeutral(k)})
			}
		case len(own) > 0:
			pairs = append(pairs, [2]string{k, own[len(own)-1].value})
		default:
			pairs = append(pairs, [2]string{k, gitNeutral(k)})
		}
	}
	return pairs, proxy
}

// gitProgramSettings lists every value of the settings gitNamed matches,
// in the order git reads them.
func gitProgramSettings(ctx context.Context, env []string, dir string) ([]gitSetting, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return nil, nil // no git: a command cannot run one either
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "config", "--show-scope", "-z", "--get-regexp", gitNamed)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return nil, nil // none set
	case errors.As(err, &exit) && exit.ExitCode() == 128 && ctx.Err() == nil:
		// git cannot read this configuration, so no git the command
		// starts can run a program it names either.
		return nil, nil
	default:
		return nil, fmt.Errorf("read the repository's git settings (to keep git from running the programs they name): %v %s", err, strings.TrimSpace(errOut.String()))
	}
	return parseGitSettings(out.Bytes()), nil
}

// parseGitSettings reads `git config --show-scope -z` output: scope NUL,
// then the key, a newline and the value NUL (no newline: no value).
func parseGitSettings(b []byte) []gitSetting {
	var out []gitSetting
	fields := strings.Split(string(b), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		key, value, _ := strings.Cut(fields[i+1], "\n")
		out = append(out, gitSetting{scope: fields[i], key: key, value: value}) // section and name come lower case
	}
	return out
}

// withGitConfig appends pairs to env's GIT_CONFIG_COUNT entries.
func withGitConfig(env []string, pairs [][2]string) []string {
	n := 0
	at := -1
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, at = 0, i
			if c, err := strconv.Atoi(v); err == nil && c > 0 {
				n = c
			}
		}
	}
	out := make([]string, 0, len(env)+2*len(pairs)+1)
	for i, kv := range env {
		if i != at {
			out = append(out, kv)
		}
	}
	for i, p := range pairs {
		out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n+i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n+i, p[1]))
	}
	return append(out, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+len(pairs)))
}

package sandbox

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// credentialName matches variable names that usually hold a secret.
var credentialName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|_)(KEY|APIKEY|TOKEN|SECRET|PASSWD|CREDENTIALS?)(_|$)|PASSWORD|SECRET`)
})

// credentialValue matches values that look like API keys or tokens
// whatever the variable is called.
var credentialValue = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(sk-|sk_|pk_live_|rk_live_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abpr]-|AKIA[0-9A-Z]{12}|AIza[0-9A-Za-z_-]{20}|hf_[A-Za-z]{20}|npm_[A-Za-z0-9]{20}|eyJ[A-Za-z0-9_-]{10,}\.)`)
})

// LooksSecret reports whether an environment variable looks like it holds a
// credential, by its name or by its value.
func LooksSecret(name, value string) bool {
	return credentialName().MatchString(name) || credentialValue().MatchString(strings.TrimSpace(value))
}

// socketVars point at sockets of programs outside the sandbox (an agent
// holding keys, a terminal multiplexer, the session bus, a container
// engine): commands do not get them unless pass names them.
var socketVars = []string{"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "TMUX", "TMUX_PANE", "STY",
	"DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "CONTAINER_HOST", "KITTY_LISTEN_ON", "WEZTERM_UNIX_SOCKET"}

// CommandEnv is the environment a command gets: env without the variables
// named in drop, without anything that looks like a credential or points
// at an outside socket unless pass names it, then extra on top (extra wins
// and is not filtered: Polly sets it).
func CommandEnv(env, drop, pass, extra []string) []string {
	out := make([]string, 0, len(env)+len(extra))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains(drop, name) {
			continue
		}
		if (LooksSecret(name, value) || slices.Contains(socketVars, name)) && !slices.Contains(pass, name) {
			continue
		}
		if strings.HasPrefix(name, "POLLY_SANDBOX") {
			continue // the helper's own switches are not the command's
		}
		out = append(out, kv)
	}
	seen := map[string]int{}
	for i, kv := range out {
		name, _, _ := strings.Cut(kv, "=")
		seen[name] = i
	}
	for _, kv := range extra {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[name]; ok {
			out[i] = kv
			continue
		}
		seen[name] = len(out)
		out = append(out, kv)
	}
	return out
}

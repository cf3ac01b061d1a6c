package app

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"polly/agent/config"
	"polly/agent/hooks"
)

// untrustedWarning is the warning for a project file's extension settings
// that are ignored because the project is not trusted.
func untrustedWarning(what string, where []string) string {
	return fmt.Sprintf("%s ignored: the project is not trusted, so its files may not run commands (%s); trust the project to use them",
		what, strings.Join(where, ", "))
}

// hooksOf builds the hooks of the user config and, for a trusted project,
// of the project config. Hooks run as the user's own commands, without
// the sandbox, through hooks.Bash (the seam to put one in later).
func hooksOf(cfg *config.Config, root string, trusted bool, scrub []string) (*hooks.Set, []string, error) {
	var list []hooks.Hook
	var ignored []string
	for _, e := range cfg.HookEntries() {
		if e.Source.Kind == config.KindProjectFile && !trusted {
			ignored = append(ignored, fmt.Sprintf("%s %q (%s)", e.Event, e.Matcher.Matcher, e.Source))
			continue
		}
		for _, h := range e.Matcher.Hooks {
			list = append(list, hooks.Hook{Event: e.Event, Matcher: e.Matcher.Matcher, Command: h.Command,
				Timeout: time.Duration(h.Timeout) * time.Second, Source: e.Source.String()})
		}
	}
	var warnings []string
	if len(ignored) > 0 {
		warnings = append(warnings, untrustedWarning("project hooks", ignored))
	}
	if len(list) == 0 {
		return nil, warnings, nil
	}
	set, err := hooks.New(list, hooks.Options{Dir: root, Env: scrubbedEnv(scrub)})
	return set, warnings, err
}

// scrubbedEnv is Polly's environment without the variables holding API
// keys: hooks and MCP servers are started from it.
func scrubbedEnv(vars []string) []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(vars, name)
	})
}

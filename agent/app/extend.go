package app

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/hooks"
	"polly/tools"
	"polly/tools/mcp"
	"polly/tools/permission"
)

// untrustedWarning is the warning for a project file's extension settings
// that are ignored because the project is not trusted.
func untrustedWarning(what string, where []string) string {
	return fmt.Sprintf("%s ignored: the project is not trusted, so its files may not run commands (%s); trust the project to use them",
		what, strings.Join(where, ", "))
}

// hooksOf builds the hooks of the user's files (Polly's config and
// ~/.claude/settings.json) and, for a trusted project, of the project's
// (.agent/config.json, .claude/settings.json, .claude/settings.local.json).
// Command hooks run as the user's own commands through hooks.Spawn, the
// one place a sandbox can be put around them.
func hooksOf(cfg *config.Config, root string, trusted bool, scrub []string) (*hooks.Set, []string, error) {
	var list []hooks.Hook
	var ignored []string
	for _, e := range cfg.HookEntries() {
		if e.Source.Kind == config.KindProjectFile && !trusted {
			ignored = append(ignored, fmt.Sprintf("%s %q (%s)", e.Event, e.Matcher.Matcher, e.Source))
			continue
		}
		for _, h := range e.Matcher.Hooks {
			list = append(list, hooks.Hook{Event: e.Event, Matcher: e.Matcher.Matcher, Type: h.Type, Command: h.Command, Args: h.Args,
				URL: h.URL, Headers: h.Headers, AllowedEnvVars: h.AllowedEnvVars, If: h.If, Async: h.Async || h.AsyncRewake,
				StatusMessage: h.StatusMessage, Timeout: time.Duration(h.Timeout) * time.Second, Source: e.Source.String()})
		}
	}
	var warnings []string
	if len(ignored) > 0 {
		warnings = append(warnings, untrustedWarning("project hooks", ignored))
	}
	if off := cfg.HooksDisabledBy(trusted); off != "" {
		if len(list) > 0 {
			warnings = append(warnings, fmt.Sprintf("%d hooks are off: disableAllHooks is true in %s", len(list), off))
		}
		return nil, warnings, nil
	}
	if len(list) == 0 {
		return nil, warnings, nil
	}
	// A hook's git gets the overrides run_command's does: the repository's
	// settings must not name what it runs.
	env, err := tools.GitSafeEnv(context.Background(), scrubbedEnv(scrub), root, true)
	if err != nil {
		warnings = append(warnings, "hooks: "+err.Error())
		env, _ = tools.GitSafeEnv(context.Background(), scrubbedEnv(scrub), root, false)
	}
	set, unused, err := hooks.New(list, hooks.Options{Dir: root, Env: env})
	return set, append(warnings, unused...), err
}

// scrubbedEnv is Polly's environment without the variables holding API
// keys: hooks and MCP servers are started from it.
func scrubbedEnv(vars []string) []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(vars, name)
	})
}

// mcpOf prepares the MCP servers of the config files and, for a trusted
// project, of its .mcp.json and project config. Nothing starts here: the
// servers start in the background when a session opens.
func mcpOf(cfg *config.Config, root string, trusted bool, scrub []string) (*mcp.Manager, []string) {
	var list []mcp.Config
	var ignored []string
	for _, e := range cfg.MCPServerEntries() {
		if e.Source.Kind == config.KindProjectFile && !trusted {
			ignored = append(ignored, fmt.Sprintf("%s (%s)", e.Name, e.Source))
			continue
		}
		s := e.Server
		// ${VAR} and ${VAR:-default} come from Polly's environment, as in
		// Claude Code's .mcp.json ("Bearer ${GITHUB_TOKEN}"); a variable that
		// is unset without a default fails this server only, naming it.
		var bad error
		expand := func(v string) string {
			out, err := mcp.Expand(v, os.LookupEnv)
			if err != nil && bad == nil {
				bad = err
			}
			return out
		}
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			args[i] = expand(a)
		}
		headers := make(map[string]string, len(s.Headers))
		for k, v := range s.Headers {
			headers[k] = expand(v)
		}
		c := mcp.Config{Name: e.Name, Transport: s.Transport(), Command: expand(s.Command), Args: args, URL: expand(s.URL),
			Headers: headers, StartupTimeout: time.Duration(s.StartupTimeout) * time.Second,
			ToolTimeout: time.Duration(s.ToolTimeout) * time.Second, Source: e.Source.String(), Dir: root}
		if s.Cwd != "" {
			c.Dir = s.Cwd
			if !filepath.IsAbs(c.Dir) {
				c.Dir = filepath.Join(root, c.Dir)
			}
		}
		if c.Transport == "stdio" {
			c.Env = scrubbedEnv(scrub)
			for _, k := range slices.Sorted(maps.Keys(s.Env)) {
				c.Env = append(c.Env, k+"="+expand(s.Env[k]))
			}
		}
		if bad != nil {
			c.Broken = "its configuration: " + bad.Error()
		}
		list = append(list, c)
	}
	var warnings []string
	if len(ignored) > 0 {
		warnings = append(warnings, untrustedWarning("project MCP servers", ignored))
	}
	if len(list) == 0 {
		return nil, warnings
	}
	return mcp.New(list, "polly"), warnings
}

// mcpNotice tells the user what happened to an MCP server.
func mcpNotice(st mcp.Status) agent.Notice {
	n := agent.Notice{Header: agent.Header{Time: time.Now()}, Level: "warn"}
	switch st.State {
	case mcp.Ready:
		n.Level, n.Text = "info", fmt.Sprintf("MCP server %s is ready (%d tools)", st.Name, len(st.Tools))
		if len(st.Skipped) > 0 {
			n.Level = "warn"
			n.Text += "; left out: " + strings.Join(st.Skipped, "; ")
		}
	case mcp.Restarting:
		n.Text = fmt.Sprintf("MCP server %s stopped (%s); restarting it once", st.Name, st.Err)
	default:
		n.Text = fmt.Sprintf("MCP server %s %s: %s", st.Name, st.State, st.Err)
	}
	return n
}

// notifyingAsker fires the Notification hooks (permission_prompt) as a
// permission dialog opens, without making the dialog wait for them.
type notifyingAsker struct {
	inner permission.Asker
	app   *App
}

func (n notifyingAsker) Ask(ctx context.Context, r permission.Request) (permission.Reply, error) {
	if s := n.app.current.Load(); s != nil && n.app.Deps != nil && n.app.Deps.Hooks.Has(hooks.Notification) {
		msg := fmt.Sprintf("Polly needs your permission to use %s", r.Tool)
		go s.Notify(context.WithoutCancel(ctx), "permission_prompt", "Permission needed", msg)
	}
	return n.inner.Ask(ctx, r)
}

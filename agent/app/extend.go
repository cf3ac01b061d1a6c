package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	"polly/tools/sandbox"
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
// Command hooks run through run: in the command sandbox.
func hooksOf(cfg *config.Config, root string, trusted bool, scrub []string, run hooks.Runner) (*hooks.Set, []string, error) {
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
				StatusMessage: h.StatusMessage, Timeout: time.Duration(h.Timeout) * time.Second, Source: e.Source.String(),
				Network: h.Network})
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
	// Like commands, hooks get no API key and no credential-looking
	// variable but those sandbox.pass_env names, and their git gets the
	// overrides run_command's does: the repository's settings must not
	// name what it runs.
	base := sandbox.CommandEnv(os.Environ(), scrub, cfg.Sandbox.PassEnv, nil)
	env, err := tools.GitSafeEnv(context.Background(), base, root, true)
	if err != nil {
		warnings = append(warnings, "hooks: "+err.Error())
		env, _ = tools.GitSafeEnv(context.Background(), base, root, false)
	}
	set, unused, err := hooks.New(list, hooks.Options{Dir: root, Env: env, Run: run})
	return set, append(warnings, unused...), err
}

// grantFor is the sandbox a hook or an MCP server runs in: g when the
// sandbox is active, none when it is off or missing (they are the user's
// configured programs), and an error when sandbox.mode on refuses.
func (a *App) grantFor(g sandbox.Grant) (sandbox.Grant, error) {
	switch {
	case a.Sandbox.Refuse:
		return g, errors.New(a.Sandbox.Notice())
	case !a.Sandbox.Active:
		return sandbox.Grant{Level: sandbox.Unsandboxed, Network: true}, nil
	}
	return g, nil
}

// sandboxedHook runs hooks in the command sandbox: workspace-write, no
// network unless the hook's config grants it.
func (a *App) sandboxedHook(caches []string) hooks.Runner {
	return func(ctx context.Context, h hooks.Hook, dir string, env []string, stdin []byte, stdout, stderr io.Writer) (int, error) {
		g, err := a.grantFor(sandbox.Grant{Level: sandbox.WorkspaceWrite, Network: h.Network})
		if err != nil {
			return -1, err
		}
		pol := sandbox.Build(sandbox.Plan{Grant: g, Root: a.ProjectDir, StateDir: a.StateDir, Caches: caches, Command: h.Command})
		args := []string{"-c", h.Command}
		if h.Args != nil { // exec form: "$0" "$@" are the program and its arguments
			args = append([]string{"-c", `exec "$0" "$@"`, h.Command}, h.Args...)
		}
		exit, err := a.runner.Exec(ctx, pol, args, dir, env, bytes.NewReader(stdin), stdout, stderr)
		return exit.Code, err
	}
}

// sandboxedServer starts a stdio MCP server in the command sandbox:
// read-only but for the writable roots its config declares (the project
// among them: then its protected paths stay read-only), with the network
// only when its config says so.
func (a *App) sandboxedServer(c mcp.Config, stderr io.Writer) (io.WriteCloser, io.ReadCloser, func(), error) {
	g := sandbox.Grant{Level: sandbox.ReadOnly, Network: c.Network}
	for _, r := range c.WritableRoots {
		if r == a.ProjectDir {
			g.Level = sandbox.WorkspaceWrite
		} else {
			g.Writable = append(g.Writable, r)
		}
	}
	g, err := a.grantFor(g)
	if err != nil {
		return nil, nil, nil, err
	}
	pol := sandbox.Build(sandbox.Plan{Grant: g, Root: a.ProjectDir, StateDir: a.StateDir})
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, nil, nil, err
	}
	// bash runs the server's command as given: "$0" "$@" are it and its arguments.
	p, err := a.runner.Start(context.Background(), pol, sandbox.Spec{Args: append([]string{"-c", `exec "$0" "$@"`, c.Command}, c.Args...),
		Dir: c.Dir, Env: c.Env, Stdin: inR, Stdout: outW, Stderr: errW})
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, nil, nil, err
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(stderr, errR)
		errR.Close()
		close(copied)
	}()
	go p.Wait() // reaps it and gives its helper back when it ends
	// After a failed start the message quotes the end of the server's
	// stderr: killing it waits (briefly: a child may hold the pipe) for
	// what it wrote to be copied.
	kill := func() {
		p.Kill()
		select {
		case <-copied:
		case <-time.After(time.Second):
		}
	}
	return inW, outR, kill, nil
}

// mcpOf prepares the MCP servers of the config files and, for a trusted
// project, of its .mcp.json and project config. Nothing starts here: the
// servers start in the background when a session opens.
func mcpOf(cfg *config.Config, root string, trusted bool, scrub []string, spawn func(mcp.Config, io.Writer) (io.WriteCloser, io.ReadCloser, func(), error)) (*mcp.Manager, []string) {
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
			// No API key, and credentials only when the server's own env
			// names them ("GITHUB_TOKEN": "${GITHUB_TOKEN}") or pass_env does.
			var own []string
			for _, k := range slices.Sorted(maps.Keys(s.Env)) {
				own = append(own, k+"="+expand(s.Env[k]))
			}
			c.Env = sandbox.CommandEnv(os.Environ(), scrub, cfg.Sandbox.PassEnv, own)
			c.Network, c.Spawn = s.Network, spawn
			for _, r := range s.WritableRoots {
				if strings.HasPrefix(r, "~/") {
					r = filepath.Join(Home(), r[2:])
				}
				if !filepath.IsAbs(r) {
					r = filepath.Join(root, r)
				}
				c.WritableRoots = append(c.WritableRoots, filepath.Clean(r))
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

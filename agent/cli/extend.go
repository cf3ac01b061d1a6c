package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"polly/agent/app"
	"polly/agent/config"
	"polly/tools/mcp"
)

// listSkills prints the Agent Skills Polly found, and the SKILL.md files it
// skipped with the reason.
func listSkills(ctx context.Context, env Env, cfg *config.Config) error {
	a, err := app.Open(ctx, app.Options{Config: cfg, ProjectDir: env.Dir, WorkDir: env.WorkDir, Template: env.Template, Home: env.Home, LLM: env.LLM})
	if err != nil {
		return err
	}
	defer a.Close()
	for _, w := range a.Warnings {
		if strings.HasPrefix(w, "skill") {
			fmt.Fprintf(env.Stderr, "polly: warning: %s\n", w)
		}
	}
	list := a.Skills.All()
	if len(list) == 0 {
		fmt.Fprintln(env.Stdout, "no skills found (looked in .agents/skills, .claude/skills, ~/.config/agents/skills, ~/.claude/skills and the workspace's skills/)")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFOUND IN\tDESCRIPTION")
	for _, k := range list {
		desc := strings.Join(strings.Fields(k.Description), " ")
		if r := []rune(desc); len(r) > 80 {
			desc = string(r[:77]) + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name, k.Root, desc)
	}
	return tw.Flush()
}

// mcpProblems words the MCP servers still starting when a headless run
// begins (failures and left-out tools were told as they happened).
func mcpProblems(a *app.App) []string {
	var out []string
	for _, s := range a.MCP.Status() {
		if s.State == mcp.Starting {
			out = append(out, fmt.Sprintf("MCP server %s is still starting; its tools are not available yet", s.Name))
		}
	}
	return out
}

// mcpCommand is `polly mcp list`: start every configured server, wait for
// it, and show its state, tools and last error.
func mcpCommand(ctx context.Context, env Env, cfg *config.Config, args []string) error {
	if len(args) != 1 || args[0] != "list" {
		return usagef("usage: polly mcp list")
	}
	a, err := app.Open(ctx, app.Options{Config: cfg, ProjectDir: env.Dir, WorkDir: env.WorkDir, Home: env.Home, LLM: env.LLM})
	if err != nil {
		return err
	}
	defer a.Close()
	for _, w := range a.Warnings {
		if strings.Contains(w, "MCP") {
			fmt.Fprintf(env.Stderr, "polly: warning: %s\n", w)
		}
	}
	if a.MCP.Len() == 0 {
		fmt.Fprintln(env.Stdout, "no MCP servers configured (add them to .mcp.json or \"mcp_servers\" in the config)")
		return nil
	}
	a.MCP.Wait(ctx)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATE\tTOOLS\tFROM")
	var details []string
	for _, s := range a.MCP.Status() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.Transport, s.State, len(s.Tools), s.Source)
		for _, t := range s.Tools {
			details = append(details, "  "+t)
		}
		if s.Err != "" {
			details = append(details, fmt.Sprintf("  %s: %s", s.Name, s.Err))
		}
		for _, k := range s.Skipped {
			details = append(details, fmt.Sprintf("  %s: left out %s", s.Name, k))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(details) > 0 {
		fmt.Fprintln(env.Stdout, strings.Join(details, "\n"))
	}
	for _, s := range a.MCP.Status() {
		if s.State != mcp.Ready {
			return &exitError{code: ExitFailed, err: fmt.Errorf("MCP server %s: %s", s.Name, s.State)}
		}
	}
	return nil
}

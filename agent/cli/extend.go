package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"polly/agent/app"
	"polly/agent/config"
)

// listSkills prints the Agent Skills Polly found, and the SKILL.md files it
// skipped with the reason.
func listSkills(ctx context.Context, env Env, cfg *config.Config) error {
	a, err := app.Open(ctx, app.Options{Config: cfg, ProjectDir: env.Dir, Template: env.Template, Home: env.Home, LLM: env.LLM})
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

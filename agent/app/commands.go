package app

import (
	"context"
	"fmt"
	"strings"

	"polly/workspace/commands"
)

// CommandRun is a custom slash command made ready to send.
type CommandRun struct {
	Name    string   // without the slash
	Prompt  string   // the file's body with the arguments in place
	Persona string   // the persona it names (opencode's "agent"); "": the current one
	Grants  []string // its allowed-tools: pre-approved for the turn (agent.WithGrants)
	Notes   []string // what of it Polly does not apply, for the user
	// Fetch, when set, gets the prompt from an MCP server (a prompt run as
	// /mcp__server__prompt): Prompt is empty until it is called, off the
	// UI's loop.
	Fetch func(ctx context.Context) (string, error)
}

// SlashCommands are the custom commands and the MCP servers' prompts (as
// /mcp__server__prompt), for help and completion. MCP prompts appear once
// their server is ready.
func (a *App) SlashCommands() []commands.Command {
	out := a.Commands.All()
	for _, p := range a.MCP.Prompts() {
		out = append(out, commands.Command{Name: p.Command, Description: p.Description, ArgumentHint: p.Hint(),
			Source: "MCP server " + p.Server})
	}
	return out
}

// Command expands text when it starts with a custom command ("/review
// 42"): ok is false when it names none. A command given too few arguments
// is an error (*commands.MissingArgsError) and nothing is to be sent.
func (a *App) Command(text string) (CommandRun, bool, error) {
	c, args, ok := a.Commands.Lookup(text)
	if !ok {
		return a.mcpPrompt(text)
	}
	prompt, err := c.Expand(args)
	if err != nil {
		return CommandRun{}, true, err
	}
	run := CommandRun{Name: c.Name, Prompt: prompt, Grants: c.AllowedTools}
	if c.Agent != "" {
		if p, found := a.Personas.Find(c.Agent); found {
			run.Persona = p.ID
		} else {
			run.Notes = append(run.Notes, fmt.Sprintf("/%s names agent %q, which is not a persona here (%s); it goes to the current one",
				c.Name, c.Agent, strings.Join(a.Personas.IDs(), ", ")))
		}
	}
	if c.Model != "" {
		run.Notes = append(run.Notes, fmt.Sprintf("/%s asks for model %q; Polly runs it on the persona's model (/model switches it)", c.Name, c.Model))
	}
	return run, true, nil
}

// mcpPrompt is Command for /mcp__server__prompt: the prompt is fetched
// later (it is a request to the server), its arguments given by position.
func (a *App) mcpPrompt(text string) (CommandRun, bool, error) {
	t := strings.TrimSpace(text)
	name, rest, _ := strings.Cut(strings.TrimPrefix(t, "/"), " ")
	if !strings.HasPrefix(t, "/mcp__") {
		return CommandRun{}, false, nil
	}
	p, ok := a.MCP.FindPrompt(name)
	if !ok {
		return CommandRun{}, false, nil
	}
	args := commands.SplitArgs(rest)
	m := a.MCP
	return CommandRun{Name: name, Fetch: func(ctx context.Context) (string, error) { return m.GetPrompt(ctx, p, args) }}, true, nil
}

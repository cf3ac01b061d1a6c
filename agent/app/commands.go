package app

import (
	"fmt"
	"strings"
)

// CommandRun is a custom slash command made ready to send.
type CommandRun struct {
	Name    string   // without the slash
	Prompt  string   // the file's body with the arguments in place
	Persona string   // the persona it names (opencode's "agent"); "": the current one
	Grants  []string // its allowed-tools: pre-approved for the turn (agent.WithGrants)
	Notes   []string // what of it Polly does not apply, for the user
}

// Command expands text when it starts with a custom command ("/review
// 42"): ok is false when it names none. A command given too few arguments
// is an error (*commands.MissingArgsError) and nothing is to be sent.
func (a *App) Command(text string) (CommandRun, bool, error) {
	c, args, ok := a.Commands.Lookup(text)
	if !ok {
		return CommandRun{}, false, nil
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

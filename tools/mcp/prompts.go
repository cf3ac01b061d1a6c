package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompt is one prompt a ready server offers; the user runs it as the
// slash command /mcp__<server>__<prompt> (Claude Code's form).
type Prompt struct {
	Command     string // mcp__<server>__<prompt>, without the slash
	Server      string
	Name        string // the prompt's name on the server
	Description string
	Args        []PromptArg
}

// PromptArg is one argument of a prompt, given by position.
type PromptArg struct {
	Name     string
	Required bool
}

// Hint is the arguments as a completion list shows them: <a> [b].
func (p Prompt) Hint() string {
	var parts []string
	for _, a := range p.Args {
		if a.Required {
			parts = append(parts, "<"+a.Name+">")
		} else {
			parts = append(parts, "["+a.Name+"]")
		}
	}
	return strings.Join(parts, " ")
}

// Prompts lists the prompts of the ready servers.
func (m *Manager) Prompts() []Prompt {
	if m == nil {
		return nil
	}
	var out []Prompt
	for _, s := range m.servers {
		s.mu.Lock()
		if s.state == Ready {
			out = append(out, s.prompts...)
		}
		s.mu.Unlock()
	}
	return out
}

// listPrompts reads a server's prompts when it offers any (at connect).
func listPrompts(ctx context.Context, server string, cs *sdk.ClientSession) []Prompt {
	if init := cs.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Prompts == nil {
		return nil
	}
	var out []Prompt
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			break // prompts are an extra: a server that cannot list them still serves its tools
		}
		name, err := toolName(server, p.Name)
		if err != nil {
			continue
		}
		pr := Prompt{Command: name, Server: server, Name: p.Name, Description: strings.TrimSpace(p.Description)}
		for _, a := range p.Arguments {
			pr.Args = append(pr.Args, PromptArg{Name: a.Name, Required: a.Required})
		}
		out = append(out, pr)
	}
	return out
}

// FindPrompt returns the prompt a slash command names
// ("mcp__github__review_pr").
func (m *Manager) FindPrompt(command string) (Prompt, bool) {
	for _, p := range m.Prompts() {
		if p.Command == command {
			return p, true
		}
	}
	return Prompt{}, false
}

// GetPrompt asks the server for the prompt with args given by position
// (the first word fills the first argument, …; the last argument takes the
// rest) and returns its messages as one text to send.
func (m *Manager) GetPrompt(ctx context.Context, p Prompt, args []string) (string, error) {
	named := map[string]string{}
	for i, a := range p.Args {
		switch {
		case i < len(args) && i == len(p.Args)-1:
			named[a.Name] = strings.Join(args[i:], " ")
		case i < len(args):
			named[a.Name] = args[i]
		case a.Required:
			return "", fmt.Errorf("/%s needs %s (usage: /%s %s)", p.Command, a.Name, p.Command, p.Hint())
		}
	}
	var srv *server
	for _, s := range m.servers {
		if s.cfg.Name == p.Server {
			srv = s
		}
	}
	if srv == nil {
		return "", fmt.Errorf("no MCP server %s", p.Server)
	}
	cs, err := srv.live()
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, srv.cfg.ToolTimeout)
	defer cancel()
	res, err := cs.GetPrompt(cctx, &sdk.GetPromptParams{Name: p.Name, Arguments: named})
	if err != nil {
		return "", fmt.Errorf("MCP server %s, prompt %s: %w", p.Server, p.Name, err)
	}
	var parts []string
	for _, msg := range res.Messages {
		text := render(&sdk.CallToolResult{Content: []sdk.Content{msg.Content}})
		if msg.Role == "assistant" {
			text = "(the prompt's assistant part) " + text
		}
		parts = append(parts, text)
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("MCP server %s, prompt %s: no messages", p.Server, p.Name)
	}
	return strings.Join(parts, "\n\n"), nil
}

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"polly/tools"
)

// tool is one MCP tool as a Polly tool.
type tool struct {
	srv    *server
	remote string // the tool's name on the server
	name   string // mcp__<server>__<tool>
	desc   string
	schema *jsonschema.Schema
}

// adapt checks an MCP tool and wraps it; an error says why it is left out.
func adapt(s *server, t *sdk.Tool) (*tool, error) {
	name, err := toolName(s.cfg.Name, t.Name)
	if err != nil {
		return nil, err
	}
	schema, err := sanitize(t.InputSchema)
	if err != nil {
		return nil, err
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = t.Title
	}
	desc = fmt.Sprintf("[MCP server %s] %s", s.cfg.Name, desc)
	return &tool{srv: s, remote: t.Name, name: name, desc: desc, schema: schema}, nil
}

func (t *tool) Name() string               { return t.name }
func (t *tool) Description() string        { return t.desc }
func (t *tool) Schema() *jsonschema.Schema { return t.schema }

// Access: an MCP tool can do anything its server can, so the gate treats
// it as external (asks the first time in a session unless a rule allows).
func (t *tool) Access(_ context.Context, args json.RawMessage) (tools.Access, error) {
	preview := fmt.Sprintf("MCP server %s, tool %s\narguments: %s", t.srv.cfg.Name, t.remote, clip(string(args), 2000))
	return tools.Access{Kind: tools.AccessExternal, Preview: preview}, nil
}

func (t *tool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return tools.Result{}, fmt.Errorf("arguments: %w", err)
	}
	res, err := t.srv.call(ctx, t.remote, m)
	if err != nil {
		return tools.Result{}, err
	}
	// Everything a server returns is its text, not Polly's: it reaches the
	// model enveloped, naming the server and tool.
	out, source := render(res), t.source()
	if res.IsError {
		if strings.TrimSpace(out) == "" {
			return tools.Result{Output: "error: " + source + " reported an error without a message", IsError: true}, nil
		}
		return tools.Result{Output: "error: " + source + " reported an error:\n" + tools.Envelope(source, out), IsError: true, Untrusted: source}, nil
	}
	return tools.Result{Output: tools.Envelope(source, out), Untrusted: source}, nil
}

// source names the tool in envelopes and messages.
func (t *tool) source() string {
	return fmt.Sprintf("MCP server %s, tool %s", t.srv.cfg.Name, t.remote)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

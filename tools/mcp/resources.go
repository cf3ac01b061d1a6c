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

// Instruction is what one server says about how to use it (the
// "instructions" of its initialize result).
type Instruction struct {
	Server string
	Text   string
}

// maxInstructions caps one server's instructions in the system prompt.
const maxInstructions = 2000

// Instructions lists the instructions of the ready servers that gave any.
// Only servers Polly was allowed to start (the user's config, a trusted
// project) get here, so their words may enter the system prompt.
func (m *Manager) Instructions() []Instruction {
	if m == nil {
		return nil
	}
	var out []Instruction
	for _, s := range m.servers {
		s.mu.Lock()
		if s.state == Ready && s.instructions != "" {
			text := s.instructions
			if len(text) > maxInstructions { // a server's words must not crowd out the task
				text = text[:maxInstructions] + "\n[… cut at 2,000 characters]"
			}
			out = append(out, Instruction{Server: s.cfg.Name, Text: text})
		}
		s.mu.Unlock()
	}
	return out
}

// Names of the two tools that reach the servers' resources; they exist
// while a ready server offers resources.
const (
	ListResourcesTool = "mcp_list_resources"
	ReadResourceTool  = "mcp_read_resource"
)

// resourceTools are the resource tools when a ready server offers any.
func (m *Manager) resourceTools() []tools.Tool {
	for _, s := range m.servers {
		s.mu.Lock()
		ok := s.state == Ready && s.resources
		s.mu.Unlock()
		if ok {
			return []tools.Tool{&listResources{m: m}, &readResource{m: m}}
		}
	}
	return nil
}

// withResources returns the names of the ready servers with resources.
func (m *Manager) withResources() []*server {
	var out []*server
	for _, s := range m.servers {
		s.mu.Lock()
		if s.state == Ready && s.resources {
			out = append(out, s)
		}
		s.mu.Unlock()
	}
	return out
}

func (m *Manager) serverNamed(name string) (*server, error) {
	var names []string
	for _, s := range m.withResources() {
		if s.cfg.Name == name {
			return s, nil
		}
		names = append(names, s.cfg.Name)
	}
	return nil, fmt.Errorf("no ready MCP server %q offers resources (servers with resources: %s)", name, strings.Join(names, ", "))
}

type listResources struct{ m *Manager }

func (t *listResources) Name() string { return ListResourcesTool }
func (t *listResources) Description() string {
	return "List the resources (files, records, documents) the MCP servers offer: URI, name, type, description. " +
		"Give server to list one server's; read one with " + ReadResourceTool + "."
}
func (t *listResources) Schema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"server": {Type: "string", Description: "only this server's resources"},
	}}
}
func (t *listResources) Access(_ context.Context, args json.RawMessage) (tools.Access, error) {
	return tools.Access{Kind: tools.AccessExternal, Preview: "list the MCP servers' resources " + string(args)}, nil
}

func (t *listResources) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var a struct{ Server string }
	if err := json.Unmarshal(args, &a); err != nil {
		return tools.Result{}, fmt.Errorf("arguments: %w", err)
	}
	servers := t.m.withResources()
	if a.Server != "" {
		s, err := t.m.serverNamed(a.Server)
		if err != nil {
			return tools.Errorf("%v", err), nil
		}
		servers = []*server{s}
	}
	var b strings.Builder
	var sources []string
	for _, s := range servers {
		cs, err := s.live()
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", s.cfg.Name, err)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.ToolTimeout)
		n := 0
		var list strings.Builder // names and descriptions are the server's text
		for r, err := range cs.Resources(cctx, nil) {
			if err != nil {
				fmt.Fprintf(&b, "%s: listing stopped: %v\n", s.cfg.Name, err)
				break
			}
			n++
			fmt.Fprintf(&list, "%s\t%s\t%s\t%s", s.cfg.Name, r.URI, r.Name, r.MIMEType)
			if d := strings.TrimSpace(r.Description); d != "" {
				fmt.Fprintf(&list, "\t%s", d)
			}
			list.WriteByte('\n')
		}
		cancel()
		if n == 0 {
			fmt.Fprintf(&b, "%s: no resources\n", s.cfg.Name)
			continue
		}
		source := "MCP server " + s.cfg.Name + ", resource list"
		sources = append(sources, source)
		b.WriteString(tools.Envelope(source, list.String()) + "\n")
	}
	return tools.Result{Output: b.String(), Untrusted: strings.Join(sources, "; ")}, nil
}

type readResource struct{ m *Manager }

func (t *readResource) Name() string { return ReadResourceTool }
func (t *readResource) Description() string {
	return "Read one resource of an MCP server by its URI (from " + ListResourcesTool + ")."
}
func (t *readResource) Schema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"server", "uri"}, Properties: map[string]*jsonschema.Schema{
		"server": {Type: "string", Description: "the server that lists the resource"},
		"uri":    {Type: "string", Description: "the resource's URI"},
	}}
}
func (t *readResource) Access(_ context.Context, args json.RawMessage) (tools.Access, error) {
	return tools.Access{Kind: tools.AccessExternal, Preview: "read an MCP resource " + string(args)}, nil
}

func (t *readResource) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var a struct{ Server, URI string }
	if err := json.Unmarshal(args, &a); err != nil {
		return tools.Result{}, fmt.Errorf("arguments: %w", err)
	}
	s, err := t.m.serverNamed(a.Server)
	if err != nil {
		return tools.Errorf("%v", err), nil
	}
	cs, err := s.live()
	if err != nil {
		return tools.Errorf("%v", err), nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ToolTimeout)
	defer cancel()
	res, err := cs.ReadResource(cctx, &sdk.ReadResourceParams{URI: a.URI})
	if err != nil {
		return tools.Errorf("read %s from %s: %v", a.URI, a.Server, err), nil
	}
	var parts []string
	for _, c := range res.Contents {
		if c.Text != "" {
			parts = append(parts, c.Text)
		} else {
			parts = append(parts, fmt.Sprintf("[%s: %s, %d bytes, not shown]", c.URI, c.MIMEType, len(c.Blob)))
		}
	}
	source := "MCP server " + s.cfg.Name + ", resource " + a.URI
	return tools.Result{Output: tools.Envelope(source, strings.Join(parts, "\n")), Untrusted: source}, nil
}

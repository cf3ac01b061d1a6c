package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// MCPFile is the project's MCP server file, in Claude Code's shape.
const MCPFile = ".mcp.json"

// mcpFile is the shape of .mcp.json.
type mcpFile struct {
	MCPServers map[string]MCPServer `json:"mcpServers"`
}

// mergeMCPFile reads <project>/.mcp.json with the same located errors as
// the config files. Its servers are kept apart: they apply only when the
// project is trusted.
func (c *Config) mergeMCPFile(read func(string) ([]byte, error), projectDir string) error {
	doc, err := readDocument(read, filepath.Join(projectDir, MCPFile), MCPFile, false)
	if err != nil || doc == nil || doc.Root == nil {
		return err
	}
	root := doc.Root
	var f mcpFile
	d := decoder{c: c, l: layer{kind: KindProjectFile, detail: MCPFile, data: doc.Data}}
	if err := d.merge(reflect.ValueOf(&f).Elem(), root, "", root.Off, false); err != nil {
		return err
	}
	var p problems
	c.validateServers(&p, "mcpServers", f.MCPServers)
	c.mcpFile = f.MCPServers
	return c.locate(p.join())
}

// checkExtensions checks what the Validate methods cannot, once every layer
// is in: an MCP server needs a command or a URL that fits its type.
func (c *Config) checkExtensions() error {
	check := func(prefix string, servers map[string]MCPServer) error {
		for _, name := range slices.Sorted(maps.Keys(servers)) {
			s := servers[name]
			path := joinPath(prefix, name)
			switch {
			case s.isHTTP() && s.URL == "":
				return sourceError(c.Source(path), path, fmt.Sprintf("type %q needs a url", s.Type))
			case !s.isHTTP() && s.Command == "":
				if s.URL != "" {
					return sourceError(c.Source(path), path, `has a url but no "type": "http"`)
				}
				return sourceError(c.Source(path), path, `needs a "command" (a stdio server) or "type": "http" and a "url"`)
			}
		}
		return nil
	}
	if err := check("mcp_servers", c.MCPServers); err != nil {
		return err
	}
	return check("mcpServers", c.mcpFile)
}

func (s MCPServer) isHTTP() bool {
	return s.Type == "http" || s.Type == "streamable-http" || s.Type == "sse"
}

// Transport is "stdio", "http" (streamable HTTP) or "sse".
func (s MCPServer) Transport() string {
	switch {
	case s.Type == "sse":
		return "sse"
	case s.isHTTP():
		return "http"
	}
	return "stdio"
}

// HookEntry is one matcher of a hook event with where it was set.
type HookEntry struct {
	Event   string
	Matcher HookMatcher
	Source  Source
}

// HookEntries lists every configured hook matcher: Polly's config files'
// (events in a fixed order, each event's entries in layer order, user
// file first), then Claude Code's settings files' (user, project, local).
func (c *Config) HookEntries() []HookEntry {
	var out []HookEntry
	for _, ev := range slices.Sorted(maps.Keys(c.Hooks)) {
		for i, m := range c.Hooks[ev] {
			out = append(out, HookEntry{Event: ev, Matcher: m, Source: c.Source(indexPath(joinPath("hooks", ev), i))})
		}
	}
	return append(out, c.claudeHooks...)
}

// MCPEntry is one configured MCP server with where it was set.
type MCPEntry struct {
	Name   string
	Server MCPServer
	Source Source
}

// MCPServerEntries lists the MCP servers of the config files and of the
// project's .mcp.json, sorted by name; a config-file entry wins over a
// .mcp.json entry of the same name.
func (c *Config) MCPServerEntries() []MCPEntry {
	byName := map[string]MCPEntry{}
	for name, s := range c.mcpFile {
		byName[name] = MCPEntry{Name: name, Server: s, Source: c.Source(joinPath("mcpServers", name))}
	}
	for name, s := range c.MCPServers { // after .mcp.json: the config file's entry wins
		byName[name] = MCPEntry{Name: name, Server: s, Source: c.Source(joinPath("mcp_servers", name))}
	}
	return slices.SortedFunc(maps.Values(byName), func(a, b MCPEntry) int { return strings.Compare(a.Name, b.Name) })
}

// extensionValues are the hooks and MCP servers as `polly config` shows
// them: one line per hook command and per server.
func (c *Config) extensionValues() []Value {
	var out []Value
	for _, e := range c.HookEntries() {
		key := fmt.Sprintf("hooks.%s[%q]", e.Event, e.Matcher.Matcher)
		for _, h := range e.Matcher.Hooks {
			out = append(out, Value{Key: key, Value: h.Command, Source: e.Source})
		}
	}
	for _, e := range c.MCPServerEntries() {
		what := e.Server.URL
		if e.Server.Transport() == "stdio" {
			what = strings.TrimSpace(e.Server.Command + " " + strings.Join(e.Server.Args, " "))
		}
		prefix := "mcp_servers."
		if e.Source.Detail == MCPFile {
			prefix = "mcpServers."
		}
		out = append(out, Value{Key: prefix + e.Name, Value: e.Server.Transport() + " " + what, Source: e.Source})
	}
	return out
}

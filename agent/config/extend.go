package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"polly/workspace/jsonfile"
)

// MCPFile is the project's MCP server file, in Claude Code's shape.
const MCPFile = ".mcp.json"

// mergeMCPFile reads <project>/.mcp.json. It is the user's ecosystem
// (Claude Code's file, shared with other tools), so it is read leniently:
// a field Polly does not know is warned about once and ignored, a "url"
// without a "type" is an http server, a server that does not fit is left
// out with a warning naming file and line, and a file that does not parse
// costs only its own servers. Its servers apply only when the project is
// trusted.
func (c *Config) mergeMCPFile(read func(string) ([]byte, error), projectDir string) {
	doc, err := readDocument(read, filepath.Join(projectDir, MCPFile), MCPFile, false)
	if err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("%v — its MCP servers are not started until it is fixed", err))
		return
	}
	if doc == nil || doc.Root == nil {
		return
	}
	for _, m := range doc.Root.Members {
		if m.Key != "mcpServers" {
			c.warnOnce(MCPFile, m.Key, c.at(doc, MCPFile, m.Off, "", fmt.Sprintf("unknown field %q ignored", m.Key)))
			continue
		}
		if m.Val.Kind != jsonfile.Object {
			c.warnOnce(MCPFile, m.Key, c.at(doc, MCPFile, m.Off, "mcpServers", "expected an object, got "+m.Val.Describe()+"; no servers used"))
			continue
		}
		for _, sm := range m.Val.Members {
			if s, ok := c.mcpFileServer(doc, sm); ok {
				if c.mcpFile == nil {
					c.mcpFile = map[string]MCPServer{}
				}
				c.mcpFile[sm.Key] = s
			}
		}
	}
}

// mcpFileServer reads one server of .mcp.json.
func (c *Config) mcpFileServer(doc *jsonfile.Document, sm jsonfile.Member) (MCPServer, bool) {
	var s MCPServer
	path := joinPath("mcpServers", sm.Key)
	skip := func(off int, field, msg string) (MCPServer, bool) {
		c.warnings = append(c.warnings, c.at(doc, MCPFile, off, field, msg+"; this server is not started"))
		return s, false
	}
	if sm.Val.Kind != jsonfile.Object {
		return skip(sm.Off, path, "expected an object, got "+sm.Val.Describe())
	}
	if msg := checkName(sm.Key); msg != "" {
		return skip(sm.Off, path, keyRule(msg))
	}
	for _, f := range sm.Val.Members {
		if f.Key == "disabled" && f.Val.Kind == jsonfile.Bool && f.Val.Bool {
			c.warnings = append(c.warnings, c.at(doc, MCPFile, f.Off, path, `"disabled": true; this server is not started`))
			return s, false
		}
	}
	scratch, err := c.decodeLenient(doc, sm.Val, path, MCPFile, KindProjectFile, "server.", &s)
	if err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("%v; this server is not started", err))
		return s, false
	}
	if s.Type == "" && s.URL != "" && s.Command == "" {
		s.Type = "http" // Claude Code's own files often leave it out
	}
	var p problems
	p.nest(path, s.Validate())
	if err := scratch.locate(p.join()); err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("%v; this server is not started", err))
		return s, false
	}
	if msg := s.needs(); msg != "" {
		return skip(sm.Off, path, msg)
	}
	for k, v := range scratch.sources {
		c.sources[k] = v // `polly config` shows where each value came from
	}
	return s, true
}

// needs says what a server lacks to be started ("" when nothing).
func (s MCPServer) needs() string {
	switch {
	case s.isHTTP() && s.URL == "":
		return fmt.Sprintf("type %q needs a url", s.Type)
	case !s.isHTTP() && s.Command == "":
		if s.URL != "" {
			return `has a url but no "type": "http"`
		}
		return `needs a "command" (a stdio server) or "type": "http" and a "url"`
	}
	return ""
}

// checkExtensions checks what the Validate methods cannot, once every layer
// is in: an MCP server of Polly's config needs a command or a URL that fits
// its type. (.mcp.json's servers were checked, leniently, as it was read.)
func (c *Config) checkExtensions() error {
	for _, name := range slices.Sorted(maps.Keys(c.MCPServers)) {
		path := joinPath("mcp_servers", name)
		if msg := c.MCPServers[name].needs(); msg != "" {
			return sourceError(c.Source(path), path, msg)
		}
	}
	return nil
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

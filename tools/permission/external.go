package permission

import (
	"fmt"
	"path"
	"strings"

	"polly/memory/store"
	"polly/tools"
)

// decideExternal judges a call of an MCP server's tool. Polly cannot know
// what it does, so it asks the first time in a session ("allow for this
// session" covers that tool) unless a rule decides: rules name the tool or
// a pattern of tools ("mcp__github__*"). yolo runs it.
func (p *Policy) decideExternal(tool string, a tools.Access) Decision {
	d := Decision{Kind: "external", Target: tool, Scope: store.ScopeMode, Key: "external\x00" + tool, Covers: "calls of " + tool}
	every := func(compiledRule) bool { return true }
	if rd, ok := p.denyOrAsk(d, tool, every); ok {
		return rd
	}
	if ad, ok := p.allowOrYolo(d, tool, every, "MCP tools run without asking in mode yolo"); ok {
		return ad
	}
	d.Verdict, d.Reason = Asks, "calls "+tool+", a tool of an MCP server (asked once per session)"
	server := tool
	if parts := strings.SplitN(tool, "__", 3); len(parts) == 3 {
		server = parts[0] + "__" + parts[1] + "__*"
	}
	d.hint = fmt.Sprintf("add %q (or %q) to permissions.allow in the config", tool, server)
	return d
}

// toolMatches: a rule's tool is a name or, with "*", a pattern of names.
func toolMatches(ruleTool, tool string) bool {
	if ruleTool == tool {
		return true
	}
	// "mcp__memory" names a whole server, as in Claude Code: every one of
	// its tools (mcp__memory__*).
	if server, ok := strings.CutPrefix(ruleTool, "mcp__"); ok && server != "" && !strings.Contains(server, "__") &&
		strings.HasPrefix(tool, ruleTool+"__") {
		return true
	}
	if !strings.Contains(ruleTool, "*") {
		return false
	}
	ok, _ := path.Match(ruleTool, tool)
	return ok
}

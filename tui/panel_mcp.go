package tui

import (
	"fmt"
	"strings"

	"polly/tools/mcp"
)

// mcpLines is the /mcp panel: each MCP server with its state, its tools
// and its last error. It reads the live state on every frame, so a server
// that finishes starting shows up without reopening.
func (m *Model) mcpLines(w int) []string {
	th := m.th
	out := []string{m.panelTitle("MCP servers", "↑↓ pgup/pgdn scroll · esc close", w)}
	st := m.app.MCP.Status()
	if len(st) == 0 {
		return append(out, "", th.dim.Render("  no MCP servers configured: add them to .mcp.json (trusted projects) or \"mcp_servers\" in the config"))
	}
	for _, s := range st {
		style := th.dim
		switch s.State {
		case mcp.Ready:
			style = th.ok
		case mcp.Failed:
			style = th.bad
		case mcp.Starting, mcp.Restarting:
			style = th.warn
		}
		head := fmt.Sprintf("%s  %s  (%s, %s)", s.Name, style.Render(string(s.State)), s.Transport, s.Source)
		if s.Restarts > 0 {
			head += fmt.Sprintf(", restarted %d×", s.Restarts)
		}
		out = append(out, "", clip(th.accent.Render(s.Name)+strings.TrimPrefix(head, s.Name), w))
		if len(s.Tools) > 0 {
			out = append(out, prefixed(plainLines(strings.Join(s.Tools, ", "), max(1, w-4)), "    ")...)
		}
		for _, k := range s.Skipped {
			out = append(out, prefixed(plainLines("left out: "+k, max(1, w-4)), "    ", th.warn)...)
		}
		if s.Err != "" {
			out = append(out, prefixed(plainLines("last error: "+s.Err, max(1, w-4)), "    ", th.bad)...)
		}
	}
	return out
}

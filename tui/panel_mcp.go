package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"polly/tools/mcp"
)

// mcpPanel is the /mcp panel: each MCP server with its state, its tools
// and its last error. It re-reads the state while open, so a server that
// finishes starting shows up without reopening.
type mcpPanel struct {
	look
	text   textPanel
	seq    int
	status func() []mcp.Status
	st     []mcp.Status
	done   bool
}

type mcpStatusMsg struct {
	seq int
	st  []mcp.Status
}

const mcpPollEvery = 500 * time.Millisecond

func newMCPPanel(lk look, seq int, status func() []mcp.Status) *mcpPanel {
	return &mcpPanel{look: lk, text: textPanel{keys: newPagerKeys()}, seq: seq, status: status}
}

func (p *mcpPanel) SetSize(w, h int)          { p.text.w, p.text.h = w, h }
func (p *mcpPanel) ShortHelp() []key.Binding  { return p.text.ShortHelp() }
func (p *mcpPanel) FullHelp() [][]key.Binding { return p.text.FullHelp() }

// Init reads the servers' state now; each reading schedules the next.
func (p *mcpPanel) Init() tea.Cmd {
	seq, status := p.seq, p.status
	return func() tea.Msg { return mcpStatusMsg{seq: seq, st: status()} }
}

func (p *mcpPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	switch msg := msg.(type) {
	case lookMsg:
		p.look = msg.look
	case mcpStatusMsg:
		if msg.seq != p.seq {
			return p, nil // an older opening: stop its polling
		}
		p.st, p.done = msg.st, true
		return p, tea.Tick(mcpPollEvery, func(time.Time) tea.Msg { return p.Init()() })
	}
	if !p.text.update(msg) {
		return nil, nil
	}
	return p, nil
}

func (p *mcpPanel) View() string { return p.text.view(p.lines(p.text.w)) }

func (p *mcpPanel) lines(w int) []string {
	th := p.th
	out := []string{panelTitle(th, "MCP servers", p, w)}
	if !p.done {
		return append(out, "", th.dim.Render("  loading…"))
	}
	if len(p.st) == 0 {
		return append(out, "", th.dim.Render("  no MCP servers configured: add them to .mcp.json (trusted projects) or \"mcp_servers\" in the config"))
	}
	for _, s := range p.st {
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

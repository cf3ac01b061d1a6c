package tui

import (
	"charm.land/bubbles/v2/viewport"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// panelKind is the full-screen view replacing the chat; noPanel shows it.
type panelKind int

const (
	noPanel panelKind = iota
	pHelp
	pMemory
	pTask
	pTeam
	pOutputs
	pSessions
	pRewind
	pModels
	pMCP
)

// panelHotkey opens (or, pressed again, closes) a panel from anywhere.
func (m *Model) panelHotkey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	for _, x := range []struct {
		b key.Binding
		p panelKind
	}{{m.keys.Help, pHelp}, {m.keys.Memory, pMemory}, {m.keys.Task, pTask}, {m.keys.Team, pTeam}, {m.keys.Outputs, pOutputs}, {m.keys.Sessions, pSessions}} {
		if key.Matches(msg, x.b) {
			if m.panel == x.p {
				m.closePanel()
				return nil, true
			}
			return m.openPanel(x.p), true
		}
	}
	return nil, false
}

// openPanel shows a panel and starts loading what it lists. Each opening
// gets a new sequence number; results and ticks of an older one are dropped.
func (m *Model) openPanel(p panelKind) tea.Cmd {
	m.closePanel()
	m.panel = p
	m.seq++
	m.infoScroll = 0
	switch p {
	case pMemory:
		m.mem = memoryPanel{seq: m.seq}
		m.resizePanels()
		return tea.Batch(m.mem.list(m), m.mem.tick())
	case pOutputs:
		m.outs = outputsPanel{seq: m.seq, hl: m.th.selected.Bold(true).Underline(true)}
		m.resizePanels()
		return m.outs.list(m)
	case pSessions:
		m.sessP = sessionsPanel{seq: m.seq}
		return m.sessP.list(m)
	case pRewind:
		m.rewP = rewindPanel{seq: m.seq}
		return m.rewP.list(m)
	case pTask:
		return m.fetchStatus(m.current())
	case pTeam:
		m.teamP.open = nil
	case pModels:
		m.modelsP.open(m)
	}
	return nil
}

func (m *Model) closePanel() {
	m.panel = noPanel
	m.seq++ // stops the memory panel's polling
}

// panelKey handles keys while a panel is open.
func (m *Model) panelKey(msg tea.KeyPressMsg) tea.Cmd {
	switch m.panel {
	case pMemory:
		return m.mem.key(m, msg)
	case pOutputs:
		return m.outs.key(m, msg)
	case pSessions:
		return m.sessP.key(m, msg)
	case pRewind:
		return m.rewP.key(m, msg)
	case pTeam:
		return m.teamP.key(m, msg)
	case pModels:
		return m.modelsP.key(m, msg)
	}
	switch msg.String() {
	case "esc", "q":
		m.closePanel()
	case "up", "k":
		m.infoScroll = max(0, m.infoScroll-1)
	case "down", "j":
		m.infoScroll++
	case "pgup":
		m.infoScroll = max(0, m.infoScroll-(m.h-4))
	case "pgdown", "space":
		m.infoScroll += m.h - 4
	}
	return nil
}

func (m *Model) panelScroll(up bool, n int) {
	switch m.panel {
	case pMemory:
		if up {
			m.mem.vp.ScrollUp(n)
		} else {
			m.mem.vp.ScrollDown(n)
		}
	case pOutputs:
		if up {
			m.outs.vp.ScrollUp(n)
		} else {
			m.outs.vp.ScrollDown(n)
		}
	case pTeam:
		if r := m.teamP.open; r != nil {
			h := m.h - 4
			if up {
				r.tr.scrollUp(m.r, m.w, h, n)
			} else {
				r.tr.scrollDown(m.r, m.w, h, n)
			}
		}
	case pHelp, pTask, pMCP:
		if up {
			m.infoScroll = max(0, m.infoScroll-n)
		} else {
			m.infoScroll += n
		}
	}
}

// panelMsg routes the results of panel Cmds.
func (m *Model) panelMsg(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case memListMsg, memLoadMsg, memTickMsg, memStatMsg, memEditedMsg:
		if m.panel != pMemory {
			return nil, true
		}
		return m.mem.update(m, msg), true
	case outListMsg, outShowMsg:
		if m.panel != pOutputs {
			return nil, true
		}
		return m.outs.update(msg), true
	case sessListMsg:
		if m.panel == pSessions {
			m.sessP.update(msg)
		}
		return nil, true
	case rewindListMsg:
		if m.panel == pRewind {
			m.rewP.update(msg)
		}
		return nil, true
	case undoDoneMsg:
		return m.undoDone(msg), true
	}
	return nil, false
}

// resizePanels sizes the panels' viewports.
func (m *Model) resizePanels() {
	lw := m.mem.listWidth(m.w)
	m.mem.vp.SetWidth(max(1, m.w-lw-1))
	m.mem.vp.SetHeight(max(1, m.h-3))
	m.outs.vp.SetWidth(m.w)
	m.outs.vp.SetHeight(max(1, m.h-3))
}

// panelResized re-renders what depends on the width or the theme.
func (m *Model) panelResized() tea.Cmd {
	if m.panel == pMemory && m.mem.path != "" {
		return m.mem.load(m, m.mem.path)
	}
	return nil
}

// panelLines draws the open panel in w×h.
func (m *Model) panelLines(w, h int) []string {
	switch m.panel {
	case pHelp:
		return m.scrolled(m.helpLines(w), h)
	case pTask:
		return m.scrolled(m.taskLines(w), h)
	case pMCP:
		return m.scrolled(m.mcpLines(w), h)
	case pMemory:
		return m.mem.view(m, w, h)
	case pOutputs:
		return m.outs.view(m, w, h)
	case pSessions:
		return m.sessP.view(m, w, h)
	case pRewind:
		return m.rewP.view(m, w, h)
	case pTeam:
		return m.teamP.view(m, w, h)
	case pModels:
		return m.modelsP.view(m, w, h)
	}
	return nil
}

// scrolled shows a title line and the body from infoScroll.
func (m *Model) scrolled(ls []string, h int) []string {
	if len(ls) == 0 {
		return nil
	}
	title, body := ls[0], ls[1:]
	maxScroll := max(0, len(body)-(h-1))
	m.infoScroll = min(m.infoScroll, maxScroll)
	body = body[m.infoScroll:]
	return append([]string{title}, body...)
}

// panelTitle is a panel's first line: its name and its keys.
func (m *Model) panelTitle(name, keys string, w int) string {
	return clip(m.th.title.Render(" "+name+" ")+m.th.dim.Render(" "+keys), w)
}

// list draws rows with the selected one highlighted, scrolled to keep it
// visible in h lines.
func (m *Model) list(rows []string, sel, w, h int) []string {
	if h <= 0 {
		return nil
	}
	start := 0
	if sel >= h {
		start = sel - h + 1
	}
	var out []string
	for i := start; i < len(rows) && len(out) < h; i++ {
		r := clip(rows[i], w)
		if i == sel {
			r = m.th.selected.Render(r + strings.Repeat(" ", max(0, w-widthOf(r))))
		}
		out = append(out, r)
	}
	return out
}

// pageViewport applies the paging keys every document panel shares.
func pageViewport(vp *viewport.Model, key string) {
	switch key {
	case "pgup":
		vp.PageUp()
	case "pgdown", "space":
		vp.PageDown()
	case "home", "g":
		vp.GotoTop()
	case "end", "G":
		vp.GotoBottom()
	}
}

// moveSelection is a list panel's ↑/k and ↓/j: the row selected after key
// among n rows.
func moveSelection(sel, n int, key string) int {
	if key == "up" || key == "k" {
		return max(0, sel-1)
	}
	return min(n-1, sel+1)
}

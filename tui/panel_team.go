package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// teamPanel lists the sub-agents; Enter opens one's live transcript. The
// team is the root's live record of the runs (events update it).
type teamPanel struct {
	look
	keys teamKeys
	team *team
	now  func() time.Time
	sel  int
	open *subRow
	w, h int
}

type teamKeys struct {
	listKeys
	Open   key.Binding
	pager  pagerKeys
	Expand key.Binding
}

func newTeamKeys() teamKeys {
	k := teamKeys{listKeys: newListKeys(), Open: bind("enter", "open its transcript", "enter"), pager: newPagerKeys(),
		Expand: bind("ctrl+x", "expand tool", "ctrl+x")}
	k.pager.Close = bind("esc", "back", "esc")
	return k
}

func (k teamKeys) ShortHelp() []key.Binding { return []key.Binding{k.Choose, k.Open, k.Close} }
func (k teamKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.ShortHelp(), {k.pager.Scroll, k.pager.Page, k.pager.Ends, k.Expand, k.pager.Close}}
}

func (k teamKeys) groupTitles() []string { return []string{"", "a sub-agent's transcript"} }

func newTeamPanel(lk look, t *team, now func() time.Time) *teamPanel {
	return &teamPanel{look: lk, keys: newTeamKeys(), team: t, now: now}
}

func (p *teamPanel) Init() tea.Cmd             { return nil }
func (p *teamPanel) SetSize(w, h int)          { p.w, p.h = w, h }
func (p *teamPanel) FullHelp() [][]key.Binding { return p.keys.FullHelp() }
func (p *teamPanel) ShortHelp() []key.Binding {
	if p.open != nil {
		k := p.keys
		return []key.Binding{k.pager.Page, k.Expand, k.pager.Close}
	}
	return p.keys.ShortHelp()
}

func (p *teamPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	switch msg := msg.(type) {
	case lookMsg:
		p.look = msg.look
	case tea.MouseWheelMsg:
		if k, ok := wheelKey(msg); ok && p.open != nil {
			p.scroll(k == "up", 3)
		}
	case tea.KeyPressMsg:
		return p.key(msg)
	}
	return p, nil
}

// scroll moves the open transcript (drawn h-2 lines high).
func (p *teamPanel) scroll(up bool, n int) {
	tr, h := p.open.tr, p.h-2
	if up {
		tr.scrollUp(p.r, p.w, h, n)
	} else {
		tr.scrollDown(p.r, p.w, h, n)
	}
}

func (p *teamPanel) key(msg tea.KeyPressMsg) (panel, tea.Cmd) {
	k := msg.String()
	if r := p.open; r != nil {
		switch {
		case key.Matches(msg, p.keys.pager.Close):
			p.open = nil
		case key.Matches(msg, p.keys.pager.Page):
			p.scroll(k == "pgup", max(1, p.h-4))
		case key.Matches(msg, p.keys.pager.Scroll):
			p.scroll(k == "up", 1)
		case key.Matches(msg, p.keys.pager.Ends):
			if k == "home" {
				r.tr.toTop()
			} else {
				r.tr.toEnd()
			}
		case key.Matches(msg, p.keys.Expand):
			r.tr.toggle()
		}
		return p, nil
	}
	rows := p.team.rows
	switch {
	case key.Matches(msg, p.keys.Close):
		return nil, nil
	case key.Matches(msg, p.keys.Choose):
		p.sel = moveSelection(p.sel, len(rows), k)
	case key.Matches(msg, p.keys.Open):
		if p.sel >= 0 && p.sel < len(rows) {
			p.open = rows[p.sel]
			p.open.tr.toEnd()
		}
	}
	return p, nil
}

func (p *teamPanel) View() string {
	th, w, h := p.th, p.w, p.h
	if r := p.open; r != nil {
		out := []string{panelTitle(th, "Team › "+r.personaName(), p, w)}
		out = append(out, p.r.subLines(r, w)...)
		return joinLines(append(out, r.tr.view(p.r, w, h-len(out))...))
	}
	out := []string{panelTitle(th, "Team", p, w)}
	if len(p.team.rows) == 0 {
		return joinLines(append(out, th.dim.Render(clip("  no sub-agents in this session yet: Polly starts them with delegate_task", w))))
	}
	out = append(out, th.dim.Render(clip(fmt.Sprintf(" %-10s %-10s %-10s %-28s %-24s %7s %5s %7s %8s", "PERSONA", "MODEL", "STATUS", "TASK", "NOW", "ELAPSED", "TOOLS", "TOKENS", "COST"), w)))
	now := p.now()
	rows := make([]string, len(p.team.rows))
	for i, r := range p.team.rows {
		cur := ""
		if r.running() {
			cur = strings.TrimSpace(r.tool + " " + r.brief)
			if cur == "" {
				cur = "thinking"
			}
		}
		cost := "-"
		if r.cost > 0 {
			cost = fmt.Sprintf("$%.4f", r.cost)
		}
		rows[i] = fmt.Sprintf(" %-10s %-10s %-10s %-28s %-24s %7s %5d %7s %8s", clip(r.personaName(), 10), clip(r.model, 10), r.status,
			clip(oneLine(r.task), 28), clip(cur, 24), fmtDur(r.elapsedAt(now).Truncate(1e8)), r.toolCalls,
			fmtCount(r.usage.PromptTokens+r.usage.CompletionTokens), cost)
	}
	return joinLines(append(out, listRows(th, rows, p.sel, w, h-len(out))...))
}

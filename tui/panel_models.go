package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/agent/app"
)

// modelsPanel is the /model picker: every model Polly knows (configured,
// built-in for official endpoints, discovered from the providers), with
// window, price and provider, filtered as the user types. Enter gives the
// current persona that model (on Polly's tab: the default model).
type modelsPanel struct {
	rows    []app.ModelRow
	filter  string
	sel     int
	current string // the current persona's model, as "provider/name"
}

func (p *modelsPanel) open(m *Model) {
	*p = modelsPanel{rows: m.app.ModelRows()}
	if info, err := m.app.PersonaModel(m.current().p.ID); err == nil {
		p.current = info.Provider + "/" + info.Name
	}
	for i, r := range p.rows {
		if r.Ref == p.current {
			p.sel = i
		}
	}
}

// visible are the rows whose reference holds every word of the filter.
func (p *modelsPanel) visible() []app.ModelRow {
	words := strings.Fields(strings.ToLower(p.filter))
	if len(words) == 0 {
		return p.rows
	}
	var out []app.ModelRow
	for _, r := range p.rows {
		ref := strings.ToLower(r.Ref)
		match := true
		for _, w := range words {
			match = match && strings.Contains(ref, w)
		}
		if match {
			out = append(out, r)
		}
	}
	return out
}

func (p *modelsPanel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	vis := p.visible()
	switch msg.String() {
	case "esc":
		m.closePanel()
	case "up":
		p.sel = max(0, p.sel-1)
	case "down":
		p.sel = min(len(vis)-1, p.sel+1)
	case "enter":
		if p.sel >= 0 && p.sel < len(vis) {
			m.closePanel()
			return m.setModel(vis[p.sel].Ref)
		}
	case "backspace":
		if r := []rune(p.filter); len(r) > 0 {
			p.filter = string(r[:len(r)-1])
			p.sel = 0
		}
	default:
		if t := msg.Text; t != "" {
			p.filter += t
			p.sel = 0
		}
	}
	return nil
}

func (p *modelsPanel) view(m *Model, w, h int) []string {
	out := []string{m.panelTitle("Models · "+m.current().p.Name, "type to filter · ↑↓ choose · enter switch · esc close", w)}
	out = append(out, clip(" filter: "+p.filter+"▏", w))
	vis := p.visible()
	if len(vis) == 0 {
		if len(p.rows) == 0 {
			return append(out, m.th.dim.Render(clip("  no models known: configure providers.NAME.models, or wait for the providers' model lists", w)))
		}
		return append(out, m.th.dim.Render(clip("  no model matches "+p.filter, w)))
	}
	out = append(out, m.th.dim.Render(clip(fmt.Sprintf("  %-40s %-22s %-16s %s", "MODEL", "WINDOW", "PRICE IN/OUT 1M", "PROVIDER"), w)))
	rows := make([]string, len(vis))
	for i, r := range vis {
		mark := " "
		if r.Ref == p.current {
			mark = "*"
		}
		rows[i] = fmt.Sprintf("%s %-40s %-22s %-16s %s", mark, clip(r.Ref, 40), app.WindowText(r.Info), app.PriceText(r.Info), r.Info.Provider)
	}
	return append(out, m.list(rows, min(p.sel, len(vis)-1), w, h-len(out))...)
}

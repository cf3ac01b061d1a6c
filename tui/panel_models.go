package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"polly/agent/app"
)

// modelsPanel is the /model picker: every model Polly knows (configured,
// built-in for official endpoints, discovered from the providers), with
// window, price and provider, filtered as the user types. Enter gives the
// current persona that model (on Polly's tab: the default model).
type modelsPanel struct {
	look
	keys    modelsKeys
	seq     int
	load    func() modelRows
	persona string // the current persona's name
	rows    []app.ModelRow
	current string // the current persona's model, as "provider/name"
	done    bool
	filter  string
	sel     int
	w, h    int
}

// modelRows is what the picker lists.
type modelRows struct {
	seq     int
	rows    []app.ModelRow
	current string
}

type modelsKeys struct {
	Choose, Switch, Erase, Close key.Binding // printable keys type the filter
}

func newModelsKeys() modelsKeys {
	return modelsKeys{
		Choose: bind("↑↓", "choose", "up", "down"),
		Switch: bind("enter", "switch", "enter"),
		Erase:  bind("backspace", "erase the filter", "backspace"),
		Close:  bind("esc", "close", "esc"),
	}
}

func (k modelsKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Choose, k.Switch, k.Close}
}
func (k modelsKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Erase, k.Choose, k.Switch, k.Close}}
}

// modelRows reads the catalogue and the persona's model (in the picker's
// Cmd).
func (m *Model) modelRows() func() modelRows {
	a, id := m.app, m.current().p.ID
	return func() modelRows {
		out := modelRows{rows: chatRows(a.ModelRows())}
		if info, err := a.PersonaModel(id); err == nil {
			out.current = info.Provider + "/" + info.Name
		}
		return out
	}
}

// chatRows leaves out the models that only embed: they cannot chat.
func chatRows(rows []app.ModelRow) []app.ModelRow {
	var out []app.ModelRow
	for _, r := range rows {
		if !r.Embedding {
			out = append(out, r)
		}
	}
	return out
}

func newModelsPanel(lk look, seq int, load func() modelRows, persona string) *modelsPanel {
	return &modelsPanel{look: lk, keys: newModelsKeys(), seq: seq, load: load, persona: persona}
}

func (p *modelsPanel) ShortHelp() []key.Binding  { return p.keys.ShortHelp() }
func (p *modelsPanel) FullHelp() [][]key.Binding { return p.keys.FullHelp() }
func (p *modelsPanel) SetSize(w, h int)          { p.w, p.h = w, h }

func (p *modelsPanel) Init() tea.Cmd {
	seq, load := p.seq, p.load
	return func() tea.Msg {
		r := load()
		r.seq = seq
		return r
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

func (p *modelsPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	switch msg := msg.(type) {
	case lookMsg:
		p.look = msg.look
	case modelRows:
		if msg.seq != p.seq {
			return p, nil
		}
		p.rows, p.current, p.done = msg.rows, msg.current, true
		for i, r := range p.rows {
			if r.Ref == p.current {
				p.sel = i
			}
		}
	case tea.PasteMsg:
		p.filter += msg.Content
		p.sel = 0
	case tea.MouseWheelMsg:
		if k, ok := wheelKey(msg); ok {
			p.sel = max(0, min(len(p.visible())-1, moveSelection(p.sel, len(p.visible()), k)))
		}
	case tea.KeyPressMsg:
		vis := p.visible()
		switch {
		case key.Matches(msg, p.keys.Close):
			return nil, nil
		case key.Matches(msg, p.keys.Choose):
			p.sel = max(0, moveSelection(p.sel, len(vis), msg.String()))
		case key.Matches(msg, p.keys.Switch):
			if p.sel >= 0 && p.sel < len(vis) {
				return nil, msgCmd(setModelMsg{ref: vis[p.sel].Ref})
			}
		case key.Matches(msg, p.keys.Erase):
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
	}
	return p, nil
}

func (p *modelsPanel) View() string {
	th, w := p.th, p.w
	out := []string{panelTitle(th, "Models · "+p.persona, p, w)}
	out = append(out, clip(" type to filter: "+p.filter+"▏", w))
	vis := p.visible()
	if len(vis) == 0 {
		switch {
		case !p.done:
			return joinLines(append(out, th.dim.Render("  loading…")))
		case len(p.rows) == 0:
			return joinLines(append(out, th.dim.Render(clip("  no models known: configure providers.NAME.models, or wait for the providers' model lists", w))))
		}
		return joinLines(append(out, th.dim.Render(clip("  no model matches "+p.filter, w))))
	}
	out = append(out, th.dim.Render(clip(fmt.Sprintf("  %-40s %-22s %-16s %s", "MODEL (* the one in use)", "WINDOW", "PRICE IN/OUT 1M", "PROVIDER"), w)))
	rows := make([]string, len(vis))
	for i, r := range vis {
		mark := " "
		if r.Ref == p.current {
			mark = "*"
		}
		rows[i] = fmt.Sprintf("%s %-40s %-22s %-16s %s", mark, clip(r.Ref, 40), app.WindowText(r.Info), app.PriceText(r.Info), r.Info.Provider)
	}
	return joinLines(append(out, listRows(th, rows, min(p.sel, len(vis)-1), w, p.h-len(out))...))
}

// capturing: typed text filters the list.
func (p *modelsPanel) capturing() bool { return true }

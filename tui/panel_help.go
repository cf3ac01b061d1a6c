package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"polly/workspace/commands"
)

// helpPanel lists every key (the main screen's, each panel's and the
// permission dialog's, all read from their key maps) and every command.
type helpPanel struct {
	look
	text   textPanel
	keys   keyMap
	custom []commands.Command // the user's custom slash commands
}

func newHelpPanel(lk look, keys keyMap, custom []commands.Command) *helpPanel {
	return &helpPanel{look: lk, text: textPanel{keys: newPagerKeys()}, keys: keys, custom: custom}
}

func (p *helpPanel) Init() tea.Cmd             { return nil }
func (p *helpPanel) SetSize(w, h int)          { p.text.w, p.text.h = w, h }
func (p *helpPanel) ShortHelp() []key.Binding  { return p.text.ShortHelp() }
func (p *helpPanel) FullHelp() [][]key.Binding { return p.text.FullHelp() }

func (p *helpPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	if lm, ok := msg.(lookMsg); ok {
		p.look = lm.look
	}
	if !p.text.update(msg) {
		return nil, nil
	}
	return p, nil
}

func (p *helpPanel) View() string { return p.text.view(p.lines(p.text.w)) }

// componentKeys are the key maps of the panels and the dialog, with the
// title of their help section.
func componentKeys() []struct {
	title string
	keys  help.KeyMap
} {
	return []struct {
		title string
		keys  help.KeyMap
	}{
		{"Memory panel (F2)", newMemoryKeys()},
		{"Task panel (F3), help and /mcp", &textPanel{keys: newPagerKeys()}},
		{"Team panel (F4)", newTeamKeys()},
		{"Tool outputs (F5)", newOutputsKeys()},
		{"Sessions (F6)", newSessionsKeys()},
		{"Rewind (/rewind)", newRewindKeys()},
		{"Model picker (/model; type to filter)", newModelsKeys()},
		{"Permission dialog", newDialogKeys()},
	}
}

func (p *helpPanel) lines(w int) []string {
	th := p.th
	out := []string{panelTitle(th, "Help", p, w)}
	row := func(k, desc string) string {
		return clip(fmt.Sprintf("  %s %s", th.key.Render(fmt.Sprintf("%-22s", k)), desc), w)
	}
	section := func(title string, groups [][]key.Binding, names []string) {
		out = append(out, "", th.accent.Render(title))
		seen := map[string]bool{}
		for i, g := range groups {
			if i < len(names) && names[i] != "" {
				out = append(out, th.dim.Render("  "+names[i]+":"))
			}
			for _, b := range g {
				h := b.Help()
				if seen[h.Key+"\x00"+h.Desc] {
					continue
				}
				seen[h.Key+"\x00"+h.Desc] = true
				out = append(out, row(h.Key, h.Desc))
			}
		}
	}
	for _, g := range p.keys.groups() {
		section(g.title, [][]key.Binding{g.keys}, nil)
	}
	out = append(out, "", th.accent.Render("Commands (type / to complete, tab completes)"))
	for _, c := range slashCommands {
		name := c.name
		if c.args != "" {
			name += " " + c.args
		}
		out = append(out, row(name, c.help))
	}
	if custom := p.custom; len(custom) > 0 {
		out = append(out, "", th.accent.Render("Your commands (Markdown files: .claude/commands, .agents/commands, .opencode/command…)"))
		for _, c := range custom {
			name := "/" + c.Name
			if c.ArgumentHint != "" {
				name += " " + c.ArgumentHint
			}
			out = append(out, row(name, strings.TrimSpace(c.Description+" ("+c.Source+")")))
		}
	}
	for _, c := range componentKeys() {
		var names []string
		if n, ok := c.keys.(interface{ groupTitles() []string }); ok {
			names = n.groupTitles()
		}
		section(c.title, c.keys.FullHelp(), names)
	}
	return out
}

package tui

import (
	"fmt"
	"polly/agent/termsafe"
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/agent/config"
)

// trustDialog asks, before anything else opens, whether to trust a
// project whose .agent/config.json sets what needs trust (providers,
// mode, allow rules…). It is its own small program: until it is answered
// nothing is wired, so no setting from the file has an effect yet.
type trustDialog struct {
	pt      config.ProjectTrust
	th      theme
	w       int
	trusted bool
	quit    bool // ctrl+c: leave Polly
}

func newTrustDialog(pt config.ProjectTrust, noColor bool) *trustDialog {
	return &trustDialog{pt: pt, th: newTheme(true, noColor), w: 80}
}

func (d *trustDialog) Init() tea.Cmd { return nil }

func (d *trustDialog) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		d.w = msg.Width
	case tea.KeyPressMsg:
		switch msg.String() {
		case "t", "T":
			d.trusted = true
			return d, tea.Quit
		case "n", "N", "esc", "enter":
			return d, tea.Quit // enter keeps the safe answer
		case "ctrl+c":
			d.quit = true
			return d, tea.Quit
		}
	}
	return d, nil
}

func (d *trustDialog) View() tea.View {
	return tea.NewView(termsafe.Text(d.render())) // the project's files name what is shown
}

func (d *trustDialog) render() string {
	th := d.th
	w := max(40, min(d.w, 110))
	inner := w - 4
	lines := []string{
		th.title.Render("Trust this project?"),
		clip(d.pt.Dir, inner),
		"",
		"Its .agent/config.json sets what decides where your API key goes, what runs without asking, or what Polly starts:",
		"",
	}
	for _, k := range d.pt.Keys {
		lines = append(lines, "  "+th.accent.Render(k.Path)+" = "+k.Value, th.dim.Render("      "+k.Source.String()))
	}
	lines = append(lines, "",
		"Trust it only if you wrote these settings or checked them. Not trusted, they are ignored and Polly starts with your own settings.",
		"", th.key.Render("t")+" trust   "+th.key.Render("n")+" / "+th.key.Render("esc")+" don't trust   "+th.key.Render("ctrl+c")+" quit")
	return th.box.Width(w).Render(strings.Join(lines, "\n"))
}

// askTrust shows the dialog and returns the answer; quit is set when the
// user chose to leave instead.
// It runs on the same terminal options as the TUI.
func askTrust(pt config.ProjectTrust, noColor bool, term []tea.ProgramOption) (trusted, quit bool, err error) {
	d := newTrustDialog(pt, noColor)
	if _, err := tea.NewProgram(d, term...).Run(); err != nil {
		return false, false, fmt.Errorf("trust dialog: %w", err)
	}
	return d.trusted, d.quit, nil
}

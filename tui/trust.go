package tui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"polly/agent/config"
	"polly/agent/termsafe"
)

// trustDialog asks, before anything else opens, whether to trust a
// project whose .agent/config.json sets what needs trust (providers,
// mode, allow rules…). It is its own small program: until it is answered
// nothing is wired, so no setting from the file has an effect yet.
type trustDialog struct {
	pt      config.ProjectTrust
	th      theme
	w, h    int
	top     int // first body line shown when the body is taller than the screen
	trusted bool
	quit    bool // ctrl+c: leave Polly
}

func newTrustDialog(pt config.ProjectTrust, noColor bool) *trustDialog {
	return &trustDialog{pt: pt, th: newTheme(true, noColor), w: 80, h: 40}
}

func (d *trustDialog) Init() tea.Cmd { return nil }

func (d *trustDialog) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		d.w, d.h = msg.Width, msg.Height
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
		case "down", "j":
			d.top++
		case "up", "k":
			d.top--
		case "pgdown", "space":
			d.top += d.visible()
		case "pgup":
			d.top -= d.visible()
		case "home", "g":
			d.top = 0
		case "end", "G":
			d.top = len(d.body())
		}
	}
	return d, nil
}

func (d *trustDialog) View() tea.View {
	return tea.NewView(termsafe.Text(d.render())) // the project's files name what is shown
}

// width is the box's; inner the text's inside it.
func (d *trustDialog) width() (w, inner int) {
	w = max(40, min(d.w, 120))
	return w, w - 4
}

// rows is how many body lines fit between the fixed head and foot.
func (d *trustDialog) rows() int {
	return max(3, d.h-len(d.head())-len(d.foot())-2) // 2: the box's borders
}

// visible is how many body lines one screen shows: all rows, or all but
// the one that says the body scrolls.
func (d *trustDialog) visible() int {
	if len(d.body()) > d.rows() {
		return d.rows() - 1
	}
	return d.rows()
}

// wrapped wraps each line to the box and returns the screen lines.
func (d *trustDialog) wrapped(lines ...string) []string {
	_, inner := d.width()
	var out []string
	for _, l := range lines {
		out = append(out, strings.Split(ansi.Wrap(l, inner, " ,/"), "\n")...)
	}
	return out
}

func (d *trustDialog) head() []string {
	return d.wrapped(d.th.title.Render("Trust this project?"), d.pt.Dir, "")
}

func (d *trustDialog) foot() []string {
	th := d.th
	return d.wrapped("",
		"Trust it only if you wrote these settings or checked them. Not trusted, they are ignored and Polly starts with your own settings.",
		"", th.key.Render("t")+" trust   "+th.key.Render("n")+" / "+th.key.Render("esc")+" don't trust   "+
			th.key.Render("↑/↓ pgup/pgdn")+" scroll   "+th.key.Render("ctrl+c")+" quit")
}

// body is everything trust grants, wrapped to the box: every setting with
// every field whole (credentials masked) and the project files they run.
// Nothing is cut; what does not fit scrolls.
func (d *trustDialog) body() []string {
	th := d.th
	_, inner := d.width()
	var lines []string
	add := func(indent int, s string) { // wrapped below the indent
		pad := strings.Repeat(" ", indent)
		for _, l := range strings.Split(ansi.Wrap(s, inner-indent, " ,/"), "\n") {
			lines = append(lines, pad+l)
		}
	}
	add(0, "Its .agent/config.json sets what decides where your API key goes, what runs without asking, what Polly starts, or which model and limits it uses:")
	lines = append(lines, "")
	for _, k := range d.pt.Keys {
		if len(k.Fields) == 0 {
			add(2, th.accent.Render(k.Path)+" = "+k.Value)
		} else {
			add(2, th.accent.Render(k.Path))
			for _, f := range k.Fields {
				add(4, f.Path+" = "+f.Value)
			}
		}
		add(6, th.dim.Render(k.Source.String()))
	}
	if len(d.pt.Files) > 0 {
		lines = append(lines, "")
		add(0, "These settings run project files; their content is trusted too, and an edit asks again:")
		for _, f := range d.pt.Files {
			line := "  " + th.accent.Render(f.Path) + "  sha256:" + f.Hash[:12]
			if f.Changed {
				line += "  " + th.title.Render("changed since you trusted it")
			}
			add(2, line)
		}
	}
	return lines
}

func (d *trustDialog) render() string {
	w, _ := d.width()
	body := d.body()
	n := d.visible()
	d.top = max(0, min(d.top, len(body)-n))
	shown := body
	if len(body) > n {
		shown = append(slices.Clone(body[d.top:d.top+n]),
			d.th.dim.Render(fmt.Sprintf("— lines %d–%d of %d: ↑/↓ to see the rest —", d.top+1, d.top+n, len(body))))
	}
	lines := append(append(d.head(), shown...), d.foot()...)
	return d.th.box.Width(w).Render(strings.Join(lines, "\n"))
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

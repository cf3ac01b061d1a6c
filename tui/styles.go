package tui

import (
	"image/color"

	"charm.land/bubbles/v2/textarea"
	"charm.land/lipgloss/v2"
)

// theme holds every style the TUI draws with. It is rebuilt when the
// terminal reports its background (Bubble Tea v2 does not guess dark or
// light) and has no colours at all under NO_COLOR.
type theme struct {
	dark    bool
	noColor bool
	mdStyle string // the Markdown theme (markdown_style.go): "dark", "light" or "none"

	accent   lipgloss.Style // persona names, the active tab, prompts
	dim      lipgloss.Style // anchors, handoffs, meta lines
	ok       lipgloss.Style
	bad      lipgloss.Style
	warn     lipgloss.Style
	user     lipgloss.Style // the bar in front of user messages
	tabOn    lipgloss.Style
	tabOff   lipgloss.Style
	busy     lipgloss.Style // the busy dot
	status   lipgloss.Style
	diffAdd  lipgloss.Style
	diffDel  lipgloss.Style
	diffHunk lipgloss.Style
	selected lipgloss.Style // the selected row of a list, the selected tool block
	title    lipgloss.Style
	box      lipgloss.Style // dialogs
	key      lipgloss.Style // key names in help
}

func newTheme(dark, noColor bool) theme {
	t := theme{dark: dark, noColor: noColor}
	plain := lipgloss.NewStyle()
	t.mdStyle = "light"
	if dark {
		t.mdStyle = "dark"
	}
	if noColor {
		// No colour anywhere on screen: bold, faint, underline and
		// reverse carry the emphasis (Markdown too; see mdStyleConfig).
		t.mdStyle = "none"
		t.accent = plain.Bold(true)
		t.dim = plain.Faint(true)
		t.ok, t.bad, t.warn = plain, plain.Bold(true), plain.Bold(true)
		t.user = plain.Bold(true)
		t.tabOn = plain.Reverse(true).Bold(true)
		t.tabOff = plain
		t.busy = plain.Bold(true)
		t.status = plain.Reverse(true)
		t.diffAdd, t.diffDel, t.diffHunk = plain, plain, plain.Bold(true)
		t.selected = plain.Reverse(true)
		t.title = plain.Bold(true).Underline(true)
		t.box = plain.Border(lipgloss.NormalBorder()).Padding(0, 1)
		t.key = plain.Bold(true)
		return t
	}
	ld := lipgloss.LightDark(dark)
	c := func(light, darkc string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(darkc)) }
	accent := c("#5A3FC0", "#B8A4FF")
	t.accent = plain.Foreground(accent).Bold(true)
	t.dim = plain.Foreground(c("#8A8A8A", "#7A7A7A"))
	t.ok = plain.Foreground(c("#1A7F37", "#5FD787"))
	t.bad = plain.Foreground(c("#C62828", "#FF6B6B"))
	t.warn = plain.Foreground(c("#9A6700", "#E5C07B"))
	t.user = plain.Foreground(c("#0969DA", "#61AFEF")).Bold(true)
	t.tabOn = plain.Foreground(c("#FFFFFF", "#1E1E2E")).Background(accent).Bold(true)
	t.tabOff = plain.Foreground(c("#555555", "#AAAAAA"))
	t.busy = plain.Foreground(c("#D97706", "#FFB454")).Bold(true)
	t.status = plain.Foreground(c("#333333", "#D0D0D0")).Background(c("#E4E4E4", "#303040"))
	t.diffAdd = plain.Foreground(c("#1A7F37", "#5FD787"))
	t.diffDel = plain.Foreground(c("#C62828", "#FF6B6B"))
	t.diffHunk = plain.Foreground(c("#0E7490", "#56B6C2"))
	t.selected = plain.Background(c("#DDD6FE", "#3B3355"))
	t.title = plain.Foreground(accent).Bold(true)
	t.box = plain.Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1)
	t.key = plain.Foreground(accent).Bold(true)
	return t
}

// inputStyles are the input's styles: the textarea's defaults, or for
// NO_COLOR the same roles without colour (a faint placeholder, a reversed
// selection).
func inputStyles(dark, noColor bool) textarea.Styles {
	if !noColor {
		// The textarea's defaults draw the prompt in ANSI grey 7 (pale on
		// white) and the cursor line on ANSI black (a bar on many dark
		// themes): the prompt takes the accent, the cursor line nothing.
		st := textarea.DefaultStyles(dark)
		accent := newTheme(dark, false).accent
		for _, s := range []*textarea.StyleState{&st.Focused, &st.Blurred} {
			s.Prompt = accent.UnsetBold()
			s.CursorLine = lipgloss.NewStyle()
		}
		st.Focused.Placeholder = newTheme(dark, false).dim
		st.Cursor.Color = nil // the terminal's own cursor colour
		return st
	}
	plain := lipgloss.NewStyle()
	state := textarea.StyleState{
		Base: plain, CursorLine: plain, CursorLineNumber: plain, EndOfBuffer: plain, LineNumber: plain,
		Placeholder: plain.Faint(true), Prompt: plain, Selection: plain.Reverse(true), Text: plain,
	}
	st := textarea.DefaultStyles(dark)
	st.Focused, st.Blurred = state, state
	st.Cursor.Color = nil // the terminal's own cursor colour
	return st
}

// mdPalette is what Markdown is drawn in, "#RRGGBB" each: glamour's style
// and chroma's code style are built from it (markdown_style.go), next to
// the colours above so that the chat and its Markdown match.
type mdPalette struct {
	h1Fg, h1Bg, heading, codeFg, codeBg, linkText, link, quote, rule, marker, html string
	// code blocks
	comment, str, number, keyword, typ, key, fn, add, del, hunk string
}

func markdownPalette(dark bool) mdPalette {
	c := func(light, darkc string) string {
		if dark {
			return darkc
		}
		return light
	}
	return mdPalette{
		h1Fg: "#FFFF87", h1Bg: "#5F5FFF",
		heading: c("#005FFF", "#00AFFF"),
		codeFg:  c("#D7005F", "#FF5F87"), codeBg: c("#EEEEEE", "#303030"),
		linkText: c("#00875F", "#00AF5F"), link: c("#00878F", "#00AFAF"),
		quote: c("#8A8A8A", "#7A7A7A"), rule: c("#BCBCBC", "#585858"),
		marker: c("#5A3FC0", "#B8A4FF"), html: c("#8A8A8A", "#7A7A7A"),

		comment: c("#6E7781", "#7F848E"), str: c("#0A3069", "#98C379"), number: c("#953800", "#D19A66"),
		keyword: c("#8250DF", "#C678DD"), typ: c("#0550AE", "#56B6C2"), key: c("#0969DA", "#61AFEF"),
		fn: c("#0969DA", "#61AFEF"), add: c("#1A7F37", "#5FD787"), del: c("#C62828", "#FF6B6B"),
		hunk: c("#0E7490", "#56B6C2"),
	}
}

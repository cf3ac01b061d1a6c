package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"polly/memory/store"
)

// outputsPanel browses the session's offloaded tool outputs (the big ones
// the model only saw a preview of). / searches them (full-text, in
// SQLite); Enter shows a whole output.
type outputsPanel struct {
	seq       int
	rows      []outRow
	sel       int
	err       string
	searching bool   // typing a query
	query     string // the query typed or last run
	results   bool   // rows are search results

	showing bool // an output is open in the viewport
	title   string
	vp      viewport.Model
}

type outRow struct {
	id      int64
	tool    string
	persona string
	what    string // arguments or the matching snippet
	size    string
}

type (
	outListMsg struct {
		seq     int
		rows    []outRow
		results bool
		err     error
	}
	outShowMsg struct {
		seq   int
		title string
		text  string
		err   error
	}
)

// minOffloadedChars is the size from which an output is listed: the
// outputs the context only kept a preview of.
const minOffloadedChars = 2000

func (p *outputsPanel) list(m *Model) tea.Cmd {
	st, id, seq, ctx := m.app.Store, m.sessID, p.seq, m.ctx
	return func() tea.Msg {
		if st == nil {
			return outListMsg{seq: seq, err: fmt.Errorf("no session store")}
		}
		if id == "" {
			return outListMsg{seq: seq}
		}
		list, err := st.ListToolExecutions(ctx, id, minOffloadedChars, 200)
		if err != nil {
			return outListMsg{seq: seq, err: err}
		}
		rows := make([]outRow, len(list))
		for i, e := range list {
			rows[i] = outRow{id: e.ID, tool: e.Tool, persona: e.Persona, what: oneLine(e.Arguments),
				size: plural(e.OutputLines, "line") + ", " + fmtCount(e.OutputChars) + " chars"}
		}
		return outListMsg{seq: seq, rows: rows}
	}
}

func (p *outputsPanel) search(m *Model) tea.Cmd {
	st, id, seq, q, ctx := m.app.Store, m.sessID, p.seq, p.query, m.ctx
	return func() tea.Msg {
		if st == nil {
			return outListMsg{seq: seq, err: fmt.Errorf("no session store")}
		}
		hits, err := st.SearchOutputs(ctx, id, q, 50)
		if err != nil {
			return outListMsg{seq: seq, err: err, results: true}
		}
		rows := make([]outRow, len(hits))
		for i, h := range hits {
			rows[i] = outRow{id: h.ExecID, tool: h.Tool, persona: h.Persona, what: oneLine(h.Snippet)}
		}
		return outListMsg{seq: seq, rows: rows, results: true}
	}
}

func (p *outputsPanel) show(m *Model, r outRow) tea.Cmd {
	st, seq, ctx := m.app.Store, p.seq, m.ctx
	title := fmt.Sprintf("#%d %s %s", r.id, r.tool, r.size)
	return func() tea.Msg {
		text, err := st.Output(ctx, r.id)
		return outShowMsg{seq: seq, title: title, text: text, err: err}
	}
}

func (p *outputsPanel) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case outListMsg:
		if msg.seq != p.seq {
			return nil
		}
		p.err = ""
		if msg.err != nil {
			p.err = msg.err.Error()
		}
		p.rows, p.results, p.sel = msg.rows, msg.results, 0
	case outShowMsg:
		if msg.seq != p.seq {
			return nil
		}
		if msg.err != nil {
			p.err = msg.err.Error()
			return nil
		}
		p.showing, p.title = true, msg.title
		p.vp.SetContent(strings.ReplaceAll(msg.text, "\t", "    "))
		p.vp.GotoTop()
	}
	return nil
}

func (p *outputsPanel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	if p.searching {
		switch k {
		case "enter":
			p.searching = false
			if strings.TrimSpace(p.query) == "" {
				return p.list(m)
			}
			return p.search(m)
		case "esc":
			p.searching = false
		case "backspace":
			if r := []rune(p.query); len(r) > 0 {
				p.query = string(r[:len(r)-1])
			}
		case "space":
			p.query += " "
		default:
			p.query += msg.Text
		}
		return nil
	}
	if p.showing {
		switch k {
		case "esc", "q":
			p.showing = false
		case "up", "k":
			p.vp.ScrollUp(1)
		case "down", "j":
			p.vp.ScrollDown(1)
		default:
			pageViewport(&p.vp, k)
		}
		return nil
	}
	switch k {
	case "esc", "q":
		if p.results {
			p.query = ""
			return p.list(m)
		}
		m.closePanel()
	case "/":
		p.searching, p.query = true, ""
	case "up", "k":
		p.sel = max(0, p.sel-1)
	case "down", "j":
		p.sel = min(len(p.rows)-1, p.sel+1)
	case "enter":
		if p.sel >= 0 && p.sel < len(p.rows) {
			return p.show(m, p.rows[p.sel])
		}
	}
	return nil
}

func (p *outputsPanel) view(m *Model, w, h int) []string {
	th := m.th
	if p.showing {
		out := []string{m.panelTitle("Output "+p.title, "↑↓ pgup/pgdn scroll · esc back", w)}
		return append(out, strings.Split(p.vp.View(), "\n")...)
	}
	keys := "↑↓ choose · enter show · / search · esc close"
	if p.results {
		keys = "↑↓ choose · enter show · / search again · esc all outputs"
	}
	out := []string{m.panelTitle("Tool outputs", keys, w)}
	switch {
	case p.searching:
		out = append(out, th.accent.Render("search: ")+p.query+"▏"+th.dim.Render("  (enter runs, esc cancels)"))
	case p.results:
		out = append(out, th.dim.Render(matchLine(len(p.rows), p.query)))
	default:
		out = append(out, th.dim.Render(fmt.Sprintf("outputs over %d characters in this session (the model saw a preview and can read them with read_tool_output)", minOffloadedChars)))
	}
	if p.err != "" {
		return append(out, th.bad.Render(clip(p.err, w)))
	}
	if len(p.rows) == 0 {
		return append(out, th.dim.Render("  nothing yet"))
	}
	rows := make([]string, len(p.rows))
	for i, r := range p.rows {
		if p.results {
			rows[i] = fmt.Sprintf(" #%-5d %-12s %-10s %s", r.id, clip(r.tool, 12), clip(r.persona, 10), aroundHit(r.what))
			continue
		}
		rows[i] = fmt.Sprintf(" #%-5d %-12s %-10s %-22s %s", r.id, clip(r.tool, 12), clip(r.persona, 10), r.size, r.what)
	}
	return append(out, m.list(rows, p.sel, w, h-len(out))...)
}

// aroundHit starts a search snippet shortly before its first match, so the
// match is visible in a narrow row, and shows the match in [brackets].
func aroundHit(snippet string) string {
	if i := strings.Index(snippet, store.HitStart); i > 30 {
		snippet = "…" + snippet[i-30:]
		for !utf8.ValidString(snippet) { // cut inside a character: step on
			snippet = "…" + snippet[len("…")+1:]
		}
	}
	return strings.ReplaceAll(strings.ReplaceAll(snippet, store.HitStart, "["), store.HitEnd, "]")
}

// matchLine is "1 output matches "x"", "3 outputs match "x"".
func matchLine(n int, q string) string {
	if n == 1 {
		return fmt.Sprintf("1 output matches %q", q)
	}
	return fmt.Sprintf("%d outputs match %q", n, q)
}

package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

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
	hl      lipgloss.Style // search terms in an open output
}

type outRow struct {
	id        int64
	tool      string
	persona   string
	what      string // arguments or the matching snippet
	size      string
	offloaded bool // the model saw only a preview
	offset    int  // search hits: character offset of the match
	hit       bool
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
		row   outRow
		err   error
	}
)

func (p *outputsPanel) list(m *Model) tea.Cmd {
	st, id, seq, ctx := m.app.Store, m.sessID, p.seq, m.ctx
	limits, names := m.app.Deps.Context.WithDefaults(), m.namesByID()
	return func() tea.Msg {
		if st == nil {
			return outListMsg{seq: seq, err: fmt.Errorf("no session store")}
		}
		if id == "" {
			return outListMsg{seq: seq}
		}
		list, err := st.ListToolExecutions(ctx, id, 0, 500)
		if err != nil {
			return outListMsg{seq: seq, err: err}
		}
		rows := make([]outRow, len(list))
		for i, e := range list {
			rows[i] = outRow{id: e.ID, tool: e.Tool, persona: nameOf(names, e.Persona), what: oneLine(e.Arguments),
				size:      plural(e.OutputLines, "line") + ", " + fmtCount(e.OutputChars) + " chars",
				offloaded: e.OutputChars > limits.OffloadLimit(e.Tool)}
		}
		return outListMsg{seq: seq, rows: rows}
	}
}

func (p *outputsPanel) search(m *Model) tea.Cmd {
	st, id, seq, q, ctx := m.app.Store, m.sessID, p.seq, p.query, m.ctx
	names := m.namesByID()
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
			rows[i] = outRow{id: h.ExecID, tool: h.Tool, persona: nameOf(names, h.Persona), what: oneLine(h.Snippet), offset: h.Offset, hit: true}
		}
		return outListMsg{seq: seq, rows: rows, results: true}
	}
}

func (p *outputsPanel) show(m *Model, r outRow) tea.Cmd {
	st, seq, ctx := m.app.Store, p.seq, m.ctx
	title := fmt.Sprintf("#%d %s %s", r.id, r.tool, r.size)
	return func() tea.Msg {
		text, err := st.Output(ctx, r.id)
		return outShowMsg{seq: seq, title: title, text: text, row: r, err: err}
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
		text := cleanText(msg.text)
		if !msg.row.hit {
			p.vp.SetContent(text)
			p.vp.GotoTop()
			return nil
		}
		// A search hit opens at the match, its terms highlighted.
		terms := hitTerms(msg.row.what, p.query)
		line := matchLine0(text, msg.row.offset, terms)
		p.vp.SetContent(highlightTerms(text, terms, p.hl))
		p.vp.SetYOffset(max(0, line-2))
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
	case "up", "k", "down", "j":
		p.sel = moveSelection(p.sel, len(p.rows), msg.String())
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
		out = append(out, th.dim.Render(clip("every tool output of this session, newest first; "+th.warn.Render("offloaded")+th.dim.Render(": the model saw a preview (read_tool_output reads the rest)"), w)))
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
		mark := "          "
		if r.offloaded {
			mark = "offloaded "
		}
		rows[i] = fmt.Sprintf(" #%-5d %-12s %-10s %s%-22s %s", r.id, clip(r.tool, 12), clip(r.persona, 10), mark, r.size, r.what)
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

func nameOf(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return n
	}
	return id
}

// hitTerms are the words to highlight in an opened hit: the ones the
// search marked in its snippet, else the query's words.
func hitTerms(snippet, query string) []string {
	var terms []string
	for rest := snippet; ; {
		_, after, ok := strings.Cut(rest, store.HitStart)
		if !ok {
			break
		}
		term, tail, ok := strings.Cut(after, store.HitEnd)
		if !ok {
			break
		}
		if t := strings.TrimSpace(term); t != "" {
			terms = append(terms, t)
		}
		rest = tail
	}
	if len(terms) == 0 {
		terms = strings.Fields(query)
	}
	return terms
}

// highlightTerms marks every case-insensitive occurrence of the terms.
func highlightTerms(text string, terms []string, st lipgloss.Style) string {
	if len(terms) == 0 {
		return text
	}
	low := strings.ToLower(text)
	var b strings.Builder
	for i := 0; i < len(text); {
		best, n := -1, 0
		for _, t := range terms {
			if j := strings.Index(low[i:], strings.ToLower(t)); j >= 0 && (best < 0 || j < best) {
				best, n = j, len(t)
			}
		}
		if best < 0 || len(low) != len(text) {
			b.WriteString(text[i:])
			break
		}
		b.WriteString(text[i : i+best])
		b.WriteString(st.Render(text[i+best : i+best+n]))
		i += best + n
	}
	return b.String()
}

// matchLine0 is the line (from 0) of the first term found from the hit's
// character offset on (the offset is where the matching part starts).
func matchLine0(text string, offset int, terms []string) int {
	from := len(text)
	if offset < utf8.RuneCountInString(text) {
		from = len(string([]rune(text)[:offset]))
	}
	low := strings.ToLower(text)
	at := -1
	for _, t := range terms {
		if j := strings.Index(low[from:], strings.ToLower(t)); j >= 0 && (at < 0 || from+j < at) {
			at = from + j
		}
	}
	if at < 0 {
		at = min(from, len(text))
	}
	return strings.Count(text[:at], "\n")
}

package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"polly/memory/store"
)

// outputsPanel browses every tool output of the session (offloaded ones
// marked: the model only saw a preview). / searches them (full-text, in
// SQLite); Enter shows a whole output, a search hit at its match.
type outputsPanel struct {
	look
	keys      outputsKeys
	seq       int
	src       outputSource
	rows      []outRow
	sel       int
	err       string
	searching bool   // typing a query
	query     string // the query typed or last run
	results   bool   // rows are search results

	showing bool // an output is open in the viewport
	title   string
	text    string   // the open output
	terms   []string // search terms highlighted in it
	vp      viewport.Model
	w, h    int

	// Finding inside the open output: / types a word, enter finds it,
	// n and N go to the next and previous line holding it.
	finding bool
	find    string
	found   []int // lines (from 0) holding the word
	at      int   // the one shown
}

// outputSource reads the session's outputs; each func runs in a Cmd.
type outputSource struct {
	list   func() ([]outRow, error)
	search func(query string) ([]outRow, error)
	output func(id int64) (string, error)
}

type outputsKeys struct {
	listKeys
	Show, Search, Run, Cancel, Back key.Binding
	Find, Next, Prev                key.Binding // in an open output
	pager                           pagerKeys
}

func newOutputsKeys() outputsKeys {
	k := outputsKeys{listKeys: newListKeys(),
		Show:   bind("enter", "show", "enter"),
		Search: bind("/", "search", "/"),
		Run:    bind("enter", "runs the search", "enter"),
		Cancel: bind("esc", "cancels it", "esc"),
		Back:   bind("esc", "all outputs", "esc"),
		Find:   bind("/", "find in it", "/"),
		Next:   bind("n", "next match", "n"),
		Prev:   bind("N", "previous match", "N"),
		pager:  newPagerKeys(),
	}
	k.pager.Close = bind("esc", "back", "esc")
	return k
}

func (k outputsKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Choose, k.Show, k.Search, k.Close}
}

// FullHelp: the list, the search prompt, an open output.
func (k outputsKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Choose, k.Show, k.Search, k.Close}, {k.Back}, {k.Run, k.Cancel},
		{k.pager.Scroll, k.pager.Page, k.pager.Ends, k.Find, k.Next, k.Prev, k.pager.Close}}
}

func (k outputsKeys) groupTitles() []string {
	return []string{"", "search results", "typing a search (or a find)", "an opened output"}
}

// capturing: a search or a find is being typed.
func (p *outputsPanel) capturing() bool { return p.searching || p.finding }

// ShortHelp follows what the panel shows.
func (p *outputsPanel) ShortHelp() []key.Binding {
	k := p.keys
	switch {
	case p.showing && len(p.found) > 0:
		return []key.Binding{k.Next, k.Prev, k.Find, k.pager.Scroll, k.pager.Close}
	case p.showing:
		return []key.Binding{k.pager.Scroll, k.pager.Page, k.Find, k.pager.Close}
	case p.results:
		search := k.Search
		search.SetHelp("/", "search again")
		return []key.Binding{k.Choose, k.Show, search, k.Back}
	}
	return k.ShortHelp()
}
func (p *outputsPanel) FullHelp() [][]key.Binding { return p.keys.FullHelp() }

func (p *outputsPanel) SetSize(w, h int) {
	p.w, p.h = w, h
	p.vp.SetWidth(w)
	p.vp.SetHeight(max(1, h-1))
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

// outputSource reads from the store what the outputs panel lists.
func (m *Model) outputSource() outputSource {
	st, id, ctx := m.app.Store, m.sessID, m.ctx
	limits, names := m.app.Deps.Context.WithDefaults(), m.namesByID()
	noStore := fmt.Errorf("no session store")
	return outputSource{
		list: func() ([]outRow, error) {
			if st == nil {
				return nil, noStore
			}
			if id == "" {
				return nil, nil
			}
			list, err := st.ListToolExecutions(ctx, id, 0, 500)
			if err != nil {
				return nil, err
			}
			rows := make([]outRow, len(list))
			for i, e := range list {
				rows[i] = outRow{id: e.ID, tool: e.Tool, persona: nameOf(names, e.Persona), what: oneLine(e.Arguments),
					size:      plural(e.OutputLines, "line") + ", " + fmtCount(e.OutputChars) + " chars",
					offloaded: e.OutputChars > limits.OffloadLimit(e.Tool)}
			}
			return rows, nil
		},
		search: func(q string) ([]outRow, error) {
			if st == nil {
				return nil, noStore
			}
			hits, err := st.SearchOutputs(ctx, id, q, 50)
			if err != nil {
				return nil, err
			}
			rows := make([]outRow, len(hits))
			for i, h := range hits {
				rows[i] = outRow{id: h.ExecID, tool: h.Tool, persona: nameOf(names, h.Persona), what: oneLine(h.Snippet), offset: h.Offset, hit: true}
			}
			return rows, nil
		},
		output: func(x int64) (string, error) {
			if st == nil {
				return "", noStore
			}
			return st.Output(ctx, x)
		},
	}
}

func newOutputsPanel(lk look, seq int, src outputSource) *outputsPanel {
	return &outputsPanel{look: lk, keys: newOutputsKeys(), seq: seq, src: src}
}

func (p *outputsPanel) Init() tea.Cmd { return p.list() }

func (p *outputsPanel) list() tea.Cmd {
	seq, list := p.seq, p.src.list
	return func() tea.Msg {
		rows, err := list()
		return outListMsg{seq: seq, rows: rows, err: err}
	}
}

func (p *outputsPanel) search() tea.Cmd {
	seq, q, search := p.seq, p.query, p.src.search
	return func() tea.Msg {
		rows, err := search(q)
		return outListMsg{seq: seq, rows: rows, results: true, err: err}
	}
}

func (p *outputsPanel) show(r outRow) tea.Cmd {
	seq, output := p.seq, p.src.output
	title := strings.TrimSpace(fmt.Sprintf("#%d %s %s", r.id, r.tool, r.size)) // hits have no size
	return func() tea.Msg {
		text, err := output(r.id)
		return outShowMsg{seq: seq, title: title, text: text, row: r, err: err}
	}
}

func (p *outputsPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	switch msg := msg.(type) {
	case lookMsg:
		p.look = msg.look
		if p.showing { // the highlight in the new colours
			off := p.vp.YOffset()
			p.vp.SetContent(highlightTerms(p.text, p.terms, p.th.hl()))
			p.vp.SetYOffset(off)
		}
	case outListMsg:
		if msg.seq != p.seq {
			return p, nil
		}
		p.err = ""
		if msg.err != nil {
			p.err = msg.err.Error()
		}
		p.rows, p.results, p.sel = msg.rows, msg.results, 0
	case outShowMsg:
		if msg.seq != p.seq {
			return p, nil
		}
		if msg.err != nil {
			p.err = msg.err.Error()
			return p, nil
		}
		p.showing, p.title = true, msg.title
		p.text, p.terms = cleanText(collapseCR(msg.text)), nil
		p.finding, p.find, p.found = false, "", nil
		if !msg.row.hit {
			p.vp.SetContent(p.text)
			p.vp.GotoTop()
			return p, nil
		}
		// A search hit opens at the match, its terms highlighted.
		p.terms = hitTerms(msg.row.what, p.query)
		line := matchLine0(p.text, msg.row.offset, p.terms)
		p.vp.SetContent(highlightTerms(p.text, p.terms, p.th.hl()))
		p.vp.SetYOffset(max(0, line-2))
	case tea.PasteMsg:
		if p.searching {
			p.query += msg.Content
		}
		if p.finding {
			p.find += msg.Content
		}
	case tea.MouseWheelMsg:
		if k, ok := wheelKey(msg); ok {
			switch {
			case p.showing && k == "up":
				p.vp.ScrollUp(3)
			case p.showing:
				p.vp.ScrollDown(3)
			default:
				p.sel = moveSelection(p.sel, len(p.rows), k)
			}
		}
	case tea.KeyPressMsg:
		return p.key(msg)
	}
	return p, nil
}

func (p *outputsPanel) key(msg tea.KeyPressMsg) (panel, tea.Cmd) {
	k := p.keys
	if p.searching {
		switch {
		case key.Matches(msg, k.Run):
			p.searching = false
			if strings.TrimSpace(p.query) == "" {
				return p, p.list()
			}
			return p, p.search()
		case key.Matches(msg, k.Cancel):
			p.searching = false
		default:
			typeInto(&p.query, msg)
		}
		return p, nil
	}
	if p.finding {
		switch {
		case key.Matches(msg, k.Run):
			p.finding = false
			p.findNow()
		case key.Matches(msg, k.Cancel):
			p.finding = false
		default:
			typeInto(&p.find, msg)
		}
		return p, nil
	}
	if p.showing {
		switch {
		case key.Matches(msg, k.pager.Close):
			p.showing, p.found = false, nil
		case key.Matches(msg, k.Find):
			p.finding, p.find = true, ""
		case key.Matches(msg, k.Next) && len(p.found) > 0:
			p.at = (p.at + 1) % len(p.found)
			p.vp.SetYOffset(max(0, p.found[p.at]-2))
		case key.Matches(msg, k.Prev) && len(p.found) > 0:
			p.at = (p.at + len(p.found) - 1) % len(p.found)
			p.vp.SetYOffset(max(0, p.found[p.at]-2))
		default:
			pageViewport(&p.vp, msg.String())
		}
		return p, nil
	}
	switch {
	case key.Matches(msg, k.Close) && p.results:
		p.query = ""
		return p, p.list()
	case key.Matches(msg, k.Close):
		return nil, nil
	case key.Matches(msg, k.Search):
		p.searching, p.query = true, ""
	case key.Matches(msg, k.Choose):
		p.sel = moveSelection(p.sel, len(p.rows), msg.String())
	case key.Matches(msg, k.Show):
		if p.sel >= 0 && p.sel < len(p.rows) {
			return p, p.show(p.rows[p.sel])
		}
	}
	return p, nil
}

// findNow finds the typed word in the open output: its lines, the
// first one from the top shown, every occurrence highlighted.
func (p *outputsPanel) findNow() {
	p.found, p.at = nil, 0
	word := strings.ToLower(strings.TrimSpace(p.find))
	if word == "" {
		p.vp.SetContent(highlightTerms(p.text, p.terms, p.th.hl()))
		return
	}
	for i, l := range strings.Split(p.text, "\n") {
		if strings.Contains(strings.ToLower(l), word) {
			p.found = append(p.found, i)
		}
	}
	off := p.vp.YOffset()
	p.vp.SetContent(highlightTerms(p.text, []string{strings.TrimSpace(p.find)}, p.th.hl()))
	p.vp.SetYOffset(off)
	if len(p.found) > 0 {
		p.vp.SetYOffset(max(0, p.found[0]-2))
	}
}

func (p *outputsPanel) View() string {
	th, w := p.th, p.w
	if p.showing {
		out := []string{panelTitle(th, "Output "+p.title, p, w)}
		vp := p.vp
		switch {
		case p.finding:
			out = append(out, th.accent.Render("find: ")+p.find+"▏"+th.dim.Render("  ("+helpItems(p.keys.Run, p.keys.Cancel)+")"))
			vp.SetHeight(max(1, vp.Height()-1))
		case p.find != "" && len(p.found) == 0:
			out = append(out, th.warn.Render(clip(fmt.Sprintf("%q is not in this output", p.find), w)))
			vp.SetHeight(max(1, vp.Height()-1))
		case len(p.found) > 0:
			out = append(out, th.dim.Render(clip(fmt.Sprintf("line %d: match %d of %d lines holding %q · n next, N previous", p.found[p.at]+1, p.at+1, len(p.found), p.find), w)))
			vp.SetHeight(max(1, vp.Height()-1))
		}
		return joinLines(append(out, vp.View()))
	}
	out := []string{panelTitle(th, "Tool outputs", p, w)}
	switch {
	case p.searching:
		out = append(out, th.accent.Render("search: ")+p.query+"▏"+th.dim.Render("  ("+helpItems(p.keys.Run, p.keys.Cancel)+")"))
	case p.results:
		out = append(out, th.dim.Render(matchLine(len(p.rows), p.query)))
	default:
		out = append(out, th.dim.Render(clip("every tool output of this session, newest first; "+th.warn.Render("offloaded")+th.dim.Render(": the model saw a preview (read_tool_output reads the rest)"), w)))
	}
	if p.err != "" {
		return joinLines(append(out, th.bad.Render(clip(p.err, w))))
	}
	if len(p.rows) == 0 {
		return joinLines(append(out, th.dim.Render("  nothing yet")))
	}
	// Columns are padded by display width (a clipped name ends in a
	// three-byte …), the size column as wide as its widest row.
	idW, sizeW := 0, 0
	for _, r := range p.rows {
		idW, sizeW = max(idW, len(fmt.Sprint(r.id))), max(sizeW, widthOf(r.size))
	}
	rows := make([]string, len(p.rows))
	for i, r := range p.rows {
		head := " " + padCol(fmt.Sprintf("#%d", r.id), idW+1) + " " + padCol(r.tool, 14) + " " + padCol(r.persona, 10) + " "
		if p.results {
			rows[i] = head + aroundHit(r.what)
			continue
		}
		mark := "          "
		if r.offloaded {
			mark = "offloaded "
		}
		rows[i] = head + mark + padCol(r.size, min(sizeW, 28)) + " " + r.what
	}
	return joinLines(append(out, listRows(th, rows, p.sel, w, p.h-len(out))...))
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

// padCol is s clipped to w display columns and padded to exactly w.
func padCol(s string, w int) string {
	s = clip(s, w)
	return s + strings.Repeat(" ", max(0, w-widthOf(s)))
}

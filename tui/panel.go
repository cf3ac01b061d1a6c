package tui

import (
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// panel is a full-screen component shown instead of the chat (memory,
// task, team, outputs, sessions, help, rewind, models, MCP). Each holds
// only what it needs, reads the store and files in Cmds, and talks back to
// the root with messages; Update returning a nil panel closes it.
type panel interface {
	Init() tea.Cmd
	Update(tea.Msg) (panel, tea.Cmd)
	View() string
	SetSize(w, h int)
	help.KeyMap
}

// panelKind names the panels the root opens; hotkeys toggle them.
type panelKind int

const (
	noPanel panelKind = iota
	pHelp
	pMemory
	pTask
	pTeam
	pOutputs
	pSessions
	pRewind
	pModels
	pMCP
)

// Messages panels send the root.
type (
	resumeSessionMsg struct{ id string } // "" opens a new session
	rewindMsg        struct {
		keep int  // turns kept
		fork bool // also fork the conversation there
	}
	setModelMsg struct{ ref string }
	flashMsg    struct{ text string }
)

// lookMsg hands the open panel the styles after a theme change.
type lookMsg struct{ look look }

// look is what panels draw with: the theme, and the renderer (Markdown and
// transcript caches) that goes with it.
type look struct {
	th theme
	r  *renderer
}

func msgCmd(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

// panelHotkey opens (or, pressed again, closes) a panel from anywhere.
func (m *Model) panelHotkey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	for _, x := range []struct {
		b key.Binding
		p panelKind
	}{{m.keys.Help, pHelp}, {m.keys.Memory, pMemory}, {m.keys.Task, pTask}, {m.keys.Team, pTeam}, {m.keys.Outputs, pOutputs}, {m.keys.Sessions, pSessions}} {
		if key.Matches(msg, x.b) {
			if m.kind == x.p {
				m.closePanel()
				return nil, true
			}
			return m.openPanel(x.p), true
		}
	}
	return nil, false
}

// openPanel builds a panel with what it needs and starts it. Each opening
// gets a new sequence number: results and ticks of an older one are
// dropped.
func (m *Model) openPanel(k panelKind) tea.Cmd {
	m.seq++
	lk := m.look()
	var p panel
	var extra tea.Cmd
	switch k {
	case pHelp:
		p = newHelpPanel(lk, m.keys, m.customCommands())
	case pMemory:
		mp := newMemoryPanel(lk, m.seq, m.memorySource(), m.editor, m.tty)
		if ws := m.app.Workspace; ws != nil {
			mp.apply = ws.ApplyTemplateUpdate
		}
		p = mp
	case pTask:
		p = newTaskPanel(lk, m.current())
		extra = m.fetchStatus(m.current())
	case pTeam:
		p = newTeamPanel(lk, m.team, m.now)
	case pOutputs:
		p = newOutputsPanel(lk, m.seq, m.outputSource())
	case pSessions:
		p = newSessionsPanel(lk, m.seq, m.listSessions(), m.sessID, m.namesByID())
	case pRewind:
		p = newRewindPanel(lk, m.seq, m.listTurns())
	case pModels:
		p = newModelsPanel(lk, m.seq, m.modelRows(), m.current().p.Name)
	case pMCP:
		p = newMCPPanel(lk, m.seq, m.app.MCP.Status)
	default:
		m.closePanel()
		return nil
	}
	m.panel, m.kind = p, k
	p.SetSize(m.w, m.h-2)
	return tea.Batch(p.Init(), extra)
}

func (m *Model) closePanel() {
	m.panel, m.kind = nil, noPanel
}

// updatePanel gives the open panel a message; a nil result closes it.
func (m *Model) updatePanel(msg tea.Msg) tea.Cmd {
	p, cmd := m.panel.Update(msg)
	if p == nil {
		m.closePanel()
	} else {
		m.panel = p
	}
	return cmd
}

// look is the current styles for panels.
func (m *Model) look() look { return look{th: m.th, r: m.r} }

// panelTitle is a panel's first line: its name and its keys, generated
// from its key map.
func panelTitle(th theme, name string, keys help.KeyMap, w int) string {
	t := th.title.Render(" " + name + " ")
	return clip(t+" "+shortHelp(th, keys.ShortHelp(), max(0, w-widthOf(t)-1)), w)
}

// shortHelp renders bindings as "key what · key what", whole items only,
// with … when they do not all fit in w.
func shortHelp(th theme, bs []key.Binding, w int) string {
	h := help.New()
	h.ShortSeparator = " · "
	h.Styles = help.Styles{Ellipsis: th.dim, ShortKey: th.dim, ShortDesc: th.dim, ShortSeparator: th.dim}
	h.SetWidth(w)
	return h.ShortHelpView(bs)
}

// bind is a key binding with its help.
func bind(help, desc string, keys ...string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
}

// listKeys are the keys every list panel shares.
type listKeys struct {
	Choose, Close key.Binding
}

func newListKeys() listKeys {
	return listKeys{
		Choose: bind("↑↓", "choose", "up", "down"),
		Close:  bind("esc", "close", "esc"),
	}
}

// pagerKeys are the keys of a panel showing a document.
type pagerKeys struct {
	Scroll, Page, Ends, Close key.Binding
}

func newPagerKeys() pagerKeys {
	return pagerKeys{
		Scroll: bind("↑↓", "scroll", "up", "down"),
		Page:   bind("pgup/pgdn", "page", "pgup", "pgdown"),
		Ends:   bind("home/end", "top / bottom", "home", "end"),
		Close:  bind("esc", "close", "esc"),
	}
}

// pageViewport applies a pager key to a viewport.
func pageViewport(vp *viewport.Model, k string) {
	switch k {
	case "up":
		vp.ScrollUp(1)
	case "down":
		vp.ScrollDown(1)
	case "pgup":
		vp.PageUp()
	case "pgdown":
		vp.PageDown()
	case "home":
		vp.GotoTop()
	case "end":
		vp.GotoBottom()
	}
}

// typeInto edits a one-line field (a search, a reason) with a key:
// backspace erases a character, space and printable keys add theirs.
func typeInto(field *string, msg tea.KeyPressMsg) {
	switch msg.String() {
	case "backspace":
		if r := []rune(*field); len(r) > 0 {
			*field = string(r[:len(r)-1])
		}
	case "space":
		*field += " "
	default:
		*field += msg.Text
	}
}

// moveSelection is a list panel's ↑/k and ↓/j: the row selected after key
// among n rows.
func moveSelection(sel, n int, k string) int {
	if k == "up" {
		return max(0, sel-1)
	}
	return min(n-1, sel+1)
}

// wheelKey turns a wheel turn into the key that scrolls the same way.
func wheelKey(msg tea.MouseWheelMsg) (string, bool) {
	switch msg.Button {
	case tea.MouseWheelUp:
		return "up", true
	case tea.MouseWheelDown:
		return "down", true
	}
	return "", false
}

// listRows draws rows with the selected one highlighted, scrolled to keep
// it visible in h lines.
func listRows(th theme, rows []string, sel, w, h int) []string {
	if h <= 0 {
		return nil
	}
	start := 0
	if sel >= h {
		start = sel - h + 1
	}
	var out []string
	for i := start; i < len(rows) && len(out) < h; i++ {
		r := clip(rows[i], w)
		if i == sel {
			r = th.selected.Render(r + strings.Repeat(" ", max(0, w-widthOf(r))))
		}
		out = append(out, r)
	}
	return out
}

// textPanel is a scrolled page of lines under a title (help, task, MCP).
type textPanel struct {
	keys pagerKeys
	off  int
	w, h int
}

// key scrolls; it reports false for esc.
func (t *textPanel) key(msg tea.KeyPressMsg) bool {
	k := msg.String()
	switch {
	case key.Matches(msg, t.keys.Close):
		return false
	case key.Matches(msg, t.keys.Scroll):
		t.scroll(k == "up", 1)
	case key.Matches(msg, t.keys.Page):
		t.scroll(k == "pgup", max(1, t.h-2))
	case key.Matches(msg, t.keys.Ends):
		t.off = 0
		if k == "end" {
			t.off = 1 << 30 // clamped when drawn
		}
	}
	return true
}

// update handles keys and the wheel; false closes the panel.
func (t *textPanel) update(msg tea.Msg) bool {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		return t.key(msg)
	case tea.MouseWheelMsg:
		if k, ok := wheelKey(msg); ok {
			t.scroll(k == "up", 3)
		}
	}
	return true
}

func (t *textPanel) scroll(up bool, n int) {
	if up {
		t.off = max(0, t.off-n)
	} else {
		t.off += n
	}
}

// view shows the title line and the body from the scroll offset.
func (t *textPanel) view(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	title, body := ls[0], ls[1:]
	t.off = min(t.off, max(0, len(body)-(t.h-1)))
	return strings.Join(append([]string{title}, body[t.off:]...), "\n")
}

// panelLines draws the open panel in w×h.
func (m *Model) panelLines(w, h int) []string {
	if m.panel == nil {
		return nil
	}
	return fitLines(padLines(strings.Split(m.panel.View(), "\n"), h), w)
}

// hl is the style of search terms in an opened output.
func (th theme) hl() lipgloss.Style { return th.selected.Bold(true).Underline(true) }

func joinLines(ls []string) string { return strings.Join(ls, "\n") }

// helpItems is bindings' help as "key what, key what" (for a hint inside
// a line).
func helpItems(bs ...key.Binding) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		parts = append(parts, b.Help().Key+" "+b.Help().Desc)
	}
	return strings.Join(parts, ", ")
}

func (t *textPanel) ShortHelp() []key.Binding {
	return []key.Binding{t.keys.Scroll, t.keys.Page, t.keys.Close}
}
func (t *textPanel) FullHelp() [][]key.Binding {
	return [][]key.Binding{{t.keys.Scroll, t.keys.Page, t.keys.Ends, t.keys.Close}}
}

// rowList is what the list panels (sessions, rewind) share: the styles,
// rows read in a Cmd, the selection, the read's error and the panel's size.
type rowList[T any] struct {
	look
	seq  int // the opening this list belongs to; older reads are dropped
	read func() ([]T, error)
	rows []T
	sel  int
	err  string
	done bool // the rows arrived
	w, h int
}

// rowsMsg carries a list panel's rows from its Cmd.
type rowsMsg[T any] struct {
	seq  int
	rows []T
	err  error
}

func (l *rowList[T]) SetSize(w, h int) { l.w, l.h = w, h }

// Init reads the rows in a Cmd.
func (l *rowList[T]) Init() tea.Cmd {
	seq, read := l.seq, l.read
	return func() tea.Msg {
		rows, err := read()
		return rowsMsg[T]{seq: seq, rows: rows, err: err}
	}
}

// update handles what every list panel handles alike — its rows arriving,
// a theme change, the wheel, the choose keys and esc — and says whether
// msg was one of those, and whether it closes the panel.
func (l *rowList[T]) update(msg tea.Msg, keys listKeys) (handled, closed bool) {
	switch msg := msg.(type) {
	case rowsMsg[T]:
		if msg.seq == l.seq {
			l.rows, l.done = msg.rows, true
			if msg.err != nil {
				l.err = msg.err.Error()
			}
		}
		return true, false
	case lookMsg:
		l.look = msg.look
		return true, false
	case tea.MouseWheelMsg:
		if k, ok := wheelKey(msg); ok {
			l.sel = moveSelection(l.sel, len(l.rows), k)
		}
		return true, false
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, keys.Close):
			return true, true
		case key.Matches(msg, keys.Choose):
			l.sel = moveSelection(l.sel, len(l.rows), msg.String())
			return true, false
		}
	}
	return false, false
}

// selected is the chosen row, if there is one.
func (l *rowList[T]) selected() (T, bool) {
	if l.sel < 0 || l.sel >= len(l.rows) {
		var zero T
		return zero, false
	}
	return l.rows[l.sel], true
}

// view draws a list panel: its title, then the read's error, "loading…",
// the empty text, or the header and one line a row with the selection.
func (l *rowList[T]) view(th theme, title string, keys help.KeyMap, empty, header string, line func(T) string) string {
	out := []string{panelTitle(th, title, keys, l.w)}
	switch {
	case l.err != "":
		return joinLines(append(out, th.bad.Render(clip(l.err, l.w))))
	case !l.done:
		return joinLines(append(out, th.dim.Render("  loading…")))
	case len(l.rows) == 0:
		return joinLines(append(out, th.dim.Render("  "+empty)))
	}
	out = append(out, th.dim.Render(clip(header, l.w)))
	rows := make([]string, len(l.rows))
	for i, r := range l.rows {
		rows[i] = line(r)
	}
	return joinLines(append(out, listRows(th, rows, l.sel, l.w, l.h-len(out))...))
}

package tui

import (
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"github.com/sahilm/fuzzy"

	"polly/tools"
)

// The completion list sits above the input while what is typed can be
// completed: a /command (with its description), a persona after
// "/persona ", a project file after "@". Tab inserts the highlighted
// entry, ↑↓ choose, Enter runs a command (or inserts a file), Esc hides
// the list until the word changes. Tab in a draft with no list completes
// the path before the cursor.

// compKind is what a list completes.
type compKind int

const (
	compNone compKind = iota
	compCommand
	compPersona
	compFile // after @
	compPath // Tab on a path-like word
)

// suggestion is one entry of the list.
type suggestion struct {
	value string // what replaces the word
	label string // what the list shows
	desc  string // its description, dimmed
	arg   bool   // a command that takes an argument: enter inserts it instead of running it
	dir   bool   // a directory: no space after it, its files come next
}

// completer holds the list's state between keys.
type completer struct {
	query  string // the word the list was made for
	kind   compKind
	items  []suggestion
	sel    int
	hidden string // the word esc hid the list for

	pathWord string // the word Tab asked paths for (compPath)

	files     []string // the project's files, from the last read
	filesAt   time.Time
	reading   bool
	filesErr  string
	truncated bool
}

// Limits of the list: rows shown, files read.
const (
	compRows    = 8
	compMatches = 200
	filesMax    = 50000
	filesMaxAge = 10 * time.Second
)

// filesMsg is the project's file list, read in a Cmd.
type filesMsg struct {
	files     []string
	truncated bool
	err       error
}

// compWord is what the cursor is completing: the kind and the word
// before the cursor.
func (m *Model) compWord() (compKind, string) {
	v := m.input.Value()
	lines := strings.Split(v, "\n")
	row := min(m.input.Line(), len(lines)-1)
	line := []rune(lines[row])
	before := string(line[:min(m.input.Column(), len(line))])
	if len(lines) == 1 && strings.HasPrefix(v, "/") {
		name, arg, hasArg := strings.Cut(before, " ")
		if !hasArg {
			return compCommand, name
		}
		if name == "/persona" && !strings.Contains(arg, " ") {
			return compPersona, arg
		}
		return compNone, ""
	}
	w := lastWord(before)
	if strings.HasPrefix(w, "@") {
		return compFile, w
	}
	if m.comp.kind == compPath && w == m.comp.pathWord {
		return compPath, w
	}
	return compNone, ""
}

// lastWord is the text after the last space.
func lastWord(s string) string {
	i := strings.LastIndexFunc(s, unicode.IsSpace)
	return s[i+1:]
}

// completion brings the list up to date with the input and returns it
// (no items: no list).
func (m *Model) completion() *completer {
	c := &m.comp
	kind, word := m.compWord()
	key := string(rune('0'+kind)) + word
	if key == c.query && kind == c.kind {
		return c
	}
	c.query, c.kind, c.sel = key, kind, 0
	if kind != compPath {
		c.pathWord = ""
	}
	c.items = nil
	if c.hidden != "" && c.hidden != key {
		c.hidden = ""
	}
	switch kind {
	case compCommand:
		c.items = m.commandSuggestions(word)
	case compPersona:
		for _, p := range m.personas {
			n := strings.ToLower(p.p.Name)
			if strings.HasPrefix(n, strings.ToLower(word)) {
				c.items = append(c.items, suggestion{value: n, label: n, desc: p.p.Description})
			}
		}
	case compFile:
		c.items = fileSuggestions(c.files, strings.TrimPrefix(word, "@"), "@", false)
	case compPath:
		c.items = fileSuggestions(c.files, word, "", true)
	}
	return c
}

// open: the list is shown.
func (c *completer) open() bool { return len(c.items) > 0 && c.hidden != c.query }

// commandSuggestions are the commands starting with what was typed, then
// those containing it.
func (m *Model) commandSuggestions(typed string) []suggestion {
	var first, then []suggestion
	q := strings.ToLower(strings.TrimPrefix(typed, "/"))
	for _, c := range m.commandTable() {
		s := suggestion{value: c.name, label: strings.TrimSpace(c.name + " " + c.args), desc: c.help, arg: c.args != ""}
		name := strings.TrimPrefix(c.name, "/")
		switch {
		case strings.HasPrefix(name, q):
			first = append(first, s)
		case len(q) > 1 && strings.Contains(name, q):
			then = append(then, s)
		}
	}
	return append(first, then...)
}

// fileSuggestions fuzzy-matches the project's files against q (prefix
// matching for Tab's paths: a path is typed from its start).
func fileSuggestions(files []string, q, mark string, prefix bool) []suggestion {
	var out []suggestion
	add := func(f string) {
		out = append(out, suggestion{value: mark + quotePath(f), label: mark + quotePath(f), dir: strings.HasSuffix(f, "/")})
	}
	switch {
	case prefix: // the next part of the path only, as a shell does
		for _, f := range files {
			rest, ok := strings.CutPrefix(f, q)
			if ok && rest != "" && !strings.Contains(strings.TrimSuffix(rest, "/"), "/") && len(out) < compMatches {
				add(f)
			}
		}
	case q == "":
		for _, f := range files {
			if !strings.Contains(strings.TrimSuffix(f, "/"), "/") && len(out) < compMatches {
				add(f) // the top level first
			}
		}
	default:
		for i, match := range fuzzy.Find(q, files) {
			if i == compMatches {
				break
			}
			add(match.Str)
		}
	}
	return out
}

// quotePath is a path as it can be typed: as it is, or Go-quoted when it
// holds spaces, quotes, backslashes or control characters (a newline or
// an escape in a file name reaches neither the input nor the terminal).
func quotePath(p string) string {
	if strings.IndexFunc(p, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '"' || r == '\\' || r == unicode.ReplacementChar || !unicode.IsPrint(r)
	}) < 0 {
		return p
	}
	return strconv.Quote(p)
}

// needFiles starts reading the project's files when a list needs them
// and the last read is missing or old.
func (m *Model) needFiles() tea.Cmd {
	c := &m.comp
	kind, _ := m.compWord()
	if kind != compFile && kind != compPath || c.reading || m.app == nil {
		return nil
	}
	if !c.filesAt.IsZero() && m.now().Sub(c.filesAt) < filesMaxAge {
		return nil
	}
	c.reading = true
	root, state, ctx := m.app.Deps.ProjectDir, m.app.Deps.StateDir, m.ctx
	return func() tea.Msg {
		files, err := tools.ProjectFiles(ctx, root, filesMax)
		truncated := errors.Is(err, tools.ErrTooManyFiles)
		if truncated {
			err = nil
		}
		// Polly's own state is no file to mention.
		if rel, rerr := filepath.Rel(root, state); rerr == nil && state != "" && !strings.HasPrefix(rel, "..") {
			files = slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(f, filepath.ToSlash(rel)+"/") })
		}
		return filesMsg{files: files, truncated: truncated, err: err}
	}
}

func (m *Model) filesRead(msg filesMsg) {
	c := &m.comp
	c.reading, c.filesAt, c.files, c.truncated = false, m.now(), msg.files, msg.truncated
	c.filesErr = ""
	if msg.err != nil {
		c.filesErr = msg.err.Error()
	}
	c.query = "\x00" // make the list again with the files
	if c.kind == compPath {
		m.finishPath()
	}
}

// compKey handles a key while the list is shown; false leaves it to the
// rest of the screen.
func (m *Model) compKey(k string) (tea.Cmd, bool) {
	c := m.completion()
	if !c.open() {
		return nil, false
	}
	switch k {
	case "up", "ctrl+p":
		c.sel = (c.sel + len(c.items) - 1) % len(c.items)
	case "down", "ctrl+n":
		c.sel = (c.sel + 1) % len(c.items)
	case "esc":
		c.hidden = c.query
	case "tab":
		m.acceptCompletion()
	case "enter":
		s := c.items[c.sel]
		kind := c.kind
		if _, word := m.compWord(); word == s.value && kind == compCommand {
			return m.sendInput(), true // typed whole: run it
		}
		m.acceptCompletion()
		if kind == compCommand && !s.arg || kind == compPersona {
			return m.sendInput(), true
		}
	default:
		return nil, false
	}
	return nil, true
}

// acceptCompletion replaces the word before the cursor with the
// highlighted entry (and a space unless more is typed after it).
func (m *Model) acceptCompletion() {
	c := m.completion()
	if !c.open() {
		return
	}
	s := c.items[c.sel]
	_, word := m.compWord()
	for range []rune(word) {
		m.input, _ = m.input.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	v := s.value
	if !s.dir {
		v += " "
	}
	m.input.InsertString(v)
	c.kind, c.pathWord = compNone, ""
	c.query = "\x00"
}

// completePath is Tab in a draft with no list: the word before the cursor
// completed as a project path — at once when one entry matches, else as
// far as the matches agree, with the list of them.
func (m *Model) completePath() tea.Cmd {
	_, before := m.cursorLine()
	w := lastWord(before)
	if w == "" {
		m.flash = "tab completes paths and commands in a draft; send or clear it (ctrl+c) to switch personas"
		return nil
	}
	m.comp.kind, m.comp.pathWord, m.comp.query = compPath, w, "\x00"
	if cmd := m.needFiles(); cmd != nil {
		return cmd // filesRead completes once the files are read
	}
	m.finishPath()
	return nil
}

// finishPath completes a path Tab asked for, with the files read.
func (m *Model) finishPath() {
	c := m.completion()
	switch {
	case c.kind != compPath:
	case len(c.items) == 1:
		m.acceptCompletion()
	case len(c.items) == 0:
		m.flash = "no project file or directory starts with " + quotePath(c.pathWord)
		c.kind, c.pathWord = compNone, ""
	default:
		common := c.items[0].value
		for _, s := range c.items[1:] {
			for !strings.HasPrefix(s.value, common) {
				common = common[:len(common)-1]
			}
		}
		if len(common) > len(c.pathWord) && common == quotePath(common) {
			for range []rune(c.pathWord) {
				m.input, _ = m.input.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
			}
			m.input.InsertString(common)
			c.pathWord, c.query = common, "\x00"
		}
	}
}

// cursorLine is the cursor's line and its text before the cursor.
func (m *Model) cursorLine() (string, string) {
	lines := strings.Split(m.input.Value(), "\n")
	line := []rune(lines[min(m.input.Line(), len(lines)-1)])
	return string(line), string(line[:min(m.input.Column(), len(line))])
}

// compLines draws the list (at most compRows rows) for the bottom of the
// chat.
func (m *Model) compLines(rows int) []string {
	c := m.completion()
	th := m.th
	if rows < 1 {
		return nil
	}
	if len(c.items) == 0 && c.reading && (c.kind == compFile || c.kind == compPath) {
		return []string{th.dim.Render("  reading the project's files…")}
	}
	if !c.open() {
		return nil
	}
	n := min(compRows, rows, len(c.items))
	lw := 0
	for _, s := range c.items {
		lw = max(lw, widthOf(s.label))
	}
	lw = min(lw, max(12, m.w/2))
	lines := make([]string, len(c.items))
	for i, s := range c.items {
		mark := "  "
		if i == c.sel {
			mark = "▸ "
		}
		l := mark + clip(s.label, lw)
		if s.desc != "" {
			l += strings.Repeat(" ", max(1, lw+4-widthOf(l))) + th.dim.Render(s.desc)
		}
		lines[i] = l
	}
	return listRows(th, lines, c.sel, m.w, n)
}

// compHint is the info line while the list is shown.
func (m *Model) compHint() string {
	c := m.completion()
	what := "tab inserts · enter runs"
	switch c.kind {
	case compFile, compPath:
		what = "tab or enter inserts"
	case compPersona:
		what = "tab inserts · enter switches"
	}
	hint := "↑↓ choose · " + what + " · esc hides"
	if len(c.items) > compRows {
		hint = strconv.Itoa(c.sel+1) + " of " + strconv.Itoa(len(c.items)) + " · " + hint
	}
	if c.truncated && (c.kind == compFile || c.kind == compPath) {
		hint += " · the first " + fmtCount(filesMax) + " files only"
	}
	return hint
}

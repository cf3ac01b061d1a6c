package tui

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"polly/tools"
	"polly/tools/permission"
	"polly/tools/sandbox"
)

var denyOnQuit = permission.Reply{Answer: permission.Deny, Reason: "Polly is quitting"}

// keyGuard is how long a new question ignores keys: a key pressed for
// what was on screen before (type-ahead, a y meant for the previous
// question) must not answer it.
const keyGuard = 400 * time.Millisecond

// permissionDialog asks the user about the agents' tool calls, oldest
// question first: y once, a for this session, w once with network (in a
// sandbox), n deny (then an optional reason and Enter), esc deny. It is
// drawn over the screen while questions wait. What the call would do (the
// whole command, the diff) is a scrollable body; keys are ignored for
// keyGuard after each question appears. Only key presses answer it: no
// agent or command has a way in.
type permissionDialog struct {
	look
	keys    dialogKeys
	asks    []pendingAsk
	denying bool // typing a reason for a denial
	reason  string
	w, h    int
	now     func() time.Time
	shown   time.Time              // when the first question appeared
	body    viewport.Model         // what the first question's call does
	bodyFor bodyKey                // what body holds
	mode    func() permission.Mode // the mode now, for the e key
	root    string                 // the project: paths in titles are shown from it
}

// bodyKey is what the body was laid out for.
type bodyKey struct {
	id     int64
	width  int
	height int
}

// dialogReadyMsg redraws the dialog when its key guard ends.
type dialogReadyMsg struct{}

// pendingAsk is a question with the name of the persona asking.
type pendingAsk struct {
	askMsg
	who string
}

// answeredMsg tells the root what was decided, for a note in the chat.
type answeredMsg struct {
	req   permission.Request
	reply permission.Reply
}

type dialogKeys struct {
	Once, Session, Edits, Network, Deny, DenyNow key.Binding // the question
	Send, Skip                                   key.Binding // the reason for a denial
	pager                                        pagerKeys   // the body
}

func newDialogKeys() dialogKeys {
	return dialogKeys{
		Once:    bind("y", "allow once", "y", "Y"),
		Session: bind("a", "allow for this session", "a", "A"),
		Edits:   bind("e", "allow all edits this session (auto-edit)", "e", "E"),
		Network: bind("w", "allow once with network", "w", "W"),
		Deny:    bind("n", "deny…", "n", "N"),
		DenyNow: bind("esc", "deny", "esc"),
		Send:    bind("enter", "deny with the reason typed", "enter"),
		Skip:    bind("esc", "deny without a reason", "esc"),
		pager:   newPagerKeys(),
	}
}

func (k dialogKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Once, k.Session, k.Edits, k.Network, k.Deny, k.DenyNow}
}
func (k dialogKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.ShortHelp(), {k.Send, k.Skip}, {k.pager.Scroll, k.pager.Page, k.pager.Ends}}
}

func (k dialogKeys) groupTitles() []string {
	return []string{"", "after n: typing the reason", "a command or diff longer than the box"}
}

// allEditsMsg is "allow all edits this session": the root switches the
// mode to auto-edit.
type allEditsMsg struct{}

// offersEdits: e is offered for a file edit inside the project while the
// mode is ask (auto-edit would not have asked; a protected path asks in
// every mode).
func (d *permissionDialog) offersEdits(r permission.Request) bool {
	return r.Access.Kind == tools.AccessWrite && !r.Protected && d.mode != nil && d.mode() == permission.Ask
}

func newPermissionDialog(lk look, now func() time.Time) *permissionDialog {
	return &permissionDialog{look: lk, keys: newDialogKeys(), now: now}
}

func (d *permissionDialog) Init() tea.Cmd    { return nil }
func (d *permissionDialog) SetSize(w, h int) { d.w, d.h = w, h }
func (d *permissionDialog) open() bool       { return len(d.asks) > 0 }

// accepting: the first question has been on screen long enough for a key
// to be an answer to it.
func (d *permissionDialog) accepting() bool {
	return d.open() && d.now().Sub(d.shown) >= keyGuard
}

// add queues a question; who is the asking persona's name.
func (d *permissionDialog) add(a askMsg, who string) tea.Cmd {
	d.asks = append(d.asks, pendingAsk{askMsg: a, who: who})
	if len(d.asks) == 1 {
		return d.showNext()
	}
	return nil
}

// showNext starts the key guard of the question now first.
func (d *permissionDialog) showNext() tea.Cmd {
	d.denying, d.reason = false, ""
	if !d.open() {
		return nil
	}
	d.shown = d.now()
	return tea.Tick(keyGuard, func(time.Time) tea.Msg { return dialogReadyMsg{} })
}

// drop withdraws a question whose run was cancelled.
func (d *permissionDialog) drop(id int64) tea.Cmd {
	for i, a := range d.asks {
		if a.id == id {
			d.asks = append(d.asks[:i], d.asks[i+1:]...)
			if i == 0 {
				return d.showNext()
			}
			return nil
		}
	}
	return nil
}

// denyAll answers every question with r (Polly is quitting).
func (d *permissionDialog) denyAll(r permission.Reply) {
	for _, a := range d.asks {
		a.reply <- r
	}
	d.asks, d.denying, d.reason = nil, false, ""
}

func (d *permissionDialog) Update(msg tea.Msg) (*permissionDialog, tea.Cmd) {
	switch msg := msg.(type) {
	case lookMsg:
		d.look = msg.look
	case tea.PasteMsg:
		if d.denying && d.accepting() {
			d.reason += msg.Content
		}
	case tea.KeyPressMsg:
		if d.accepting() { // type-ahead is dropped, not kept for later
			return d, d.key(msg)
		}
	case tea.MouseWheelMsg:
		if k, ok := wheelKey(msg); ok && d.open() {
			pageViewport(&d.body, k)
		}
	}
	return d, nil
}

func (d *permissionDialog) key(msg tea.KeyPressMsg) tea.Cmd {
	k := d.keys
	if !d.denying && key.Matches(msg, k.pager.Scroll, k.pager.Page, k.pager.Ends) {
		pageViewport(&d.body, msg.String())
		return nil
	}
	if d.denying {
		switch {
		case key.Matches(msg, k.Send):
			return d.answer(permission.Reply{Answer: permission.Deny, Reason: strings.TrimSpace(d.reason)})
		case key.Matches(msg, k.Skip):
			return d.answer(permission.Reply{Answer: permission.Deny})
		default:
			typeInto(&d.reason, msg)
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Once):
		return d.answer(permission.Reply{Answer: permission.AllowOnce})
	case key.Matches(msg, k.Session):
		return d.answer(permission.Reply{Answer: permission.AllowSession})
	case key.Matches(msg, k.Edits):
		if d.offersEdits(d.asks[0].req) {
			return tea.Batch(d.answer(permission.Reply{Answer: permission.AllowOnce}), msgCmd(allEditsMsg{}))
		}
	case key.Matches(msg, k.Network):
		if d.asks[0].req.Sandbox != "" {
			return d.answer(permission.Reply{Answer: permission.AllowOnce, Network: true})
		}
	case key.Matches(msg, k.Deny):
		d.denying, d.reason = true, ""
	case key.Matches(msg, k.DenyNow):
		return d.answer(permission.Reply{Answer: permission.Deny})
	}
	return nil
}

// answer replies to the oldest question (the reply channel is buffered,
// so this never blocks the loop) and tells the root, which notes the
// decision in the chat.
func (d *permissionDialog) answer(r permission.Reply) tea.Cmd {
	a := d.asks[0]
	d.asks = d.asks[1:]
	a.reply <- r
	return tea.Batch(msgCmd(answeredMsg{req: a.req, reply: r}), d.showNext())
}

// answerNote is the chat's line about a decision.
func answerNote(msg answeredMsg, current string) string {
	r := msg.reply
	what := map[permission.Answer]string{permission.AllowOnce: "allowed once", permission.AllowSession: "allowed for this session", permission.Deny: "denied"}[r.Answer]
	if r.Network && r.Answer != permission.Deny {
		what += " with network"
	}
	text := fmt.Sprintf("%s %s", msg.req.Tool, what)
	if msg.req.Agent != "" && msg.req.Agent != current {
		text = msg.req.Agent + ": " + text
	}
	if r.Reason != "" {
		text += ": " + r.Reason
	}
	return text
}

// View draws the dialog: tool, why it asks, what it will do (the command,
// the URL or the diff), and the keys.
func (d *permissionDialog) View() string {
	if !d.open() {
		return ""
	}
	th := d.th
	a := d.asks[0]
	w := min(d.w-4, 100)
	inner := max(10, w-4)
	title := askTitle(a.who, a.req, d.root)
	if n := len(d.asks); n > 1 {
		title += fmt.Sprintf("  (%d more waiting)", n-1)
	}
	head := []string{th.title.Render(clip(title, inner))}
	if a.req.Reason != "" {
		why := plainLines(unquote(reasonSentence(a.req.Reason)), inner)
		if len(why) > 2 {
			why = append(why[:1], clip(why[1], inner-1)+"…")
		}
		head = append(head, why...)
	}
	if a.req.Protected {
		head = append(head, th.warn.Render(clip("! protected: no mode, flag or rule allows this; only you can", inner)))
	}
	head = append(head, "")
	var foot []string
	if d.denying {
		foot = []string{"", "Reason for the model (optional), enter to deny:",
			th.accent.Render("› ") + clip(d.reason, inner-3) + "▏"}
	} else {
		keys := d.keys.ShortHelp()
		if a.req.Sandbox == "" {
			keys = slices.DeleteFunc(keys, func(b key.Binding) bool { return b.Help() == d.keys.Network.Help() })
		}
		if !d.offersEdits(a.req) {
			keys = slices.DeleteFunc(keys, func(b key.Binding) bool { return b.Help() == d.keys.Edits.Help() })
		}
		foot = append([]string{""}, keyLines(th, keys, inner)...)
		if a.req.Sandbox == sandbox.Unsandboxed.String() {
			foot = append(foot, th.warn.Render(clip("runs WITHOUT the OS sandbox (not available here)", inner)))
		} else if a.req.Sandbox != "" {
			sb := "runs in the " + a.req.Sandbox + " sandbox"
			if a.req.Network {
				sb += "; it asks for network access (w allows it)"
			} else {
				sb += ", without network unless you press w"
			}
			foot = append(foot, th.dim.Render(clip(sb, inner)))
		}
		if a.req.Session != "" {
			foot = append(foot, th.dim.Render(clip(unquote("(a allows "+a.req.Session+" until Polly quits)"), inner)))
		}
	}
	if !d.accepting() {
		foot = append(foot, th.dim.Render(clip("(keys open in a moment: a key pressed before the question showed does not answer it)", inner)))
	}
	// The box fits between the tabs and the status bar (2 border lines);
	// the body takes what is left and scrolls, with two lines saying so.
	height := max(1, d.h-4-len(head)-len(foot))
	if all := d.bodyLines(a, inner); len(all) > height {
		height = max(1, height-2)
	}
	if k := (bodyKey{a.id, inner, height}); k != d.bodyFor {
		offset := d.body.YOffset()
		if k.id != d.bodyFor.id {
			offset = 0
		}
		d.body = viewport.New(viewport.WithWidth(inner), viewport.WithHeight(height))
		d.body.SetContentLines(d.bodyLines(a, inner))
		d.body.SetYOffset(offset)
		d.bodyFor = k
	}
	body := strings.Split(d.body.View(), "\n")
	if n := d.body.TotalLineCount(); n <= height {
		body = body[:n]
	} else {
		first := d.body.YOffset() + 1
		last := min(n, first+height-1)
		more := th.dim.Render("(end)")
		if last < n {
			more = th.warn.Render(fmt.Sprintf("%d more lines below: read them before you answer", n-last))
		}
		body = append(body, clip(more, inner), th.dim.Render(clip(fmt.Sprintf("lines %d–%d of %d · ↑↓ pgup/pgdn home/end scroll", first, last, n), inner)))
	}
	lines := append(append(head, body...), foot...)
	return th.box.Width(w).Render(strings.Join(fitLines(lines, inner), "\n"))
}

// bodyLines is what a question's call does, every character of it: the
// command (wrapped, continuation lines indented under the first "$ ",
// characters that do not print shown as escapes), the diff, the URL or
// the paths.
func (d *permissionDialog) bodyLines(a pendingAsk, w int) []string {
	acc := a.req.Access
	preview := acc.Preview
	switch {
	case preview != "":
	case acc.Command != "":
		preview = acc.Command
	case acc.URL != "":
		preview = acc.URL
	default:
		preview = strings.Join(acc.Paths, "\n")
	}
	if (acc.Kind == tools.AccessWrite || acc.Kind == tools.AccessMemory) && looksLikeDiff(preview) {
		return d.r.diffLinesWrapped(preview, w)
	}
	prefix := ""
	if acc.Kind == tools.AccessExecute {
		prefix = "$ "
	}
	return wrapExact(preview, w, prefix)
}

// wrapExact wraps s at w columns without losing a character: spaces at a
// break stay, control and invisible format characters (a carriage
// return, ESC, zero-width and bidi marks) are shown as \xNN or \uNNNN.
// The first line starts with prefix, every other line with as many spaces.
func wrapExact(s string, w int, prefix string) []string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0xa0 && r >= 0x80 || unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	indent := strings.Repeat(" ", widthOf(prefix))
	w = max(2, w-len(indent))
	var out []string
	emit := func(part string) {
		if len(out) == 0 {
			out = append(out, prefix+part)
		} else {
			out = append(out, indent+part)
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		// Break after the last space that fits (the space stays, at the
		// end of the line), or inside a word longer than the line.
		rs, start, space, cols := []rune(line), 0, -1, 0
		for i := 0; i < len(rs); i++ {
			cw := ansi.StringWidth(string(rs[i]))
			if cols+cw > w && i > start {
				cut := i
				if space >= start && rs[i] != ' ' {
					cut = space + 1
				}
				emit(string(rs[start:cut]))
				start, cols, i = cut, 0, cut-1
				continue
			}
			if rs[i] == ' ' {
				space = i
			}
			cols += cw
		}
		emit(string(rs[start:]))
	}
	return out
}

// keyLines lists every answer key, wrapped to w: none is cut off.
func keyLines(th theme, keys []key.Binding, w int) []string {
	var out []string
	line := ""
	for _, b := range keys {
		k := th.key.Render(b.Help().Key) + " " + b.Help().Desc
		switch {
		case line == "":
			line = k
		case widthOf(line)+3+widthOf(k) <= w:
			line += "   " + k
		default:
			out, line = append(out, line), k
		}
	}
	return append(out, line)
}

func looksLikeDiff(s string) bool {
	return strings.HasPrefix(s, "---") || strings.HasPrefix(s, "@@") || strings.Contains(s, "\n@@ ")
}

// askTitle puts the question as a sentence: who wants to do what.
func askTitle(who string, r permission.Request, root string) string {
	paths := r.Access.Paths
	if root != "" {
		paths = make([]string, len(r.Access.Paths))
		for i, p := range r.Access.Paths {
			paths[i] = p
			if rel, err := filepath.Rel(root, p); err == nil && filepath.IsAbs(p) && !strings.HasPrefix(rel, "..") {
				paths[i] = rel
			}
		}
	}
	what := "use " + r.Tool
	switch r.Access.Kind {
	case tools.AccessExecute:
		what = "run this command"
	case tools.AccessWrite:
		what = "change files with " + r.Tool
		if len(paths) == 1 {
			what = "write " + paths[0]
		}
	case tools.AccessNetwork:
		what = "fetch this address"
	case tools.AccessMemory:
		what = "change your workspace memory"
		if len(paths) == 1 {
			what += " (" + paths[0] + ")"
		}
	}
	return "Allow " + who + " to " + what + "?"
}

// askerName is the name of the persona asking: the current one when the
// question names no agent.
func (m *Model) askerName(r permission.Request) string {
	if r.Agent == "" {
		return m.current().p.Name
	}
	id, _, _ := strings.Cut(r.Agent, "#")
	if p, ok := m.app.Personas.Find(id); ok {
		return p.Name
	}
	return r.Agent
}

// unquote turns Markdown code quotes into typographic ones: the dialog is
// read, not rendered.
// reasonSentence makes the policy's reason read as a sentence: "writes
// x, which needs approval" becomes "It writes x, …"; a reason that names
// the part of a command line it is about ("`go run x`: go run is not
// read-only") becomes "“go run x” — go run is not read-only".
func reasonSentence(r string) string {
	r = strings.TrimSuffix(r, ".") + "."
	if strings.HasPrefix(r, "`") {
		if end := strings.Index(r[1:], "`: "); end >= 0 {
			return r[:end+2] + " —" + r[end+3:]
		}
		return r
	}
	return "It " + r
}

func unquote(s string) string {
	for open := true; strings.Contains(s, "`"); open = !open {
		q := "”"
		if open {
			q = "“"
		}
		s = strings.Replace(s, "`", q, 1)
	}
	return s
}

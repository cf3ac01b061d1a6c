package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"polly/tools"
	"polly/tools/permission"
)

var denyOnQuit = permission.Reply{Answer: permission.Deny, Reason: "Polly is quitting"}

// permissionDialog asks the user about the agents' tool calls, oldest
// question first: y once, a for this session, w once with network (in a
// sandbox), n deny (then an optional reason and Enter), esc deny. It is
// drawn over the screen while questions wait.
type permissionDialog struct {
	look
	keys    dialogKeys
	asks    []pendingAsk
	denying bool // typing a reason for a denial
	reason  string
	w, h    int
	mode    func() permission.Mode // the mode now, for the e key
}

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
	}
}

func (k dialogKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Once, k.Session, k.Edits, k.Network, k.Deny, k.DenyNow}
}
func (k dialogKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.ShortHelp(), {k.Send, k.Skip}}
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

func newPermissionDialog(lk look) *permissionDialog {
	return &permissionDialog{look: lk, keys: newDialogKeys()}
}

func (d *permissionDialog) Init() tea.Cmd    { return nil }
func (d *permissionDialog) SetSize(w, h int) { d.w, d.h = w, h }
func (d *permissionDialog) open() bool       { return len(d.asks) > 0 }

// add queues a question; who is the asking persona's name.
func (d *permissionDialog) add(a askMsg, who string) {
	d.asks = append(d.asks, pendingAsk{askMsg: a, who: who})
}

// drop withdraws a question whose run was cancelled.
func (d *permissionDialog) drop(id int64) {
	for i, a := range d.asks {
		if a.id == id {
			d.asks = append(d.asks[:i], d.asks[i+1:]...)
			if i == 0 {
				d.denying, d.reason = false, ""
			}
			return
		}
	}
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
		if d.denying {
			d.reason += msg.Content
		}
	case tea.KeyPressMsg:
		if d.open() {
			return d, d.key(msg)
		}
	}
	return d, nil
}

func (d *permissionDialog) key(msg tea.KeyPressMsg) tea.Cmd {
	k := d.keys
	if d.denying {
		switch {
		case key.Matches(msg, k.Send):
			return d.answer(permission.Reply{Answer: permission.Deny, Reason: strings.TrimSpace(d.reason)})
		case key.Matches(msg, k.Skip):
			return d.answer(permission.Reply{Answer: permission.Deny})
		case msg.String() == "backspace":
			if r := []rune(d.reason); len(r) > 0 {
				d.reason = string(r[:len(r)-1])
			}
		case msg.String() == "space":
			d.reason += " "
		default:
			d.reason += msg.Text
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
	d.denying, d.reason = false, ""
	a.reply <- r
	return msgCmd(answeredMsg{req: a.req, reply: r})
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
	title := askTitle(a.who, a.req)
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
		h := help.New()
		h.ShortSeparator = "   "
		h.Styles = help.Styles{ShortKey: th.key}
		foot = []string{"", h.ShortHelpView(keys)}
		if a.req.Sandbox != "" {
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
	preview := a.req.Access.Preview
	if preview == "" {
		switch {
		case a.req.Access.Command != "":
			preview = a.req.Access.Command
		case a.req.Access.URL != "":
			preview = a.req.Access.URL
		default:
			preview = strings.Join(a.req.Access.Paths, "\n")
		}
	}
	var body []string
	if (a.req.Access.Kind == tools.AccessWrite || a.req.Access.Kind == tools.AccessMemory) && looksLikeDiff(preview) {
		body = d.r.diffLines(preview, inner)
	} else {
		body = plainLines(preview, inner)
		if a.req.Access.Kind == tools.AccessExecute {
			body = prefixed(body, "$ ")
		}
	}
	// The box fits between the tabs and the status bar (2 border lines).
	maxBody := max(1, d.h-4-len(head)-len(foot))
	if len(body) > maxBody {
		n := len(body) - maxBody + 1
		body = append(body[:maxBody-1], th.dim.Render("… "+plural(n, "more line")))
	}
	lines := append(append(head, body...), foot...)
	return th.box.Width(w).Render(strings.Join(fitLines(lines, inner), "\n"))
}

func looksLikeDiff(s string) bool {
	return strings.HasPrefix(s, "---") || strings.HasPrefix(s, "@@") || strings.Contains(s, "\n@@ ")
}

// askTitle puts the question as a sentence: who wants to do what.
func askTitle(who string, r permission.Request) string {
	what := "use " + r.Tool
	switch r.Access.Kind {
	case tools.AccessExecute:
		what = "run this command"
	case tools.AccessWrite:
		what = "change files with " + r.Tool
		if len(r.Access.Paths) == 1 {
			what = "write " + r.Access.Paths[0]
		}
	case tools.AccessNetwork:
		what = "fetch this address"
	case tools.AccessMemory:
		what = "change your workspace memory"
		if len(r.Access.Paths) == 1 {
			what += " (" + r.Access.Paths[0] + ")"
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

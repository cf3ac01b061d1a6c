package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/tools"
	"polly/tools/permission"
)

var denyOnQuit = permission.Reply{Answer: permission.Deny, Reason: "Polly is quitting"}

// permissionKey answers the oldest question: y once, a for this session,
// n deny (then an optional reason and Enter). Esc denies without a reason.
func (m *Model) permissionKey(msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	if m.denying {
		switch k {
		case "enter":
			m.answer(permission.Reply{Answer: permission.Deny, Reason: strings.TrimSpace(m.denyReason)})
		case "esc":
			m.answer(permission.Reply{Answer: permission.Deny})
		case "backspace":
			if r := []rune(m.denyReason); len(r) > 0 {
				m.denyReason = string(r[:len(r)-1])
			}
		case "space":
			m.denyReason += " "
		default:
			if msg.Text != "" {
				m.denyReason += msg.Text
			}
		}
		return nil
	}
	switch k {
	case "y", "Y":
		m.answer(permission.Reply{Answer: permission.AllowOnce})
	case "a", "A":
		m.answer(permission.Reply{Answer: permission.AllowSession})
	case "w", "W":
		if m.asks[0].req.Sandbox != "" {
			m.answer(permission.Reply{Answer: permission.AllowOnce, Network: true})
		}
	case "n", "N":
		m.denying, m.denyReason = true, ""
	case "esc":
		m.answer(permission.Reply{Answer: permission.Deny})
	}
	return nil
}

// answer replies to the oldest question (the reply channel is buffered,
// so this never blocks the loop) and notes the decision in the chat.
func (m *Model) answer(r permission.Reply) {
	a := m.asks[0]
	m.asks = m.asks[1:]
	m.denying, m.denyReason = false, ""
	a.reply <- r
	what := map[permission.Answer]string{permission.AllowOnce: "allowed once", permission.AllowSession: "allowed for this session", permission.Deny: "denied"}[r.Answer]
	if r.Network && r.Answer != permission.Deny {
		what += " with network"
	}
	text := fmt.Sprintf("%s %s", a.req.Tool, what)
	if a.req.Agent != "" && a.req.Agent != m.current().p.ID {
		text = a.req.Agent + ": " + text
	}
	if r.Reason != "" {
		text += ": " + r.Reason
	}
	m.current().tr.add(&item{kind: kNotice, text: text})
}

func (m *Model) dropAsk(id int64) {
	for i, a := range m.asks {
		if a.id == id {
			m.asks = append(m.asks[:i], m.asks[i+1:]...)
			if i == 0 {
				m.denying, m.denyReason = false, ""
			}
			return
		}
	}
}

// permissionBox draws the dialog: tool, why it asks, what it will do
// (the command, the URL or the diff), and the keys.
func (m *Model) permissionBox() string {
	th := m.th
	a := m.asks[0]
	w := min(m.w-4, 100)
	inner := max(10, w-4)
	title := m.askTitle(a.req)
	if n := len(m.asks); n > 1 {
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
	if m.denying {
		foot = []string{"", "Reason for the model (optional), enter to deny:",
			th.accent.Render("› ") + clip(m.denyReason, inner-3) + "▏"}
	} else {
		k := th.key.Render
		keys := k("y") + " allow once   " + k("a") + " allow for this session   "
		if a.req.Sandbox != "" {
			keys += k("w") + " allow once with network   "
		}
		foot = []string{"", keys + k("n") + " deny…   " + k("esc") + " deny"}
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
	if a.req.Access.Kind == tools.AccessWrite && looksLikeDiff(preview) {
		body = m.r.diffLines(preview, inner)
	} else {
		body = plainLines(preview, inner)
		if a.req.Access.Kind == tools.AccessExecute {
			body = prefixed(body, "$ ")
		}
	}
	// The box fits between the tabs and the status bar (2 border lines).
	maxBody := max(1, m.h-4-len(head)-len(foot))
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
func (m *Model) askTitle(r permission.Request) string {
	who := m.current().p.Name
	if r.Agent != "" {
		id, _, _ := strings.Cut(r.Agent, "#")
		if p, ok := m.app.Personas.Find(id); ok {
			who = p.Name
		} else {
			who = r.Agent
		}
	}
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
	}
	return "Allow " + who + " to " + what + "?"
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

package tui

import (
	"context"
	"errors"
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/agent"
)

// ! at the start of the input is shell mode: the rest of the line runs as
// a command through the persona's run_command — the same permission
// policy and sandbox as the model's calls (Session.Shell) — and the
// command and its output join the persona's conversation, shown as a
// block like the model's calls and seen by the model with the next
// message.

// shellCommand is the command of a ! line; ok is false for other input.
func shellCommand(text string) (string, bool) {
	cmd, ok := strings.CutPrefix(strings.TrimLeft(text, " "), "!")
	return strings.TrimSpace(cmd), ok
}

// shellDoneMsg ends a ! command.
type shellDoneMsg struct {
	mark    uint64
	sess    *agent.Session
	persona string
	err     error
}

func (m shellDoneMsg) markOf() uint64 { return m.mark }

// runShell starts a ! command on the current persona.
func (m *Model) runShell(d draft, command string) tea.Cmd {
	p := m.current()
	switch {
	case command == "":
		m.flash = "type a command after ! (it runs like the model's run_command, in the sandbox)"
		m.setDraft(d)
		return nil
	case m.sess == nil || m.app == nil:
		m.flash = "the session is not open yet"
		m.setDraft(d)
		return nil
	case p.busy():
		m.flash = p.p.Name + " is busy; ! commands run between turns (esc cancels the turn)"
		m.setDraft(d)
		return nil
	}
	m.remember(d)
	p.tr.toEnd()
	ctx, cancel := context.WithCancel(m.ctx)
	p.op, p.cancel, p.started, p.shell = opRun, cancel, m.now(), command
	sess, id, b := m.sess, p.p.ID, m.bridge
	return tea.Batch(m.runs.work(func() tea.Msg {
		defer cancel()
		_, err := sess.Shell(ctx, id, command)
		return shellDoneMsg{mark: b.mark(), sess: sess, persona: id, err: err}
	}), m.armAnim())
}

func (m *Model) shellDone(msg shellDoneMsg) tea.Cmd {
	p := m.persona(msg.persona)
	if p == nil || msg.sess != m.sess {
		return nil
	}
	p.op, p.cancel, p.shell = "", nil, ""
	if id := m.sess.ID(); id != "" {
		m.sessID = id
	}
	if msg.err != nil && !errors.Is(msg.err, context.Canceled) {
		p.tr.add(&item{kind: kError, text: "! " + msg.err.Error()})
	}
	return m.refreshStatus(p) // then the queued input, if any
}

// shellHint is the info line while the input holds a ! command.
func (m *Model) shellHint() string {
	cmd, ok := shellCommand(m.input.Value())
	if !ok {
		return ""
	}
	if cmd == "" {
		return "shell mode: type a command; enter runs it like the model's run_command (same policy and sandbox)"
	}
	return "shell mode: enter runs this command like the model's run_command (same policy and sandbox); its output joins the conversation"
}

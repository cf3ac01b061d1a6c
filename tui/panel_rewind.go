package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/agent"
)

// opUndo marks the personas while an undo, redo or rewind runs: input is
// queued, so no agent writes a file the undo is restoring.
const opUndo = opLoad

// rewindPanel lists the session's turns (/rewind): Enter puts the files
// back to how they were before the chosen turn, c also forks the
// conversation there.
type rewindPanel struct {
	seq  int
	rows []agent.TurnInfo
	sel  int
	err  string
	done bool // the list arrived
}

type rewindListMsg struct {
	seq  int
	rows []agent.TurnInfo
	err  error
}

// undoDoneMsg is the end of an undo, redo or rewind.
type undoDoneMsg struct {
	rep agent.UndoReport
	err error
}

func (m *Model) undoHistory() agent.History {
	return agent.History{Store: m.app.Store, Root: m.app.ProjectDir}
}

func (p *rewindPanel) list(m *Model) tea.Cmd {
	h, id, seq, ctx := m.undoHistory(), m.sessID, p.seq, m.ctx
	return func() tea.Msg {
		if id == "" {
			return rewindListMsg{seq: seq}
		}
		rows, err := h.Turns(ctx, id)
		return rewindListMsg{seq: seq, rows: rows, err: err}
	}
}

func (p *rewindPanel) update(msg rewindListMsg) {
	if msg.seq != p.seq {
		return
	}
	p.rows, p.done, p.sel = msg.rows, true, max(0, len(msg.rows)-1)
	if msg.err != nil {
		p.err = msg.err.Error()
	}
}

func (p *rewindPanel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc", "q":
		m.closePanel()
	case "up", "k", "down", "j":
		p.sel = moveSelection(p.sel, len(p.rows), msg.String())
	case "enter", "c":
		if p.sel < 0 || p.sel >= len(p.rows) {
			return nil
		}
		keep, fork := p.rows[p.sel].Number-1, msg.String() == "c"
		m.closePanel()
		return m.undoWork(func(h agent.History, ctx context.Context, id string) (agent.UndoReport, error) {
			return h.Rewind(ctx, id, keep, fork)
		})
	}
	return nil
}

func (p *rewindPanel) view(m *Model, w, h int) []string {
	out := []string{m.panelTitle("Rewind", "↑↓ choose · enter files back to before this turn · c files and conversation · esc close", w)}
	switch {
	case p.err != "":
		return append(out, m.th.bad.Render(clip(p.err, w)))
	case !p.done:
		return append(out, m.th.dim.Render("  loading…"))
	case len(p.rows) == 0:
		return append(out, m.th.dim.Render("  no turns yet in this session"))
	}
	out = append(out, m.th.dim.Render(clip(fmt.Sprintf(" %4s  %-5s  %-10s  %-32s  %s", "TURN", "TIME", "PERSONA", "MESSAGE", "FILES CHANGED"), w)))
	rows := make([]string, len(p.rows))
	for i, t := range p.rows {
		files := strings.Join(t.Files, ", ")
		if files == "" {
			files = "—"
		}
		if t.Undone {
			files = "(undone) " + files
		}
		rows[i] = fmt.Sprintf(" %4d  %-5s  %-10s  %-32s  %s", t.Number, t.Time.Local().Format("15:04"), clip(t.Persona, 10),
			clip(oneLine(t.Prompt), 32), files)
	}
	return append(out, m.list(rows, p.sel, w, h-len(out))...)
}

// undoCommand is /undo [N] and /redo.
func (m *Model) undoCommand(name, arg string) tea.Cmd {
	if name == "/redo" {
		return m.undoWork(func(h agent.History, ctx context.Context, id string) (agent.UndoReport, error) {
			return h.Redo(ctx, id)
		})
	}
	n := 1
	if arg != "" {
		if _, err := fmt.Sscanf(arg, "%d", &n); err != nil || n < 1 {
			m.flash = "usage: /undo [N] — N turns, at least 1"
			return nil
		}
	}
	return m.undoWork(func(h agent.History, ctx context.Context, id string) (agent.UndoReport, error) {
		return h.Undo(ctx, id, n)
	})
}

// undoWork runs an undo between turns, with every persona's input queued
// meanwhile.
func (m *Model) undoWork(f func(h agent.History, ctx context.Context, session string) (agent.UndoReport, error)) tea.Cmd {
	if m.anyOp() || m.team.running() > 0 {
		m.flash = "wait for the running work to end (esc cancels it) before undoing"
		return nil
	}
	if m.sessID == "" || m.app.Store == nil {
		m.flash = "nothing to undo in this session"
		return nil
	}
	for _, p := range m.personas {
		p.op = opUndo
	}
	h, id, ctx := m.undoHistory(), m.sessID, m.ctx
	return m.runs.work(func() tea.Msg {
		rep, err := f(h, ctx, id)
		return undoDoneMsg{rep: rep, err: err}
	})
}

// undoDone shows what the undo did as one block; after a rewind that
// forked the conversation, the TUI continues in the fork.
func (m *Model) undoDone(msg undoDoneMsg) tea.Cmd {
	for _, p := range m.personas {
		if p.op == opUndo {
			p.op = ""
		}
	}
	var cmd tea.Cmd
	if msg.rep.Fork != "" {
		cmd = m.openSession(msg.rep.Fork)
	} else {
		m.sess.Reload() // the agents read the undo's note to the model from the store

		var cmds []tea.Cmd
		for _, p := range m.personas {
			cmds = append(cmds, m.next(p))
		}
		cmd = tea.Batch(cmds...)
	}
	tr := m.current().tr
	tr.toEnd()
	var ie *agent.UndoInputError
	switch {
	case errors.As(msg.err, &ie):
		m.flash = ie.Msg
	case msg.err != nil && msg.rep.Kind == "":
		tr.add(&item{kind: kError, text: "undo: " + msg.err.Error()})
	default:
		text := strings.TrimRight(msg.rep.Text(), "\n")
		if msg.err != nil {
			text += "\n" + msg.err.Error()
		}
		if msg.rep.Complete() && msg.err == nil {
			tr.add(&item{kind: kSystem, text: "↶ " + text})
		} else {
			tr.add(&item{kind: kNotice, level: "warn", text: text})
		}
	}
	return cmd
}

package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
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
	rowList[agent.TurnInfo]
	keys rewindKeys
}

type rewindKeys struct {
	listKeys
	Files, Fork key.Binding
}

func newRewindKeys() rewindKeys {
	return rewindKeys{listKeys: newListKeys(),
		Files: bind("enter", "files back to before this turn", "enter"),
		Fork:  bind("c", "files and conversation", "c")}
}

func (k rewindKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Choose, k.Files, k.Fork, k.Close}
}
func (k rewindKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// undoDoneMsg is the end of an undo, redo or rewind.
type undoDoneMsg struct {
	rep agent.UndoReport
	err error
}

func (m *Model) undoHistory() agent.History {
	return m.app.Sessions().History()
}

// listTurns reads the session's turns (in the panel's Cmd).
func (m *Model) listTurns() func() ([]agent.TurnInfo, error) {
	h, id, ctx := m.undoHistory(), m.sessID, m.ctx
	return func() ([]agent.TurnInfo, error) {
		if id == "" {
			return nil, nil
		}
		return h.Turns(ctx, id)
	}
}

func newRewindPanel(lk look, seq int, turns func() ([]agent.TurnInfo, error)) *rewindPanel {
	return &rewindPanel{rowList: rowList[agent.TurnInfo]{look: lk, seq: seq, read: turns}, keys: newRewindKeys()}
}

func (p *rewindPanel) ShortHelp() []key.Binding  { return p.keys.ShortHelp() }
func (p *rewindPanel) FullHelp() [][]key.Binding { return p.keys.FullHelp() }

func (p *rewindPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	handled, closed := p.update(msg, p.keys.listKeys)
	switch {
	case closed:
		return nil, nil
	case handled:
		if msg, ok := msg.(rowsMsg[agent.TurnInfo]); ok && msg.seq == p.seq {
			p.sel = max(0, len(p.rows)-1) // the latest turn first
		}
		return p, nil
	}
	if msg, ok := msg.(tea.KeyPressMsg); ok && key.Matches(msg, p.keys.Files, p.keys.Fork) {
		row, ok := p.selected()
		if !ok {
			return p, nil
		}
		return nil, msgCmd(rewindMsg{keep: row.Number - 1, fork: key.Matches(msg, p.keys.Fork)})
	}
	return p, nil
}

func (p *rewindPanel) View() string {
	header := fmt.Sprintf(" %4s  %-5s  %-10s  %-32s  %s", "TURN", "TIME", "PERSONA", "MESSAGE", "FILES CHANGED")
	return p.view(p.th, "Rewind", p, "no turns yet in this session", header, func(t agent.TurnInfo) string {
		files := strings.Join(t.Files, ", ")
		if files == "" {
			files = "—"
		}
		if t.Undone {
			files = "(undone) " + files
		}
		return fmt.Sprintf(" %4d  %-5s  %-10s  %-32s  %s", t.Number, t.Time.Local().Format("15:04"), clip(t.Persona, 10),
			clip(oneLine(t.Prompt), 32), files)
	})
}

// rewind runs the rewind the panel chose.
func (m *Model) rewind(msg rewindMsg) tea.Cmd {
	return m.undoWork(func(h agent.History, ctx context.Context, id string) (agent.UndoReport, error) {
		return h.Rewind(ctx, id, msg.keep, msg.fork)
	})
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
	var block *item
	var ie *agent.UndoInputError
	switch {
	case errors.As(msg.err, &ie):
		m.flash = ie.Msg
	case msg.err != nil && msg.rep.Kind == "":
		block = &item{kind: kError, text: "undo: " + msg.err.Error()}
	default:
		text := strings.TrimRight(msg.rep.Text(), "\n")
		if msg.err != nil {
			text += "\n" + msg.err.Error()
		}
		block = &item{kind: kNotice, level: "warn", text: text}
		if msg.rep.Complete() && msg.err == nil {
			block = &item{kind: kSystem, text: "↶ " + text}
		}
	}
	if msg.rep.Fork != "" { // the block shows in the fork, once it is open
		return m.openSession(msg.rep.Fork, block)
	}
	m.sess.Reload() // the agents read the undo's note to the model from the store
	var cmds []tea.Cmd
	for _, p := range m.personas {
		cmds = append(cmds, m.next(p))
	}
	if block != nil {
		tr := m.current().tr
		tr.toEnd()
		tr.add(block)
	}
	return tea.Batch(cmds...)
}

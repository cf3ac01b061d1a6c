package agent

import (
	"context"
	"errors"
	"fmt"

	"polly/memory/chat"
	"polly/memory/store"
	"polly/tools"
	"polly/tools/permission"
)

// turnRef is the user turn file changes are recorded under: the session of
// the agent the user talks to and the turn's id there.
type turnRef struct {
	session string
	id      int64
	err     error // the turn could not be recorded: writes are refused, not made without a backup
}

// beginTurn records a user message to the agent the user talks to as a new
// turn. Sub-agents keep the turn their parent gave them.
func (a *Agent) beginTurn(ctx context.Context, m chat.Message) {
	if a.depth > 0 || a.deps.Store == nil {
		return
	}
	id, err := a.deps.Store.BeginTurn(context.WithoutCancel(ctx), a.session, a.persona.ID, m.ID, m.Content)
	a.turn = turnRef{session: a.session, id: id, err: err}
	if err != nil {
		a.warnOnce("undo", fmt.Sprintf("could not start the undo history of this turn (%v); file edits will be refused", err))
	}
}

// withRecorder gives a call the recorder of this agent's turn. Without a
// store there is no undo history and nothing is recorded.
func (a *Agent) withRecorder(ctx context.Context, call chat.ToolCall) context.Context {
	if a.deps.Store == nil {
		return ctx
	}
	return tools.WithRecorder(ctx, turnRecorder{st: a.deps.Store, turn: a.turn, agent: a.id, call: call.ID})
}

// turnRecorder stores a call's backups under its turn.
type turnRecorder struct {
	st    *store.Store
	turn  turnRef
	agent string
	call  string
}

func (r turnRecorder) Record(ctx context.Context, tool string, changes []tools.FileChange) ([]int64, error) {
	switch {
	case r.turn.err != nil:
		return nil, fmt.Errorf("the undo history of this turn is unavailable: %w", r.turn.err)
	case r.turn.id == 0:
		return nil, errors.New("no turn to record the change under")
	}
	bs := make([]store.Backup, len(changes))
	for i, c := range changes {
		bs[i] = store.Backup{SessionID: r.turn.session, TurnID: r.turn.id, Agent: r.agent, CallID: r.call, Tool: tool,
			Path: c.Path, Link: c.Link, Before: c.Before, After: c.After}
	}
	return r.st.SaveBackups(ctx, bs)
}

func (r turnRecorder) Forget(ctx context.Context, ids []int64) error {
	return r.st.DeleteBackups(ctx, ids)
}

// trackedCommand is run_command with its file changes recorded for undo;
// a line the permission classifier judges read-only is not fingerprinted.
func trackedCommand(run tools.Tool, root string) tools.Tool {
	return tools.TrackChanges(run, root, func(cmd string) bool { return permission.Classify(cmd).ReadOnly })
}

// filesChanged is what a tracked command changed, for the ToolFinished event.
func filesChanged(res tools.Result) *tools.TreeChanges {
	if tc, ok := res.Meta["files"].(tools.TreeChanges); ok {
		return &tc
	}
	return nil
}

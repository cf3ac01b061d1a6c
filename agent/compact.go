package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"polly/agent/llm"
	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/summarize"
	"polly/memory/task"
	"polly/memory/window"
)

// checkpoint writes .agent/<agent-id>/active_task.md. A failure (read-only
// disk) is shown once and the run goes on.
func (a *Agent) checkpoint(ctx context.Context, reason string) string {
	if !a.task.Active() || a.deps.StateDir == "" {
		return ""
	}
	path, err := task.Write(a.deps.StateDir, &a.task, task.Checkpoint{
		AgentID: a.id, Persona: a.persona.ID, Session: a.session, Reason: reason, SavedAt: a.deps.now(),
		Context: tokensOf(a),
	})
	if err != nil {
		a.warnOnce("checkpoint", fmt.Sprintf("could not write the task checkpoint: %v — the run goes on", err))
		return task.Path(a.deps.StateDir, a.id)
	}
	a.send(CheckpointWritten{Header: a.header(), Path: path, Reason: reason, ToolCalls: a.task.ToolCalls})
	return path
}

func tokensOf(a *Agent) int {
	n := 0
	for _, m := range a.history {
		n += m.Tokens
	}
	return n
}

// saveState stores the task state so a resumed session continues the task.
func (a *Agent) saveState(ctx context.Context) {
	if a.deps.Store == nil {
		return
	}
	b, err := json.Marshal(a.task)
	if err == nil {
		err = a.deps.Store.SaveAgentState(context.WithoutCancel(ctx), a.session, a.persona.ID, b)
	}
	if err != nil {
		a.warnOnce("store", fmt.Sprintf("could not save the task state: %v", err))
	}
}

// summarize replaces all but the last KeepRecent messages with a
// task-aware summary (PRODUCT §3.6). It returns whether the context was
// replaced. The steps: checkpoint; archive; ask the model for a structured
// summary merging the previous one (heuristic summary if that fails);
// check it against the checkpoint; accept it only if the context shrinks;
// then store summary + active-task message + the recent messages.
func (a *Agent) summarize(ctx context.Context, sys string, reason string) bool {
	s := a.settings()
	h := a.history
	split := window.SplitPoint(h, s.KeepRecent)
	var prev string
	var replaced []chat.Message
	for _, m := range h[:split] {
		switch m.Kind {
		case chat.KindSummary:
			prev = m.Content
		case chat.KindActiveTask, chat.KindAnchor:
		default:
			replaced = append(replaced, m)
		}
	}
	if len(replaced) == 0 {
		return false
	}
	before := a.contextTokens(sys, h)
	a.send(SummaryStarted{Header: a.header(), Reason: reason, TokensBefore: before, Messages: split})

	cpPath := a.checkpoint(ctx, "summary")
	checkpointText := task.Render(&a.task, task.Checkpoint{AgentID: a.id, Persona: a.persona.ID, Session: a.session, Reason: "summary", SavedAt: a.deps.now()})
	archivePath, err := summarize.Archive(filepath.Join(a.deps.StateDir, "archive"), a.id, a.session, h[:split], a.deps.now())
	if err != nil {
		a.warnOnce("archive", fmt.Sprintf("could not archive old messages (%v); they stay in SQLite", err))
		archivePath = ""
	}
	in := summarize.Input{AgentID: a.id, Task: &a.task, Checkpoint: checkpointText, Previous: prev, Messages: replaced, MaxChars: a.transcriptBudget()}

	text, heuristic, why := a.modelSummary(ctx, in)
	if ctx.Err() != nil {
		return false
	}
	number := a.task.Compactions + 1
	build := func(text string) ([]chat.Message, []string, int) {
		checked, added := summarize.Check(text, &a.task)
		next := []chat.Message{summarize.Message(checked, number, split, archivePath), window.ActiveTask(&a.task, cpPath)}
		for _, m := range h[split:] {
			m.ID = 0
			next = append(next, m)
		}
		return next, added, a.contextTokens(sys, next)
	}
	next, added, after := build(text)
	if after >= before && !heuristic {
		why = fmt.Sprintf("the model's summary would not shrink the context (%d → %d tokens)", before, after)
		text, heuristic = summarize.Heuristic(in), true
		next, added, after = build(text)
	}
	if after >= before {
		a.retrySummaryAt = before + max(before/4, 2000)
		a.send(SummaryFinished{Header: a.header(), TokensBefore: before, TokensAfter: after, Heuristic: heuristic, Accepted: false,
			Why: fmt.Sprintf("rejected: the summary would not shrink the context (%d → %d tokens)", before, after)})
		return false
	}

	// Store: the summary row, the replaced (and moved) originals archived,
	// then the new live conversation in order.
	if a.deps.Store != nil {
		sctx := context.WithoutCancel(ctx)
		sumID, err := a.deps.Store.SaveSummary(sctx, store.Summary{SessionID: a.session, Persona: a.persona.ID, Content: next[0].Content,
			TokensBefore: before, TokensAfter: after, MessagesReplaced: split, ArchivePath: archivePath, Heuristic: heuristic})
		if err == nil {
			var ids []int64
			for _, m := range h {
				if m.ID != 0 {
					ids = append(ids, m.ID)
				}
			}
			err = a.deps.Store.ArchiveMessages(sctx, ids, sumID)
		}
		if err != nil {
			a.warnOnce("store", fmt.Sprintf("could not store the summary: %v", err))
		}
	}
	a.history = nil
	for _, m := range next {
		a.append(ctx, m)
	}
	a.task.Compactions++
	a.retrySummaryAt = 0
	a.lastContext = after // the status bar's meter shows the new context at once
	a.saveState(ctx)
	a.send(SummaryFinished{Header: a.header(), TokensBefore: before, TokensAfter: after, Replaced: split, Kept: len(h) - split,
		Heuristic: heuristic, Accepted: true, Added: added, ArchivePath: archivePath, Summary: next[0].Content, Why: why})
	return true
}

// modelSummary asks the model for the summary; on any failure it returns
// the heuristic one and why.
func (a *Agent) modelSummary(ctx context.Context, in summarize.Input) (text string, heuristic bool, why string) {
	req := llm.Request{Model: a.model(), Messages: summarize.Prompt(in)}
	t := 0.2
	req.Temperature = &t
	start := time.Now()
	resp, err := a.deps.LLM.Stream(ctx, req, llm.Observer{})
	a.account(ctx, req.Model, time.Since(start), resp, err)
	if err != nil {
		return summarize.Heuristic(in), true, "the summarizer call failed: " + err.Error()
	}
	if !summarize.Usable(resp.Message.Content) {
		return summarize.Heuristic(in), true, "the summarizer's reply was not a structured summary"
	}
	return resp.Message.Content, false, ""
}

// transcriptBudget keeps the summarizer request well inside the window.
func (a *Agent) transcriptBudget() int {
	budget := 80000
	if w := a.deps.Model.ContextWindow; w > 0 && w*2 < budget {
		budget = w * 2 // ~half the window at 4 chars per token
	}
	return budget
}

// contextTokens estimates a context without side effects.
func (a *Agent) contextTokens(sys string, h []chat.Message) int {
	t := a.task
	t.LastAnchorAt = t.ToolCalls // never count a new anchor here
	return window.Build(window.Input{System: sys, ToolTokens: a.toolTokens(), History: h, Task: &t, Settings: a.settings(),
		Window: a.deps.Model.ContextWindow, Counter: a.counter, Scale: a.calib.Ratio()}).Tokens
}

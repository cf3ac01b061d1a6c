package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"polly/agent/hooks"
	"polly/agent/llm"
	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/summarize"
	"polly/memory/task"
	"polly/memory/tokens"
	"polly/memory/window"
	"polly/tools"
	"polly/workspace"
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
	a.task.Checkpoint = path
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

// saveState stores the task state so a resumed session continues the task
// (with the model calls not stored yet). A state this agent already
// stored as it is is not written again.
func (a *Agent) saveState(ctx context.Context) {
	if a.deps.Store == nil {
		return
	}
	b, err := json.Marshal(a.task)
	if err != nil {
		a.warnOnce("store", fmt.Sprintf("could not save the task state: %v", err))
		return
	}
	saved := a.savedState
	if bytes.Equal(b, saved) && len(a.pendingCalls) == 0 {
		return // nothing to write: no transaction either
	}
	if !a.storeBatch(ctx, func(ctx context.Context) {
		if bytes.Equal(b, saved) {
			return
		}
		if err := a.deps.Store.SaveAgentState(ctx, a.session, a.persona.ID, b); err != nil {
			a.warnOnce("store", fmt.Sprintf("could not save the task state: %v", err))
			return
		}
		a.savedState = b
	}) {
		a.savedState = nil // not committed after all
	}
}

// summarize replaces all but the last KeepRecent messages with a
// task-aware summary (PRODUCT §3.6). It returns whether the context was
// replaced. The steps: checkpoint; archive; ask the model for a structured
// summary of every replaced message (in parts when they do not fit one
// call), merging the previous summary of this task (heuristic summary if
// that fails); normalise and cap it; check it against the task state;
// accept it only if the context shrinks; then store it and the recent
// messages, and write its durable facts to MEMORY.md.
func (a *Agent) summarize(ctx context.Context, sys string, reason string) bool {
	trigger := "auto"
	if reason == "manual" {
		trigger = "manual"
	}
	none := "" // Polly's /compact takes no instructions
	if res := a.hook(ctx, hooks.Input{HookEventName: hooks.PreCompact, Trigger: trigger, CustomInstructions: &none}, trigger); res.Block {
		a.send(Notice{Header: a.header(), Level: "warn", Text: "summarization skipped: a PreCompact hook blocked it: " + res.Reason})
		return false
	}
	h := a.history
	split := a.keepSplit(h)
	var prev string
	var replaced []chat.Message
	for _, m := range h[:split] {
		switch m.Kind {
		case chat.KindSummary:
			// Only a summary of this task is merged; one left from an
			// earlier task is not carried into this task's summary.
			if a.task.Compactions > 0 {
				prev = m.Content
			}
		case chat.KindActiveTask, chat.KindAnchor, chat.KindTaskBlock:
		default:
			replaced = append(replaced, m)
		}
	}
	if len(replaced) == 0 {
		return false
	}
	before := a.contextTokens(sys, h)
	a.send(SummaryStarted{Header: a.header(), Reason: reason, TokensBefore: before, Messages: split})

	a.checkpoint(ctx, "summary")
	checkpointText := task.Render(&a.task, task.Checkpoint{AgentID: a.id, Persona: a.persona.ID, Session: a.session, Reason: "summary", SavedAt: a.deps.now()})
	archivePath, err := summarize.Archive(filepath.Join(a.deps.StateDir, "archive"), a.id, a.session, h[:split], a.deps.now())
	if err != nil {
		a.warnOnce("archive", fmt.Sprintf("could not archive old messages (%v); they stay in SQLite", err))
		archivePath = ""
	}
	in := summarize.Input{AgentID: a.id, Task: &a.task, Checkpoint: checkpointText, Previous: prev, Messages: replaced, MaxChars: a.transcriptBudget()}

	parsed, facts, heuristic, why := a.modelSummary(ctx, in)
	if ctx.Err() != nil {
		return false
	}
	number := a.task.Compactions + 1
	build := func(p summarize.Parsed) ([]chat.Message, []string, int) {
		if capped, cut := p.Cap(a.summaryCap() * 4); cut {
			p = capped
			a.send(Notice{Header: a.header(), Level: "info", Text: fmt.Sprintf("summary #%d was longer than its cap (%d tokens) and was cut to fit", number, a.summaryCap())})
		}
		checked, added := p.Check(&a.task)
		next := []chat.Message{summarize.Message(checked, number, split, archivePath, a.task.ToolCalls)}
		for _, m := range h[split:] {
			m.ID = 0
			next = append(next, m)
		}
		return next, added, a.contextTokens(sys, next)
	}
	next, added, after := build(parsed)
	if after >= before && !heuristic {
		why = fmt.Sprintf("the model's summary would not shrink the context (%d → %d tokens)", before, after)
		a.send(Notice{Header: a.header(), Level: "warn", Text: why + "; using the heuristic summary"})
		parsed, heuristic, facts = heuristicSummary(in), true, nil
		next, added, after = build(parsed)
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
	a.exportPaused = true // the transcript gets the summary, not the kept messages again
	for _, m := range next {
		a.append(ctx, m)
	}
	a.exportPaused = false
	a.exportMessage(a.history[0])
	a.task.Compactions++
	a.retrySummaryAt = 0
	a.lastContext = after // the status bar's meter shows the new context at once
	a.saveState(ctx)
	a.send(SummaryFinished{Header: a.header(), TokensBefore: before, TokensAfter: after, Replaced: split, Kept: len(h) - split,
		Heuristic: heuristic, Accepted: true, Added: added, ArchivePath: archivePath, Summary: next[0].Content, Why: why})
	a.learnFacts(ctx, facts)
	a.hook(ctx, hooks.Input{HookEventName: hooks.PostCompact, Trigger: trigger, CompactSummary: next[0].Content}, trigger)
	return true
}

// keepSplit is where the raw recent messages start: the last KeepRecent,
// fewer when they alone would fill more than a third of the threshold (a
// small window), so a summary leaves room to work before the next one.
func (a *Agent) keepSplit(h []chat.Message) int {
	s := a.settings()
	limit := s.Threshold(a.budget()) / 3
	for keep := s.KeepRecent; ; keep-- {
		split := window.SplitPoint(h, keep)
		if keep <= 4 {
			return split
		}
		n := 0
		for _, m := range h[split:] {
			if m.Tokens > 0 {
				n += m.Tokens
			} else {
				n += tokens.Message(a.counter, m)
			}
		}
		if n <= limit {
			return split
		}
	}
}

// heuristicSummary is the summary built without a model, parsed.
func heuristicSummary(in summarize.Input) summarize.Parsed {
	p, _ := summarize.Parse(summarize.Heuristic(in))
	return p
}

// modelSummary asks the model for the summary of every replaced message:
// in one call, or part by part when they do not fit one, each part merging
// the summary of the parts before it. Retries and any fallback to the
// heuristic summary are shown as notices. It returns the summary's parts
// and the durable facts the model found.
func (a *Agent) modelSummary(ctx context.Context, in summarize.Input) (p summarize.Parsed, facts []string, heuristic bool, why string) {
	parts := summarize.Split(in.Messages, in.MaxChars)
	fallback := func(reason string) (summarize.Parsed, []string, bool, string) {
		if ctx.Err() == nil {
			a.send(Notice{Header: a.header(), Level: "warn", Text: reason + "; using the heuristic summary"})
		}
		return heuristicSummary(in), nil, true, reason
	}
	merged := in.Previous
	for i, part := range parts {
		pin := in
		pin.Messages, pin.Previous, pin.Part, pin.Parts = part, merged, i+1, len(parts)
		req := llm.Request{Model: a.model(), Messages: summarize.Prompt(pin), MaxTokens: a.summaryCap()}
		t := 0.2
		req.Temperature = &t
		which := "the summarizer"
		if len(parts) > 1 {
			which = fmt.Sprintf("the summarizer (part %d of %d)", i+1, len(parts))
		}
		start := time.Now()
		resp, err := a.deps.LLM.Stream(ctx, req, llm.Observer{OnRetry: func(r llm.Retry) {
			reason := "provider error"
			if r.Err != nil {
				reason = r.Err.Error()
			}
			a.send(Notice{Header: a.header(), Level: "warn", Text: fmt.Sprintf("%s: attempt %d failed (%s); retrying in %s", which, r.Attempt, reason, r.Wait.Round(time.Millisecond))})
		}})
		a.account(ctx, req.Model, time.Since(start), resp, err)
		if err != nil {
			return fallback(which + " call failed: " + err.Error())
		}
		got, perr := summarize.Parse(resp.Message.Content)
		if perr != nil {
			return fallback(which + "'s reply was rejected: " + perr.Error())
		}
		p = got
		facts = append(facts, got.Facts...)
		merged = got.Text()
	}
	if len(parts) > 1 {
		a.send(Notice{Header: a.header(), Level: "info", Text: fmt.Sprintf("summarized %d messages in %d parts", len(in.Messages), len(parts))})
	}
	return p, facts, false, ""
}

// learnFacts writes a summary's durable facts to MEMORY.md. It is a write
// to the workspace memory like workspace_save_fact: the permission gate
// sees its diff and decides (it asks in mode ask, and in every mode but
// yolo when the session has read untrusted content). A refusal or a
// failure is a notice; the run goes on.
func (a *Agent) learnFacts(ctx context.Context, facts []string) {
	if a.deps.Facts == nil || len(facts) == 0 {
		return
	}
	p := a.provenance()
	e, added := a.deps.Facts.LearnEdit(p, facts)
	before, after, err := a.deps.Facts.Preview(e)
	if err == nil && before == after {
		return // nothing new
	}
	if err == nil {
		err = a.allowMemory(ctx, "learn_facts", e.File, before, after, p)
	}
	if err == nil {
		_, err = a.deps.Facts.Apply(e)
	}
	switch {
	case tools.IsDenied(err):
		a.send(Notice{Header: a.header(), Level: "warn", Text: fmt.Sprintf("durable facts from the summary were not saved to MEMORY.md: %v", err)})
	case err != nil:
		a.send(Notice{Header: a.header(), Level: "warn", Text: fmt.Sprintf("could not write durable facts to MEMORY.md: %v — the run goes on", err)})
	case len(*added) > 0:
		a.send(Notice{Header: a.header(), Level: "info", Text: fmt.Sprintf("learned %d durable fact(s) into MEMORY.md: %s", len(*added), strings.Join(*added, "; "))})
	}
}

// allowMemory asks the permission gate about a write of the harness to
// the workspace memory, as a tool's write would be asked.
func (a *Agent) allowMemory(ctx context.Context, name, file, before, after string, p workspace.Provenance) error {
	if a.deps.Gate == nil {
		return &tools.Denied{Reason: name + " was not run: no permission policy is configured"}
	}
	return a.deps.Gate.Allow(tools.WithCaller(ctx, a.id), name, tools.MemoryAccess(file, before, after, p.Untrusted))
}

// summaryCap bounds a summary in tokens: the summarizer call's max output,
// and the size a summary may keep in the context (SummaryShare of the
// budget, at most SummaryMaxTokens).
func (a *Agent) summaryCap() int {
	s := a.settings()
	return max(500, min(s.SummaryMaxTokens, int(s.SummaryShare*float64(a.budget()))))
}

// transcriptBudget is the characters of transcript one summarizer call
// gets: about 3/8 of the budget (at ~4 characters per token), at most
// 80,000, so checkpoint, previous summary and output fit beside it.
func (a *Agent) transcriptBudget() int {
	return max(4000, min(80000, a.budget()*3/2))
}

// contextTokens estimates a context without side effects.
func (a *Agent) contextTokens(sys string, h []chat.Message) int {
	t := a.task
	return window.Build(window.Input{System: sys, ToolTokens: a.toolTokens(), History: h, Task: &t, Settings: a.settings(),
		Window: a.budget(), Counter: a.counter, Scale: a.calib.Ratio()}).Tokens
}

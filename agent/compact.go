package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	c := task.Checkpoint{AgentID: a.id, Persona: a.persona.ID, Session: a.session, Reason: reason, SavedAt: a.deps.now(),
		Context: tokensOf(a)}
	if path, ok := a.checkpointed.current(&a.task, c); ok {
		return path
	}
	path, aside, err := task.Write(a.deps.StateDir, &a.task, c)
	if err != nil {
		a.checkpointed = checkpointMark{}
		a.warnOnce("checkpoint", fmt.Sprintf("could not write the task checkpoint: %v — the run goes on", err))
		return task.Path(a.deps.StateDir, a.id)
	}
	if aside != "" {
		a.send(Notice{Header: a.header(), Level: "info", Text: fmt.Sprintf("the checkpoint of another session's unfinished task was kept as %s (this task's is %s)", aside, path)})
	}
	a.task.Checkpoint = path
	a.checkpointed = markCheckpoint(path, &a.task, c)
	a.send(CheckpointWritten{Header: a.header(), Path: path, Reason: reason, ToolCalls: a.task.ToolCalls})
	return path
}

// checkpointMark is what this agent last wrote to active_task.md, to know
// when writing it again would only change its time: a run's end writes
// the checkpoint, and the next task's start would write the same one
// again (with an fsync of the file and its directory) before closing it.
type checkpointMark struct {
	path   string
	state  []byte // the task state as JSON, its Checkpoint path set
	fields task.Checkpoint
	file   os.FileInfo // the file as written: it is replaced whole (a new inode) by every write, also another session's
}

// markCheckpoint remembers the checkpoint just written to path.
func markCheckpoint(path string, s *task.State, c task.Checkpoint) checkpointMark {
	state, err := json.Marshal(s)
	fi, serr := os.Stat(path)
	if err != nil || serr != nil {
		return checkpointMark{}
	}
	c.SavedAt = time.Time{}
	return checkpointMark{path: path, state: state, fields: c, file: fi}
}

// current reports whether the file at m.path still is the checkpoint of
// s with c's fields (but its time), and that path.
func (m checkpointMark) current(s *task.State, c task.Checkpoint) (string, bool) {
	if m.path == "" {
		return "", false
	}
	c.SavedAt = time.Time{}
	if c != m.fields {
		return "", false
	}
	if state, err := json.Marshal(s); err != nil || !bytes.Equal(state, m.state) {
		return "", false
	}
	fi, err := os.Stat(m.path)
	if err != nil || !os.SameFile(fi, m.file) || fi.Size() != m.file.Size() || !fi.ModTime().Equal(m.file.ModTime()) {
		return "", false
	}
	return m.path, true
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

// summarize replaces the older messages with a task-aware summary
// (PRODUCT §3.6). It returns whether the context was replaced. The steps:
// choose what to keep so the summary frees a useful share of the room
// (else back off); checkpoint; archive; ask the model for a structured
// summary of every replaced message (in parts when they do not fit one
// call), merging the previous summary of this task (heuristic summary if
// that fails); normalise and cap it; check it against the task state;
// accept it only if the context shrinks; then swap it in, in one
// transaction, and write its durable facts to MEMORY.md. before is the
// context as last built (zero: built here).
func (a *Agent) summarize(ctx context.Context, sys string, reason string, before window.Output) bool {
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
	if before.Messages == nil {
		before = a.estimate(sys, h)
	}
	room := a.room(before)
	split, useful := a.keepSplit(sys, h, before)
	if !useful && reason != "manual" {
		// Even keeping only the last exchange would free too little: back
		// off until the context has grown, instead of a summary per step.
		a.retrySummaryAt = before.Whole + a.backoff(room)
		a.send(Notice{Header: a.header(), Level: "info", Text: fmt.Sprintf("summary deferred: the context is %d tokens, but a summary could free less than %d%% of the %d tokens the history has beside the fixed cost (%d); the next try waits until the context reaches %d tokens",
			before.Whole, int(a.settings().SummaryGain*100), room, before.Fixed, a.retrySummaryAt)})
		return false
	}
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
	a.send(SummaryStarted{Header: a.header(), Reason: reason, TokensBefore: before.Whole, Messages: split})

	a.checkpoint(ctx, "summary")
	checkpointText := task.Render(&a.task, task.Checkpoint{AgentID: a.id, Persona: a.persona.ID, Session: a.session, Reason: "summary", SavedAt: a.deps.now()})
	archivePath, err := summarize.Archive(filepath.Join(a.deps.StateDir, "archive"), a.id, a.session, h[:split], a.deps.now())
	if err != nil {
		a.warnOnce("archive", fmt.Sprintf("could not archive old messages (%v); they stay in SQLite", err))
		archivePath = ""
	}
	in := summarize.Input{AgentID: a.id, Task: &a.task, Checkpoint: checkpointText, Previous: prev, Messages: window.SupersedePlans(replaced), MaxChars: a.transcriptBudget()}

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
		return next, added, a.estimate(sys, next).Tokens
	}
	next, added, after := build(parsed)
	if after >= before.Whole && !heuristic {
		why = fmt.Sprintf("the model's summary would not shrink the context (%d → %d tokens)", before.Whole, after)
		a.send(Notice{Header: a.header(), Level: "warn", Text: why + "; using the heuristic summary"})
		parsed, heuristic, facts = heuristicSummary(in), true, nil
		next, added, after = build(parsed)
	}
	if after >= before.Whole {
		a.retrySummaryAt = before.Whole + a.backoff(room)
		a.send(SummaryFinished{Header: a.header(), TokensBefore: before.Whole, TokensAfter: after, Heuristic: heuristic, Accepted: false,
			Why: fmt.Sprintf("rejected: the summary would not shrink the context (%d → %d tokens)", before.Whole, after)})
		return false
	}

	a.task.Compactions++
	stored, err := a.swapSummary(ctx, store.Summary{SessionID: a.session, Persona: a.persona.ID, Content: next[0].Content,
		TokensBefore: before.Whole, TokensAfter: after, MessagesReplaced: split, ArchivePath: archivePath, Heuristic: heuristic}, h, next)
	if err != nil {
		// Nothing of the swap is stored: the stored conversation stays
		// the old one, and so does this one, so the two never differ.
		a.task.Compactions--
		a.warnOnce("store", fmt.Sprintf("could not store the summary (%v); the conversation goes on unsummarized", err))
		a.retrySummaryAt = before.Whole + a.backoff(room)
		return false
	}
	a.history = stored
	a.exportMessage(a.history[0]) // the hooks' transcript gets the summary, not the kept messages again
	a.killPoint("summary-swapped")
	// The next summary waits for the context to grow (back-off): one that
	// lands near the threshold is not followed by another at once.
	a.retrySummaryAt = after + a.backoff(room)
	a.lastContext = after // the status bar's meter shows the new context at once
	a.send(SummaryFinished{Header: a.header(), TokensBefore: before.Whole, TokensAfter: after, Replaced: split, Kept: len(h) - split,
		Heuristic: heuristic, Accepted: true, Added: added, ArchivePath: archivePath, Summary: next[0].Content, Why: why})
	a.learnFacts(ctx, facts)
	a.hook(ctx, hooks.Input{HookEventName: hooks.PostCompact, Trigger: trigger, CompactSummary: next[0].Content}, trigger)
	return true
}

// swapSummary stores a summary and the conversation it leaves, in one
// transaction: the summary row, the replaced messages archived under it
// (the kept ones too: their copies follow the summary, in order), the
// summary message and the kept messages, the task state (its compaction
// count) and the model calls accounted so far. A crash at any point leaves
// either the old conversation or the new one, never a mix. It returns the
// new history with the stored ids; without a store, next as it is.
func (a *Agent) swapSummary(ctx context.Context, sum store.Summary, h, next []chat.Message) ([]chat.Message, error) {
	for i := range next {
		if next[i].Tokens == 0 {
			next[i].Tokens = tokens.Message(a.counter, next[i])
		}
	}
	st := a.deps.Store
	if st == nil {
		return next, nil
	}
	state, err := json.Marshal(a.task)
	if err != nil {
		return nil, fmt.Errorf("encode the task state: %w", err)
	}
	stored := make([]chat.Message, len(next))
	err = st.Batch(context.WithoutCancel(ctx), func(ctx context.Context) error {
		for _, call := range a.pendingCalls {
			if err := st.RecordLLMCall(ctx, call); err != nil {
				return err
			}
		}
		a.killPoint("swap-begun")
		sumID, err := st.SaveSummary(ctx, sum)
		if err != nil {
			return err
		}
		a.killPoint("swap-summary-row")
		var ids []int64
		for _, m := range h {
			if m.ID != 0 {
				ids = append(ids, m.ID)
			}
		}
		if err := st.ArchiveMessages(ctx, ids, sumID); err != nil {
			return err
		}
		a.killPoint("swap-archived")
		for i, m := range next {
			if stored[i], err = st.AppendMessage(ctx, a.session, a.persona.ID, m); err != nil {
				return err
			}
			if i == 0 {
				a.killPoint("swap-summary-message")
			}
		}
		a.killPoint("swap-kept")
		if err := st.SaveAgentState(ctx, a.session, a.persona.ID, state); err != nil {
			return err
		}
		a.killPoint("swap-before-commit")
		return nil
	})
	if err != nil {
		a.textsSaved = nil // the records' texts may not have been committed
		return nil, err
	}
	a.pendingCalls = a.pendingCalls[:0]
	a.savedState = state
	return stored, nil
}

// killPoint lets a test kill the process at a named point of the summary
// swap (Deps.KillPoint); it does nothing otherwise.
func (a *Agent) killPoint(name string) {
	if a.deps.KillPoint != nil {
		a.deps.KillPoint(name)
	}
}

// room is the room the history has before a summary is due: the
// threshold less the fixed cost (system prompt, tool schemas, task block).
func (a *Agent) room(out window.Output) int { return out.Room }

// backoff is how much the context must grow after a summary (or one that
// could not help) before the next is tried.
func (a *Agent) backoff(room int) int {
	return max(500, int(a.settings().SummaryBackoff*float64(room)))
}

// keepSplit is where the raw recent messages start. It keeps the last
// KeepRecent messages, or fewer — down to the last exchange — until the
// summary would free at least SummaryGain of the room the history has: on
// a small window the fixed cost leaves little room, and a summary that
// keeps too much lands near the threshold again at once. The kept messages
// are counted as they are sent (old outputs and arguments shrunk by Build
// first). It reports whether that share can be freed at all.
func (a *Agent) keepSplit(sys string, h []chat.Message, before window.Output) (int, bool) {
	s := a.settings()
	room := a.room(before)
	need := int(s.SummaryGain * float64(room))
	// What the summary itself will take: the previous one's size (it is
	// merged, so it rarely shrinks), at least a tenth of the room, at most
	// its cap.
	expect := room / 10
	for _, m := range h {
		if m.Kind == chat.KindSummary {
			expect = max(expect, m.Tokens)
		}
	}
	expect = min(expect, a.summaryCap())
	split := 0
	for keep := s.KeepRecent; keep >= 1; keep-- {
		split = window.SplitPoint(h, keep)
		if split == 0 {
			continue // nothing would be replaced
		}
		kept := a.estimate(sys, h[split:]).Tokens
		if before.Whole-(kept+expect) >= need {
			return split, true
		}
	}
	return split, false
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
		rec := a.requestRecord("summarizer", req, nil, resp)
		a.account(ctx, req.Model, time.Since(start), resp, err, rec)
		if err != nil {
			return fallback(which + " call failed: " + err.Error())
		}
		got, perr := summarize.Parse(resp.Message.Content)
		if perr != nil {
			return fallback(which + "'s reply was rejected: " + perr.Error())
		}
		p = got
		facts = append(facts, got.Facts...)
		// The next part merges this one as checked: no plan status in it.
		merged, _ = got.Check(in.Task)
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

// estimate builds a context without side effects.
func (a *Agent) estimate(sys string, h []chat.Message) window.Output {
	return a.estimateWith(a.counter, sys, h)
}

// estimateWith is estimate counting with c; the counts kept for the next
// request are the agent's counter's only.
func (a *Agent) estimateWith(c tokens.Counter, sys string, h []chat.Message) window.Output {
	sysTok, toolTok := 0, 0
	if c == a.counter {
		sysTok, toolTok = a.systemTokens(sys), a.toolTokens()
	} else {
		sysTok, toolTok = tokens.Message(c, chat.SystemText(sys)), c.Count(string(a.toolsJSONForCount()))+1
	}
	t := a.task
	return window.Build(window.Input{System: sys, SystemTokens: sysTok, ToolTokens: toolTok, History: h, Task: &t,
		Settings: a.settings(), Budget: a.budget(), Counter: c, Scale: a.calib.Ratio()})
}

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"polly/agent/llm"
	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/tokens"
	"polly/memory/window"
	"polly/tools"
)

// step makes one model request: it prepares the context (anchors, stale
// outputs, summaries), streams the reply, and recovers once from a
// provider's context-length error.
func (a *Agent) step(ctx context.Context) (llm.Response, error) {
	a.refreshTools()
	sys, err := a.fitSystem(a.systemPrompt())
	if err != nil {
		return llm.Response{}, err
	}
	out := a.prepare(ctx, sys, false)
	a.warnFixedCost(out)
	// After a summary, or one that could not help, wait for the context to
	// grow by a share of the room before the next (back-off), so a task
	// whose old part cannot shrink does not pay for a summarizer call on
	// every step.
	if out.Summarize && out.Whole >= a.retrySummaryAt {
		if a.summarize(ctx, sys, "threshold", out) {
			out = a.prepare(ctx, sys, false)
		}
	}
	resp, err := a.call(ctx, out)
	if llm.KindOf(err) == llm.KindStream && ctx.Err() == nil {
		// A stream that broke after it started (a dropped connection, a
		// stall, an upstream error event) is retried once from scratch;
		// what was streamed is void.
		a.send(Retrying{Header: a.header(), Attempt: 1, Reason: err.Error() + "; asking again", Discard: true})
		resp, err = a.call(ctx, out)
	}
	if llm.KindOf(err) != llm.KindContextLength {
		return resp, err
	}
	// PRODUCT §3.8: learn the limit the provider stated, compact
	// aggressively and retry once, then summarize.
	a.send(Notice{Header: a.header(), Level: "warn", Text: "the provider refused the context as too long; cutting old tool outputs and retrying"})
	a.learnFromError(err)
	if sys, err = a.fitSystem(sys); err != nil {
		return resp, err
	}
	out = a.prepare(ctx, sys, true)
	a.send(FallbackUsed{Header: a.header(), Tokens: out.Tokens, Hard: out.Hard, Detail: fmt.Sprintf("context-length recovery: cut %d old tool outputs to %d chars", out.Cut, a.settings().RecoveryCut)})
	resp, err = a.call(ctx, out)
	if llm.KindOf(err) != llm.KindContextLength {
		return resp, err
	}
	if a.summarize(ctx, sys, "context_length", out) {
		out = a.prepare(ctx, sys, true)
		return a.call(ctx, out)
	}
	return resp, err
}

// warnFixedCost tells the user once when the fixed cost (system prompt,
// tool schemas, task block) takes more than FixedWarnShare of the budget:
// every summary then frees little and comes soon, and only a lighter
// prompt helps.
func (a *Agent) warnFixedCost(out window.Output) {
	s, b := a.settings(), a.budget()
	if float64(out.Fixed) <= s.FixedWarnShare*float64(b) {
		return
	}
	a.warnOnce("fixed-cost", fmt.Sprintf("model %s: the system prompt (%d tokens) and %d tool schemas (%d tokens) take %d%% of the %d-token context budget, so summaries free little and come often; give this model a shorter tool list (%s, or \"tools\" in the persona file) or shorten the workspace memory files (MEMORY.md, daily logs)",
		a.model(), out.Parts.System, len(a.allowed), out.Parts.Tools, out.Fixed*100/b, b, a.toolsKey()))
}

// toolsKey is where a model's tool allow-list is set in the config.
func (a *Agent) toolsKey() string {
	p := a.deps.Model.Provider
	if p == "" {
		p = "<provider>"
	}
	return fmt.Sprintf(`"tools": [...] under providers.%s.models.%s`, p, a.model())
}

func (a *Agent) settings() window.Settings { return a.deps.Context.WithDefaults() }

// systemPrompt assembles the persona's system prompt; a failure to read the
// workspace falls back to the bare persona prompt with a warning. The rule
// about untrusted-data envelopes closes it, whatever the source.
func (a *Agent) systemPrompt() string {
	s, memory := a.persona.SystemPrompt, 0
	switch pp, parts := a.deps.Prompts.(PromptParts); {
	case parts:
		text, n, err := pp.SystemPromptParts(a.persona)
		if err != nil {
			a.warnOnce("prompt", fmt.Sprintf("could not read the workspace memory (%v); using the bare persona prompt", err))
		} else {
			s, memory = text, n
		}
	case a.deps.Prompts != nil:
		text, err := a.deps.Prompts.SystemPrompt(a.persona)
		if err != nil {
			a.warnOnce("prompt", fmt.Sprintf("could not read the workspace memory (%v); using the bare persona prompt", err))
		} else {
			s = text
		}
	}
	// The same base gives the same string: later comparisons stay cheap.
	if s != a.sysBase {
		a.sysBase, a.sysFull = s, s+"\n\n"+tools.UntrustedNote
	}
	// The request record's breakdown: the prompt as sent, and how much of
	// it the workspace memory files are.
	a.memText, a.memBytes = a.sysFull, memory
	return a.sysFull
}

// prepare runs the context policy. The task block it appends is never
// stored; when its anchor number advanced (every AnchorEvery tool calls)
// the anchor event says so.
func (a *Agent) prepare(ctx context.Context, sys string, recovery bool) window.Output {
	out := window.Build(window.Input{
		System:       sys,
		SystemTokens: a.systemTokens(sys),
		ToolTokens:   a.toolTokens(),
		History:      a.history,
		Task:         &a.task,
		Settings:     a.settings(),
		Budget:       a.budget(),
		Counter:      a.counter,
		Scale:        a.calib.Ratio(),
		Recovery:     recovery,
		// Safe: the last context was sent and dropped, and llm.Streamer
		// keeps no request's messages once Stream returns.
		Reuse:   a.ctxBuf,
		Checked: &a.argsChecked,
	})
	a.ctxBuf = out.Messages
	a.lastContext, a.lastThreshold = out.Tokens, out.Threshold
	if out.Block != nil {
		a.lastBlock = out.Block.Content
		if n := a.task.ToolCalls / a.settings().AnchorEvery; n > a.task.Anchors {
			a.task.Anchors = n
			a.task.LastAnchorAt = n * a.settings().AnchorEvery
			a.send(AnchorInjected{Header: a.header(), Number: n, ToolCalls: a.task.ToolCalls, Text: out.Block.Content})
		}
	}
	if out.Fallback {
		a.send(FallbackUsed{Header: a.header(), Tokens: out.Tokens, Hard: out.Hard, Detail: "hard limit passed: kept the summary, the task block and the last messages"})
	}
	return out
}

// systemTokens counts the system prompt, once per distinct prompt (it only
// changes when a workspace file does).
func (a *Agent) systemTokens(sys string) int {
	if sys != a.sysText || a.sysTok == 0 {
		a.sysText, a.sysTok = sys, tokens.Message(a.counter, chat.SystemText(sys))
	}
	return a.sysTok
}

// toolTokens estimates the tool schemas sent with every request (once).
func (a *Agent) toolTokens() int {
	if a.toolTok == 0 {
		a.toolTok = a.counter.Count(string(a.toolsJSONForCount())) + 1
	}
	return a.toolTok
}

// toolsJSONForCount is the tool schemas as counted for the context.
func (a *Agent) toolsJSONForCount() []byte {
	b, _ := json.Marshal(a.registry.Specs(a.allowed))
	return b
}

// call streams one request and accounts for it.
func (a *Agent) call(ctx context.Context, out window.Output) (llm.Response, error) {
	if a.wire == nil {
		a.wire = llm.NewWireCache()
	}
	req := llm.Request{Model: a.model(), Messages: out.Messages, Tools: a.specs(), MaxTokens: a.deps.Model.MaxOutput, Cache: a.wire}
	if t := a.persona.Temperature; t > 0 {
		req.Temperature = &t
	}
	start := time.Now()
	a.streamed.Reset()
	resp, err := a.deps.LLM.Stream(ctx, req, llm.Observer{
		OnDelta: func(d llm.Delta) {
			if d.Text != "" {
				a.streamed.WriteString(d.Text)
				a.send(TextDelta{Header: a.header(), Text: d.Text})
			}
			if d.Reasoning != "" {
				a.send(ReasoningDelta{Header: a.header(), Text: d.Reasoning})
			}
		},
		OnRetry: func(r llm.Retry) {
			reason := "provider error"
			if r.Err != nil {
				reason = r.Err.Error()
			}
			a.send(Retrying{Header: a.header(), Attempt: r.Attempt, Wait: r.Wait, Reason: reason})
		},
	})
	latency := time.Since(start)
	rec := a.requestRecord("main", req, &out, resp)
	cost := a.account(ctx, req.Model, latency, resp, err, rec)
	if err == nil {
		a.task.TokensIn += resp.Usage.PromptTokens
		a.task.TokensOut += resp.Usage.CompletionTokens
		a.calib.Observe(out.Estimate, resp.Usage.PromptTokens)
		ctxTokens := out.Tokens
		if resp.Usage.PromptTokens > 0 {
			ctxTokens = resp.Usage.PromptTokens
		}
		a.lastContext = ctxTokens
		a.send(Usage{Header: a.header(), Model: req.Model, Usage: resp.Usage, ContextTokens: ctxTokens, Threshold: out.Threshold, Cost: cost, Latency: latency})
		a.sendStatus()
	}
	return resp, err
}

// account adds a model call's usage and cost to the agent and stores the
// call (failed ones too) in llm_calls. It returns the call's cost.
func (a *Agent) account(ctx context.Context, model string, latency time.Duration, resp llm.Response, err error, rec *store.RequestRecord) float64 {
	call := store.LLMCall{SessionID: a.session, Persona: a.persona.ID, Model: model, Latency: latency, Attempts: resp.Attempts, Request: rec}
	var cost float64
	if err != nil {
		call.Error, call.ErrorKind = err.Error(), llm.KindOf(err).String()
	} else {
		call.Usage = resp.Usage
		a.usage = a.usage.Add(resp.Usage)
		cost = a.deps.Model.Cost(resp.Usage)
		a.cost += cost
		if a.deps.Model.HasPrices() {
			call.Cost = &cost
		}
	}
	if a.deps.Store != nil {
		// Stored with the next write (the reply, the task state), in its
		// transaction: one commit per step, not one per row.
		a.pendingCalls = append(a.pendingCalls, call)
	}
	return cost
}

// storeBatch runs fn's store writes in one transaction, after the model
// calls accounted since the last write; false when it could not be
// committed. ctx loses its cancel: what happened is stored even when the
// user pressed Esc.
func (a *Agent) storeBatch(ctx context.Context, fn func(ctx context.Context)) bool {
	err := a.deps.Store.Batch(context.WithoutCancel(ctx), func(ctx context.Context) error {
		for _, call := range a.pendingCalls {
			if err := a.deps.Store.RecordLLMCall(ctx, call); err != nil {
				a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
			}
		}
		a.pendingCalls = a.pendingCalls[:0]
		fn(ctx)
		return nil
	})
	if err != nil {
		a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
		a.textsSaved = nil // the records' texts may not have been committed: send them again
		return false
	}
	return true
}

// model is the name sent to the provider: the bound model's, or without
// a resolver the persona's own name as it is.
func (a *Agent) model() string {
	if a.persona.Model != "" && a.root.Models == nil {
		return a.persona.Model
	}
	return a.deps.Model.Name
}

// specs are the tool schemas sent with every request, built once.
func (a *Agent) specs() []llm.ToolSpec {
	if a.toolSpecs == nil {
		specs := a.registry.Specs(a.allowed)
		a.toolSpecs = make([]llm.ToolSpec, len(specs))
		for i, s := range specs {
			a.toolSpecs[i] = llm.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters}
		}
	}
	return a.toolSpecs
}

// sendStatus emits the status-bar numbers.
func (a *Agent) sendStatus() {
	a.send(StatusUpdate{Header: a.header(), Status: a.Status()})
}

// learnFromError learns the context limit a provider's error states, for
// this session and for later ones.
func (a *Agent) learnFromError(err error) {
	n, ok := ParseContextLimit(err.Error())
	if !ok {
		return
	}
	smaller, serr := a.deps.learnLimit(a.model(), n)
	if !smaller {
		return
	}
	where := "for this session"
	if w := a.deps.Limits.Where(); w != "" && serr == nil {
		where = "and stored in " + w
	}
	a.send(Notice{Header: a.header(), Level: "warn", Text: fmt.Sprintf("learned: %s accepts at most %d tokens (from the provider's error) — the context budget is now %d tokens, %s", a.model(), n, a.budget(), where)})
	if serr != nil {
		a.warnOnce("limits", serr.Error())
	}
}

package agent

import (
	"polly/memory/chat"
	"polly/memory/task"
)

// Status is what a status bar shows about one agent.
type Status struct {
	Persona         string      `json:"persona"`
	Model           string      `json:"model"`
	ContextTokens   int         `json:"context_tokens"` // estimated tokens of the context now
	Threshold       int         `json:"threshold"`      // summarization threshold
	ToolCalls       int         `json:"tool_calls"`     // this task
	AnchorNumber    int         `json:"anchor_number"`  // the task block's anchor number (advances every AnchorEvery calls)
	AnchorIn        int         `json:"anchor_in"`      // tool calls until the anchor number advances
	CheckpointIn    int         `json:"checkpoint_in"`  // tool calls until the next periodic checkpoint
	Compactions     int         `json:"compactions"`
	Usage           chat.Usage  `json:"usage"`
	Cost            float64     `json:"cost"`
	HasPrices       bool        `json:"has_prices"`
	Plan            []task.Step `json:"plan"`
	Anchor          string      `json:"anchor"` // the task block sent with the last request
	CheckpointPath  string      `json:"checkpoint_path"`
	OriginalRequest string      `json:"original_request"`
}

// Status reports the agent's numbers. Call it from the goroutine that owns
// the agent, or between runs.
func (a *Agent) Status() Status {
	s := a.settings()
	st := Status{
		Persona:         a.persona.ID,
		Model:           a.model(),
		Threshold:       a.lastThreshold,
		ToolCalls:       a.task.ToolCalls,
		Anchor:          a.lastBlock,
		AnchorNumber:    a.task.ToolCalls / s.AnchorEvery,
		AnchorIn:        s.AnchorEvery - a.task.ToolCalls%s.AnchorEvery,
		CheckpointIn:    s.CheckpointEvery - (a.task.ToolCalls - a.task.LastCheckpointAt),
		Compactions:     a.task.Compactions,
		Usage:           a.usage,
		Cost:            a.cost,
		HasPrices:       a.deps.Model.HasPrices(),
		Plan:            append([]task.Step(nil), a.task.Plan...),
		OriginalRequest: a.task.OriginalRequest,
	}
	if a.deps.StateDir != "" {
		st.CheckpointPath = task.Path(a.deps.StateDir, a.id)
	}
	st.ContextTokens = a.lastContext
	if st.ContextTokens == 0 || st.Threshold == 0 {
		// Nothing sent yet by this agent (a resumed or new session): the
		// estimate of what the next request would send, so the meter is
		// right before the first turn.
		out := a.estimate(a.systemPrompt(), a.history)
		st.Threshold = out.Threshold
		if st.ContextTokens == 0 {
			st.ContextTokens = out.Tokens
		}
	}
	return st
}

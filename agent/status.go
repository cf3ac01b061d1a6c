package agent

import (
	"polly/memory/chat"
	"polly/memory/task"
)

// Status is what a status bar shows about one agent.
type Status struct {
	Persona         string
	Model           string
	ContextTokens   int // estimated tokens of the context now
	Threshold       int // summarization threshold
	ToolCalls       int // this task
	AnchorNumber    int // the task block's anchor number (advances every AnchorEvery calls)
	AnchorIn        int // tool calls until the anchor number advances
	CheckpointIn    int // tool calls until the next periodic checkpoint
	Compactions     int
	Usage           chat.Usage
	Cost            float64
	HasPrices       bool
	Plan            []task.Step
	Anchor          string // the task block sent with the last request
	CheckpointPath  string
	OriginalRequest string
}

// Status reports the agent's numbers. Call it from the goroutine that owns
// the agent, or between runs.
func (a *Agent) Status() Status {
	s := a.settings()
	st := Status{
		Persona:         a.persona.ID,
		Model:           a.model(),
		Threshold:       s.Threshold(a.budget()),
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
	return st
}

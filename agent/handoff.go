package agent

import (
	"context"
	"fmt"
	"strings"

	"polly/memory/chat"
	"polly/memory/task"
	"polly/memory/window"
)

// MaxHandoffCard bounds a handoff card: it is a pointer to the work, never
// the transcript.
const MaxHandoffCard = 2000

// handoffCard summarises an agent's task for the persona taking over:
// current task, plan step, files touched, last result, and where the full
// checkpoint is. Empty when the agent has no task.
func handoffCard(a *Agent, checkpointPath string) string {
	if !a.task.Active() {
		return ""
	}
	card := struct {
		From, FromID, Task, Step, Files, Last, Checkpoint string
		ToolCalls                                         int
	}{From: a.persona.Name, FromID: a.persona.ID, Task: task.Clip(oneLine(a.task.OriginalRequest), 500),
		ToolCalls: a.task.ToolCalls, Checkpoint: checkpointPath}
	if i, st, ok := a.task.CurrentStep(); ok {
		card.Step = fmt.Sprintf("%d of %d. [%s] %s", i+1, len(a.task.Plan), st.Status.Label(), task.Clip(st.Title, 200))
	}
	if n := len(a.task.Files); n > 0 {
		files := a.task.Files
		more := ""
		if n > 10 {
			files, more = files[n-10:], fmt.Sprintf(" (and %d earlier)", n-10)
		}
		card.Files = strings.Join(files, ", ") + more
	}
	for i := len(a.history) - 1; i >= 0; i-- {
		m := a.history[i]
		if m.Role == chat.Assistant && strings.TrimSpace(m.Content) != "" {
			card.Last = task.Clip(oneLine(m.Content), 400)
			break
		}
	}
	var b strings.Builder
	if err := handoffTemplate().Execute(&b, card); err != nil {
		panic(fmt.Sprintf("prompts/handoff.md: %v", err)) // the fields are fixed: a broken template file
	}
	return task.Clip(promptText(b.String()), MaxHandoffCard)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Switch moves the user from one persona to another: the persona left is
// checkpointed, and the one switched to receives a short handoff card with
// its next message. It returns the card ("" when there is no task to hand
// over). Call it between runs.
func (s *Session) Switch(ctx context.Context, from, to string) (string, error) {
	fa, err := s.Agent(ctx, from)
	if err != nil {
		return "", err
	}
	ta, err := s.Agent(ctx, to)
	if err != nil {
		return "", err
	}
	if fa == ta {
		return "", nil
	}
	path := fa.checkpoint(ctx, "switch")
	fa.saveState(ctx)
	card := handoffCard(fa, path)
	ta.pendingHandoff = card
	ta.send(PersonaSwitched{Header: ta.header(), From: fa.persona.ID, To: ta.persona.ID, Card: card})
	return card, nil
}

// Compact summarizes a persona's conversation now (/compact). It reports
// whether the context was replaced. Call it between runs.
func (s *Session) Compact(ctx context.Context, persona string) (bool, error) {
	a, err := s.Agent(ctx, persona)
	if err != nil {
		return false, err
	}
	if a.session == "" {
		return false, nil
	}
	sys, err := a.fitSystem(a.systemPrompt())
	if err != nil {
		return false, err
	}
	return a.summarize(ctx, sys, "manual", window.Output{}), nil
}

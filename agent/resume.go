package agent

import (
	"context"
	"encoding/json"
	"strings"

	"polly/memory/chat"
	"polly/memory/store"
)

// PartialMark ends a reply the user cancelled while it streamed: the text
// that had arrived is kept (Kind chat.KindPartial), so the model and a
// resumed transcript see it, marked.
const PartialMark = "\n\n[cancelled by the user here: the reply above is cut short]"

// keepPartial stores what streamed of a reply the user cancelled.
func (a *Agent) keepPartial(ctx context.Context) {
	text := a.streamed.String()
	a.streamed.Reset()
	if strings.TrimSpace(text) == "" {
		return
	}
	a.append(context.WithoutCancel(ctx), chat.Message{Role: chat.Assistant, Kind: chat.KindPartial, Content: text + PartialMark})
}

// delegatedUsage is what this agent's finished sub-agents used, read back
// from their stored delegate_task results: the totals a live agent added
// as each returned (finishTool), so a resumed one shows the same.
func (a *Agent) delegatedUsage(ctx context.Context) (chat.Usage, float64) {
	var u chat.Usage
	var cost float64
	execs, err := a.deps.Store.ListToolExecutions(ctx, a.session, 0, 0)
	if err != nil {
		return u, 0
	}
	for _, e := range execs {
		if e.Tool != "delegate_task" || e.Persona != a.persona.ID || e.Status == store.ExecDenied {
			continue
		}
		out, err := a.deps.Store.Output(ctx, e.ID)
		if err != nil {
			continue
		}
		var r DelegateResult
		if json.Unmarshal([]byte(out), &r) == nil {
			u, cost = u.Add(r.Usage), cost+r.Cost
		}
	}
	return u, cost
}

type labelKey struct{}

// WithLabel marks a turn's context with what the transcript shows for its
// message instead of the text sent (the draft as typed with paste tokens,
// a command as typed); it is stored with the message, so a resumed
// transcript shows it again.
func WithLabel(ctx context.Context, label string) context.Context {
	if label == "" {
		return ctx
	}
	return context.WithValue(ctx, labelKey{}, label)
}

// userMessage is the prompt as stored, with its label (the user's own
// message only: a sub-agent's prompt runs under its parent's context).
func (a *Agent) userMessage(ctx context.Context, prompt string) chat.Message {
	m := chat.UserText(prompt)
	if a.depth == 0 {
		m.Label, _ = ctx.Value(labelKey{}).(string)
	}
	return m
}

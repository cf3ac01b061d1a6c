package agent

import (
	"context"

	"polly/agent/hooks"
	"polly/memory/chat"
	"polly/tools"
)

// A custom command's allowed-tools pre-approve matching calls for the turn
// it starts, as in Claude Code: such a call runs without a question, but a
// deny rule or a hard protection (outside the project, .git) still holds.

type grantsKey struct{}

// WithGrants marks a turn's context with allowed-tools rules
// ("Bash(git add:*)", "Read").
func WithGrants(ctx context.Context, rules []string) context.Context {
	if len(rules) == 0 {
		return ctx
	}
	return context.WithValue(ctx, grantsKey{}, rules)
}

// granted lifts the question of a call the turn's grants cover.
func (a *Agent) granted(ctx context.Context, call chat.ToolCall) context.Context {
	rules, _ := ctx.Value(grantsKey{}).([]string)
	if len(rules) == 0 || tools.HookDecisionOf(ctx) != "" {
		return ctx
	}
	cc := toClaude(call, a.deps.ProjectDir)
	for _, r := range rules {
		if hooks.RuleAllows(r, cc.names, cc.input, a.deps.ProjectDir) {
			return tools.WithHookDecision(ctx, "allow")
		}
	}
	return ctx
}

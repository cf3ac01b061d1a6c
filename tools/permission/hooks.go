package permission

import (
	"context"

	"polly/memory/store"
	"polly/tools"
)

// hookDecision applies a PreToolUse hook's permissionDecision (hooks are
// the user's own commands, configured in the user's or a trusted project's
// config): "allow" lifts a question but neither a refusal nor a hard
// protection; "ask" turns a call the policy would allow into a question,
// asked every time. "deny" never reaches the gate: the loop blocks the call.
func (p *Policy) hookDecision(ctx context.Context, d Decision) Decision {
	switch tools.HookDecisionOf(ctx) {
	case "allow":
		if d.Verdict == Asks && !d.Protected {
			d.Verdict, d.Scope, d.Reason = Allowed, store.ScopeRule, "allowed by a PreToolUse hook"
		}
	case "ask":
		if d.Verdict == Allowed {
			d.Verdict, d.Scope, d.Reason = Asks, store.ScopeRule, "a PreToolUse hook asks for approval"
			d.Key, d.Covers = "", "this call"
		}
	}
	return d
}

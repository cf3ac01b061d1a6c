package hooks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// output is the JSON a hook may print on stdout (or an http hook answer
// with), as Claude Code documents it. Fields Polly has no use for
// (terminalSequence, sessionTitle…) are accepted and ignored.
type output struct {
	Continue           *bool  `json:"continue"`
	StopReason         string `json:"stopReason"`
	SuppressOutput     bool   `json:"suppressOutput"` // accepted; as in Claude Code it changes nothing
	SystemMessage      string `json:"systemMessage"`
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput *struct {
		HookEventName            string          `json:"hookEventName"`
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// parseOutput reads stdout as Claude Code does: JSON when it starts with
// "{" and parses, plain text otherwise. problem is set when it is JSON
// that does not fit the schema (a wrong type).
func parseOutput(stdout string) (o *output, plain, problem string) {
	t := strings.TrimSpace(stdout)
	if !strings.HasPrefix(t, "{") || !json.Valid([]byte(t)) {
		return nil, t, ""
	}
	o = &output{}
	if err := json.Unmarshal([]byte(t), o); err != nil {
		return nil, "", strings.TrimPrefix(err.Error(), "json: ")
	}
	return o, "", ""
}

// permissionRank orders PreToolUse decisions: deny beats defer beats ask
// beats allow.
var permissionRank = map[string]int{"": 0, "allow": 1, "ask": 2, "defer": 3, "deny": 4}

// combine folds the answers of one event's hooks into res. event "" is an
// async hook's answer: only its context and messages count.
func combine(res *Result, event string, answers []answer) {
	var reasons []string
	for _, a := range answers {
		run := a.run
		if !a.exited { // timed out, cancelled, could not start: no decision
			res.Runs = append(res.Runs, run)
			continue
		}
		o, plain, problem := parseOutput(a.stdout)
		code := run.ExitCode
		stderr := strings.TrimSpace(a.stderr)
		run.Outcome = "ok"
		switch {
		case problem != "" && code != 2:
			run.Outcome, run.Message = "warning", "its JSON output does not fit Claude Code's schema: "+problem
			res.Runs = append(res.Runs, run)
			continue
		case o == nil && code == 127:
			run.Outcome, run.Message = "warning", "command not found: "+clip(firstLine(stderr), 300)
		case o == nil && code != 0 && code != 2:
			run.Outcome, run.Message = "warning", fmt.Sprintf("exit %d: %s", code, clip(firstLine(stderr), 300))
		}
		block, reason := code == 2, ""
		if o != nil {
			if o.Continue != nil && !*o.Continue && event != "" && !slices.Contains(noStop, event) {
				res.Stop = true
				res.StopReason = firstNonEmpty(res.StopReason, o.StopReason, "stopped by a "+event+" hook")
				run.Outcome, run.Message = "stopped", clip(firstNonEmpty(o.StopReason, "continue: false"), 300)
			}
			if m := strings.TrimSpace(o.SystemMessage); m != "" && !slices.Contains(noStop, event) {
				res.Messages = append(res.Messages, capText(m))
			}
			switch o.Decision {
			case "block":
				block, reason = true, o.Reason
				if event == PreToolUse { // the deprecated form of a deny
					res.Permission = "deny"
				}
			case "approve":
				if event == PreToolUse && permissionRank["allow"] > permissionRank[res.Permission] {
					res.Permission = "allow"
				}
			}
			if h := o.HookSpecificOutput; h != nil {
				if event == PreToolUse {
					p := h.PermissionDecision
					switch {
					case p == "defer":
						run.Message = "permissionDecision \"defer\" is for Claude Code's SDK; the normal permission flow applies"
					case permissionRank[p] > permissionRank[res.Permission]:
						res.Permission = p
					}
					if p == "deny" {
						block, reason = true, firstNonEmpty(h.PermissionDecisionReason, reason)
					} else if r := strings.TrimSpace(h.PermissionDecisionReason); r != "" {
						run.Message = clip(r, 300) // for allow and ask: shown to the user, not the model
					}
					if len(h.UpdatedInput) > 0 && string(h.UpdatedInput) != "null" && p != "defer" && res.UpdatedInput == nil {
						res.UpdatedInput = h.UpdatedInput
					}
				}
				if c := strings.TrimSpace(h.AdditionalContext); c != "" {
					res.Context = append(res.Context, capText(c))
				}
			}
		} else if code == 0 && plain != "" && (event == UserPromptSubmit || event == SessionStart) {
			res.Context = append(res.Context, capText(plain))
		}
		if block {
			reason = firstNonEmpty(reason, stderr)
			if event == "" || slices.Contains(unblockable, event) {
				run.Outcome, run.Message = "warning", fmt.Sprintf("exit 2 (a %s hook cannot block): %s", firstNonEmpty(event, "background"), clip(reason, 300))
			} else {
				res.Block, run.Outcome, run.Message = true, "blocked", clip(reason, 300)
				reasons = append(reasons, capText(reason))
			}
		}
		res.Runs = append(res.Runs, run)
	}
	if res.Permission == "deny" {
		res.Block = true
	}
	res.Reason = strings.TrimSpace(strings.Join(slices.DeleteFunc(reasons, func(s string) bool { return strings.TrimSpace(s) == "" }), "\n"))
	if res.Block && res.Reason == "" {
		res.Reason = "blocked by a " + event + " hook (it gave no reason)"
	}
}

// capText cuts a hook's text at Claude Code's 10,000 characters.
func capText(s string) string {
	if r := []rune(s); len(r) > maxText {
		return string(r[:maxText]) + fmt.Sprintf("\n[… %d more characters of the hook's output cut]", len(r)-maxText)
	}
	return s
}

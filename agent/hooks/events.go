package hooks

import (
	"slices"
	"time"
)

// The events Polly fires, named as Claude Code names them.
const (
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	UserPromptSubmit   = "UserPromptSubmit"
	Stop               = "Stop"
	SubagentStart      = "SubagentStart"
	SubagentStop       = "SubagentStop"
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
	PreCompact         = "PreCompact"
	PostCompact        = "PostCompact"
	Notification       = "Notification"
)

// documented is every event of Claude Code's hooks reference, so a real
// settings file is accepted whole; fired are those Polly has a moment for.
var (
	documented = []string{
		"SessionStart", "Setup", "InstructionsLoaded", "UserPromptSubmit", "UserPromptExpansion", "MessageDisplay",
		"PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PostToolBatch",
		"Notification", "SubagentStart", "SubagentStop", "TaskCreated", "TaskCompleted", "Stop", "StopFailure",
		"TeammateIdle", "ConfigChange", "CwdChanged", "DirectoryAdded", "FileChanged", "WorktreeCreate",
		"WorktreeRemove", "PreCompact", "PostCompact", "PreModelSwitch", "PostModelSwitch", "Elicitation",
		"ElicitationResult", "SessionEnd",
	}
	fired = []string{
		PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SubagentStart, SubagentStop,
		SessionStart, SessionEnd, PreCompact, PostCompact, Notification,
	}
	// noMatcher are the events whose matcher Claude Code ignores: their
	// hooks run on every occurrence.
	noMatcher = []string{
		"UserPromptSubmit", "PostToolBatch", "Stop", "TeammateIdle", "TaskCreated", "TaskCompleted",
		"WorktreeCreate", "WorktreeRemove", "MessageDisplay", "CwdChanged",
	}
	// unblockable are the events where exit 2 or "decision": "block" cannot
	// stop anything: the stderr is shown to the user only.
	unblockable = []string{
		SessionStart, SessionEnd, Notification, SubagentStart, PostCompact, "StopFailure", "PermissionDenied",
		"InstructionsLoaded", "CwdChanged", "FileChanged", "DirectoryAdded", "WorktreeRemove", "Setup",
	}
	// noStop are the events whose "continue": false is discarded.
	noStop = []string{Notification, PreCompact, PostCompact, SessionEnd, "StopFailure"}
)

// Events lists every event of Claude Code's hooks reference.
func Events() []string { return slices.Clone(documented) }

// Documented reports whether event is in Claude Code's hooks reference.
func Documented(event string) bool { return slices.Contains(documented, event) }

// Fired reports whether Polly ever fires event; hooks of the other
// documented events are accepted and reported as unused.
func Fired(event string) bool { return slices.Contains(fired, event) }

// FiredEvents lists the events Polly fires.
func FiredEvents() []string { return slices.Clone(fired) }

// defaultTimeout is a hook's timeout when its entry gives none, as Claude
// Code documents it: 10 minutes, 30 s before a prompt is processed.
func defaultTimeout(event string) time.Duration {
	if event == UserPromptSubmit {
		return 30 * time.Second
	}
	return DefaultTimeout
}

// DefaultTimeout is a hook's timeout when its entry gives none (Claude
// Code's default for command and http hooks).
const DefaultTimeout = 600 * time.Second

// sessionEndBudget is how long SessionEnd hooks may hold the exit when no
// entry asks for more; an entry's own timeout raises it, up to
// maxSessionEndBudget (Claude Code's rule).
const (
	sessionEndBudget    = 1500 * time.Millisecond
	maxSessionEndBudget = 60 * time.Second
)

// Package task keeps the state of the task an agent is working on — the
// original request, the model's own first statement of its plan, the plan,
// counters and recent activity — and writes it as a Markdown checkpoint
// (.agent/<agent-id>/active_task.md). The state lives outside the
// conversation, so summaries can be checked against it and a resumed
// session can be told where it was.
package task

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Status of a plan step.
type Status string

const (
	Todo       Status = "todo"
	InProgress Status = "in_progress"
	Done       Status = "done"
)

// Label renders a status the way anchors and checkpoints show it.
func (s Status) Label() string {
	switch s {
	case Done:
		return "DONE"
	case InProgress:
		return "IN PROGRESS"
	}
	return "TODO"
}

// Step is one plan step.
type Step struct {
	Title  string `json:"title"`
	Status Status `json:"status"`
}

// Action is one tool call, as remembered for the checkpoint.
type Action struct {
	Tool  string    `json:"tool"`
	Brief string    `json:"brief"` // key argument
	OK    bool      `json:"ok"`
	Note  string    `json:"note,omitempty"` // first line of an error, exit code…
	At    time.Time `json:"at"`
}

// State is one agent's task state. It is plain data (JSON-serialisable, no
// locks): the agent that owns it is its only writer.
type State struct {
	OriginalRequest  string    `json:"original_request"`
	Understanding    string    `json:"understanding,omitempty"` // first plan-like reply, captured once
	FollowUps        []string  `json:"follow_ups,omitempty"`    // later user messages in the same task
	Plan             []Step    `json:"plan,omitempty"`
	ToolCalls        int       `json:"tool_calls"`
	LastAnchorAt     int       `json:"last_anchor_at"`     // tool-call count when the last anchor was injected
	Anchors          int       `json:"anchors"`            // reminders injected so far
	LastCheckpointAt int       `json:"last_checkpoint_at"` // tool-call count at the last periodic checkpoint
	Compactions      int       `json:"compactions"`
	Files            []string  `json:"files,omitempty"` // files touched, in first-touch order
	Recent           []Action  `json:"recent,omitempty"`
	TokensIn         int       `json:"tokens_in"`
	TokensOut        int       `json:"tokens_out"`
	StartedAt        time.Time `json:"started_at"`
	Finished         bool      `json:"finished"`                   // the last run ended with a final answer
	LastReplyAsked   bool      `json:"last_reply_asked,omitempty"` // the last reply ended with a question
}

// MaxRecent is how many tool actions the state remembers (PRODUCT §3.3).
const MaxRecent = 20

// Active reports whether a task has been started.
func (s *State) Active() bool { return s.OriginalRequest != "" }

// continuation matches short replies that continue the current task rather
// than start a new one ("yes", "go on", "continue please").
var continuation = regexp.MustCompile(`(?i)^\s*((y|yes|yep|yeah|ok|okay|sure|go|go on|go ahead|continue|proceed|do it|please|please do|next|carry on|keep going|sounds good|lgtm|right|correct|no|nope|thanks|thank you|then|now|great|good|perfect)\b[\s.!,]*)+$`)

// IsNewTask decides whether a user message starts a new task. A message
// starts a new task when there is none yet, or when the previous task
// finished (its last run ended with a final answer, every plan step is done
// and the reply did not ask the user a question) and the message is not a
// bare continuation. Everything else is a follow-up: it never replaces the
// original request (PEERS §4: follow-ups mistaken for the task).
func (s *State) IsNewTask(msg string) bool {
	if !s.Active() {
		return true
	}
	if !s.Finished || s.LastReplyAsked || continuation.MatchString(msg) {
		return false
	}
	for _, st := range s.Plan {
		if st.Status != Done {
			return false
		}
	}
	return true
}

// Begin resets the state for a new task.
func (s *State) Begin(request string, now time.Time) {
	*s = State{OriginalRequest: request, StartedAt: now}
}

// FollowUp records a user message that continues the task.
func (s *State) FollowUp(msg string) {
	s.FollowUps = append(s.FollowUps, msg)
	if len(s.FollowUps) > 5 {
		s.FollowUps = s.FollowUps[len(s.FollowUps)-5:]
	}
	s.Finished = false
}

// Observe records an assistant reply: the first plan-like one becomes the
// expanded understanding (captured once per task).
func (s *State) Observe(reply string) {
	if s.Understanding == "" && IsPlanLike(reply) {
		s.Understanding = strings.TrimSpace(reply)
	}
}

// SetPlan replaces the plan. When no understanding was captured yet the
// plan itself becomes it, so anchors always carry the model's own words.
func (s *State) SetPlan(steps []Step) {
	s.Plan = slices.Clone(steps)
	if s.Understanding == "" && len(steps) > 0 {
		var b strings.Builder
		b.WriteString("Plan:\n")
		for i, st := range steps {
			b.WriteString(strconv.Itoa(i+1) + ". " + st.Title + "\n")
		}
		s.Understanding = strings.TrimSpace(b.String())
	}
}

// Record counts one finished tool call.
func (s *State) Record(a Action, files []string) {
	s.ToolCalls++
	s.Recent = append(s.Recent, a)
	if len(s.Recent) > MaxRecent {
		s.Recent = slices.Clone(s.Recent[len(s.Recent)-MaxRecent:])
	}
	for _, f := range files {
		if f != "" && !slices.Contains(s.Files, f) {
			s.Files = append(s.Files, f)
		}
	}
}

// CurrentStep returns the step in progress, else the first one not done.
func (s *State) CurrentStep() (int, Step, bool) {
	for i, st := range s.Plan {
		if st.Status == InProgress {
			return i, st, true
		}
	}
	for i, st := range s.Plan {
		if st.Status != Done {
			return i, st, true
		}
	}
	return 0, Step{}, false
}

var (
	numbered = regexp.MustCompile(`(?m)^\s*(\d+[.)]|[-*•])\s+\S`)
	planWord = regexp.MustCompile(`(?i)\b(plan|steps?|first|then|next|finally|I will|I'll|I'm going to|let me|approach|going to)\b`)
)

// IsPlanLike reports whether a reply states a plan: either a list of at
// least two items, or a substantial paragraph that talks about steps.
// Short acknowledgements ("Let me look.") do not count.
func IsPlanLike(reply string) bool {
	r := strings.TrimSpace(reply)
	if len(r) < 60 {
		return false
	}
	if len(numbered.FindAllStringIndex(r, 3)) >= 2 {
		return true
	}
	return len(r) >= 120 && len(planWord.FindAllStringIndex(r, 3)) >= 2
}

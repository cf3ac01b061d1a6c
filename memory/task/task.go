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
	"sync"
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
	RequestID        int64     `json:"request_id,omitempty"`    // where the whole request is stored (read_tool_output), 0: not stored
	Understanding    string    `json:"understanding,omitempty"` // first plan-like reply, captured once
	FollowUps        []string  `json:"follow_ups,omitempty"`    // every later user message of this task, whole
	FollowUpIDs      []int64   `json:"follow_up_ids,omitempty"` // parallel to FollowUps: where a long one is stored
	Plan             []Step    `json:"plan,omitempty"`
	ToolCalls        int       `json:"tool_calls"`
	LastAnchorAt     int       `json:"last_anchor_at"`       // tool-call count when the anchor number last advanced
	Anchors          int       `json:"anchors"`              // the task block's anchor number
	LastCheckpointAt int       `json:"last_checkpoint_at"`   // tool-call count at the last periodic checkpoint
	Checkpoint       string    `json:"checkpoint,omitempty"` // path of the latest checkpoint written
	Compactions      int       `json:"compactions"`
	Files            []string  `json:"files,omitempty"`      // files written, in first-touch order
	FilesRead        []string  `json:"files_read,omitempty"` // files read, in first-read order
	Skills           []string  `json:"skills,omitempty"`     // skills this task loaded (their instructions stay whole in context)
	Previous         string    `json:"previous,omitempty"`   // one line about the task before this one
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
var continuation = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^\s*((y|yes|yep|yeah|ok|okay|sure|go|go on|go ahead|continue|proceed|do it|please|please do|next|carry on|keep going|sounds good|lgtm|right|correct|no|nope|thanks|thank you|then|now|great|good|perfect)\b[\s.!,]*)+$`)
})

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
	if !s.Finished || s.LastReplyAsked || continuation().MatchString(msg) {
		return false
	}
	for _, st := range s.Plan {
		if st.Status != Done {
			return false
		}
	}
	// A finished task is reopened by a message about it: one that names
	// its files or shares its distinctive words ("also check file 7 again").
	return !s.RefersTo(msg)
}

// reopenWords start a message that adds to the work just done.
var reopenWords = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^\s*(also|and also|additionally|again|one more|as well|plus|and)\b`)
})

// RefersTo reports whether msg is about this task: it names one of its
// files (path or base name), or it starts like an addition ("also …") and
// shares a distinctive word with the task, or it shares two.
func (s *State) RefersTo(msg string) bool {
	lower := strings.ToLower(msg)
	for _, f := range append(slices.Clone(s.Files), s.FilesRead...) {
		f = strings.ToLower(f)
		base := f[strings.LastIndexByte(f, '/')+1:]
		if strings.Contains(lower, f) || (len(base) >= 4 && strings.Contains(lower, base)) {
			return true
		}
	}
	taskWords := map[string]bool{}
	var texts []string
	texts = append(texts, s.OriginalRequest)
	texts = append(texts, s.FollowUps...)
	for _, st := range s.Plan {
		texts = append(texts, st.Title)
	}
	for _, t := range texts {
		for _, w := range Words(t) {
			taskWords[w] = true
		}
	}
	shared := 0
	for _, w := range Words(msg) {
		if taskWords[w] {
			shared++
			delete(taskWords, w)
		}
	}
	if reopenWords().MatchString(msg) {
		return shared >= 1
	}
	return shared >= 2
}

// stopWords are too common to tie a message to a task (a set built on
// first use, not at start-up).
var stopWords = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"the": true, "and": true, "for": true, "with": true, "this": true, "that": true, "then": true, "than": true,
		"from": true, "into": true, "your": true, "you": true, "are": true, "was": true, "were": true, "have": true,
		"has": true, "not": true, "but": true, "all": true, "any": true, "can": true, "could": true, "would": true,
		"should": true, "will": true, "please": true, "also": true, "again": true, "now": true, "what": true,
		"which": true, "when": true, "where": true, "how": true, "why": true, "who": true, "make": true,
		"some": true, "more": true, "each": true, "every": true,
		"about": true, "there": true, "their": true, "them": true, "they": true, "its": true, "just": true, "like": true,
		"want": true, "need": true, "use": true, "using": true, "new": true, "one": true, "two": true, "get": true,
	}
})

var wordRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[\p{L}\p{N}_][\p{L}\p{N}_.-]*[\p{L}\p{N}_]|[\p{L}\p{N}]`)
})

// Words are the distinctive words of a text: lower case, at least three
// characters or a number, no stop words.
func Words(text string) []string {
	var out []string
	for _, w := range wordRe().FindAllString(strings.ToLower(text), -1) {
		_, numErr := strconv.Atoi(w)
		if stopWords()[w] || (len(w) < 3 && numErr != nil) {
			continue
		}
		if len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1] // files → file: plurals name the same thing
		}
		out = append(out, w)
	}
	return out
}

// Begin resets the state for a new task. Nothing of the previous task is
// carried but one line saying what it was and how it ended.
func (s *State) Begin(request string, now time.Time) {
	prev := ""
	if s.Active() {
		status := "unfinished"
		if s.Finished {
			status = "done"
		}
		prev = "Previous task: " + firstLine(s.OriginalRequest, 160) + " (" + status + ")"
	}
	*s = State{OriginalRequest: request, StartedAt: now, Previous: prev}
}

// MaxFollowUps bounds the follow-ups one task keeps; past it the oldest
// ones go (a task that long has been restated many times over).
const MaxFollowUps = 50

// FollowUp records a user message that continues (or reopens) the task.
func (s *State) FollowUp(msg string) {
	s.FollowUps = append(s.FollowUps, msg)
	for len(s.FollowUpIDs) < len(s.FollowUps) {
		s.FollowUpIDs = append(s.FollowUpIDs, 0)
	}
	if n := len(s.FollowUps); n > MaxFollowUps {
		s.FollowUps = slices.Clone(s.FollowUps[n-MaxFollowUps:])
		s.FollowUpIDs = slices.Clone(s.FollowUpIDs[len(s.FollowUpIDs)-MaxFollowUps:])
	}
	s.Finished = false
}

// SetLastFollowUpID records where the latest follow-up is stored whole.
func (s *State) SetLastFollowUpID(id int64) {
	if n := len(s.FollowUpIDs); n > 0 {
		s.FollowUpIDs[n-1] = id
	}
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

// Record counts one finished tool call with the files it wrote and read.
func (s *State) Record(a Action, written, read []string) {
	s.ToolCalls++
	s.Recent = append(s.Recent, a)
	if len(s.Recent) > MaxRecent {
		s.Recent = slices.Clone(s.Recent[len(s.Recent)-MaxRecent:])
	}
	s.Files = addNew(s.Files, written)
	s.FilesRead = addNew(s.FilesRead, read)
}

// LoadedSkill records that the task loaded a skill.
func (s *State) LoadedSkill(name string) { s.Skills = addNew(s.Skills, []string{name}) }

func addNew(list, add []string) []string {
	for _, f := range add {
		if f != "" && !slices.Contains(list, f) {
			list = append(list, f)
		}
	}
	return list
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

// The shapes a stated approach takes (IsPlanLike). Compiled on first use.
var (
	// A list line: "1. …", "2) …", "a. …", "B) …", "- …", "* …", "• …",
	// "- [ ] …", "**1.** …", "Step 2: …", "### Step 1", "1️⃣ …".
	listLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?mi)^[ \t>]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?(?:\d{1,2}[.):]|[a-h][.)]|[-*•+](?:[ \t]+\[[ x]\])?|step[ \t]+\d+[.:)]?|\d\x{FE0F}?\x{20E3})(?:\*\*|__)?[ \t]+\S`)
	})
	// An inline enumeration: "A) login, B) signup", "(1) read (2) fix",
	// "1) read 2) fix".
	inlineItem = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[\s,;:(])(?:\(?[A-Ha-h1-9]\))[ \t]+\S`)
	})
	// "I'll …: read the config, fix the parser and run the tests".
	colonList = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:I'll|I will|I'm going to|I am going to|let me|we'll|we will|plan|approach|steps?|here's what|here is what|to do this)\b[^:.\n]{0,80}:[^.\n]*?[^,.\n]{3,},[^,.\n]{3,}(?:,|\band\b|\bthen\b)[^.\n]{3,}`)
	})
	// Sequence words of a short paragraph: "First …, then …, finally …".
	sequenceWord = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(first(?:ly)?|start by|begin(?:ning)? (?:by|with)|then|next|after that|afterwards|once (?:that|this|it)(?:'s| is) done|finally|lastly)\b`)
	})
	arrow    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\S\s*(?:→|->|=>)\s*\S`) })
	planWord = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(plan|steps?|first|then|next|finally|I will|I'll|I'm going to|let me|approach|going to)\b`)
	})
)

// IsPlanLike reports whether a reply states an approach, in any of the
// forms models use: a list of at least two items (numbered, lettered,
// bulleted, checkboxes, "Step N:" lines, headings), an inline enumeration
// ("I'll implement: A) login, B) signup, C) reset"), an intention with a
// colon and three items ("I'll: read the config, fix the parser and run
// the tests"), a short paragraph with a sequence ("First I'll read …, then
// …"), a chain of arrows, or a longer paragraph that talks about steps.
// Short acknowledgements ("Let me look.", "I'll read the file first.") do
// not count.
func IsPlanLike(reply string) bool {
	r := strings.TrimSpace(reply)
	if len(r) < 40 {
		return false
	}
	distinct := func(re *regexp.Regexp) int {
		seen := map[string]bool{}
		for _, m := range re.FindAllStringSubmatch(r, -1) {
			w := strings.ToLower(m[len(m)-1])
			if w == "" {
				w = strings.ToLower(m[0])
			}
			seen[w] = true
		}
		return len(seen)
	}
	switch {
	case len(listLine().FindAllStringIndex(r, 3)) >= 2,
		len(inlineItem().FindAllStringIndex(r, 3)) >= 2,
		colonList().MatchString(r),
		len(arrow().FindAllStringIndex(r, 3)) >= 2:
		return true
	case len(r) >= 50 && distinct(sequenceWord()) >= 2:
		return true
	}
	return len(r) >= 120 && len(planWord().FindAllStringIndex(r, 3)) >= 2
}

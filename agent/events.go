package agent

import (
	"encoding/json"
	"time"

	"polly/memory/chat"
	"polly/tools"
)

// Event is one thing that happened during a run. The headless printer and
// the TUI both consume the same stream. Every event has a stable Type name
// used as the "type" field of stream-json output.
type Event interface {
	Type() string
	Head() Header
}

// Header identifies who emitted an event.
type Header struct {
	Session string    `json:"session"`
	Agent   string    `json:"agent"`            // agent instance: persona id, or "coder#2" for a second concurrent run
	Persona string    `json:"persona"`          // persona id
	Parent  string    `json:"parent,omitempty"` // parent agent for sub-agents
	Time    time.Time `json:"time"`
}

func (h Header) Head() Header { return h }

// TextDelta is a piece of streamed assistant text.
type TextDelta struct {
	Header
	Text string `json:"text"`
}

// ReasoningDelta is streamed provider reasoning (shown dimmed, never stored as the reply).
type ReasoningDelta struct {
	Header
	Text string `json:"text"`
}

// MessageDone is a completed assistant message (stored before the event is sent).
type MessageDone struct {
	Header
	Message chat.Message `json:"message"`
}

// ToolStarted is sent when a tool call begins.
type ToolStarted struct {
	Header
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Args   string `json:"args"`
	Brief  string `json:"brief"` // the key argument, for a compact display
	// ByUser: a command the user ran (Session.Shell), not the model.
	ByUser bool `json:"by_user,omitempty"`
}

// ToolFinished is sent when a tool call ends.
type ToolFinished struct {
	Header
	CallID      string        `json:"call_id"`
	Tool        string        `json:"tool"`
	Brief       string        `json:"brief"`
	Duration    time.Duration `json:"duration_ns"`
	OutputChars int           `json:"output_chars"`
	OutputLines int           `json:"output_lines"`
	IsError     bool          `json:"is_error"`
	ExecID      int64         `json:"exec_id"`
	Offloaded   bool          `json:"offloaded"`
	ExitCode    *int          `json:"exit_code,omitempty"`
	Diff        string        `json:"diff,omitempty"`
	Preview     string        `json:"preview"` // what the model saw
	// FilesChanged: what a run_command that may write created, changed and
	// deleted (nil when it was not tracked).
	FilesChanged *tools.TreeChanges `json:"files_changed,omitempty"`
	Status       string             `json:"status"` // ok, error, denied (permission), interrupted (cancelled)
}

// Usage reports the tokens of one model call.
type Usage struct {
	Header
	Model         string        `json:"model"`
	Usage         chat.Usage    `json:"usage"`
	ContextTokens int           `json:"context_tokens"` // tokens of the prompt as sent
	Threshold     int           `json:"threshold"`      // summarization threshold for this model
	Cost          float64       `json:"cost"`           // USD, 0 when prices are unknown
	Latency       time.Duration `json:"latency_ns"`
}

// Retrying reports a wait before the provider is tried again.
type Retrying struct {
	Header
	Attempt int           `json:"attempt"`
	Wait    time.Duration `json:"wait_ns"`
	Reason  string        `json:"reason"`
	Discard bool          `json:"discard"` // the text streamed since the last message is void: the reply starts over
}

// Notice is a harness message for the user (a warning that did not stop the run).
type Notice struct {
	Header
	Level string `json:"level"` // "info" or "warn"
	Text  string `json:"text"`
}

// ErrorEvent is a failure that ended a step or the run.
type ErrorEvent struct {
	Header
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"` // what the user can do
}

// Done ends a run.
type Done struct {
	Header
	Reason    string     `json:"reason"` // completed, max_turns, cancelled, error
	Final     string     `json:"final"`  // the last assistant text
	Turns     int        `json:"turns"`
	ToolCalls int        `json:"tool_calls"`
	Usage     chat.Usage `json:"usage"`
	Cost      float64    `json:"cost"`
}

func (TextDelta) Type() string      { return "text_delta" }
func (ReasoningDelta) Type() string { return "reasoning_delta" }
func (MessageDone) Type() string    { return "message" }
func (ToolStarted) Type() string    { return "tool_started" }
func (ToolFinished) Type() string   { return "tool_finished" }
func (Usage) Type() string          { return "usage" }
func (Retrying) Type() string       { return "retrying" }
func (Notice) Type() string         { return "notice" }
func (ErrorEvent) Type() string     { return "error" }
func (Done) Type() string           { return "done" }

// MarshalEvent renders an event as one JSON object with its "type" first.
func MarshalEvent(e Event) ([]byte, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	typ, _ := json.Marshal(e.Type())
	out := make([]byte, 0, len(body)+len(typ)+10)
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	if len(body) > 2 {
		out = append(out, ',')
		out = append(out, body[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// AnchorInjected: a smart task anchor was appended to the context.
type AnchorInjected struct {
	Header
	Number    int    `json:"number"`
	ToolCalls int    `json:"tool_calls"`
	Text      string `json:"text"`
}

// CheckpointWritten: active_task.md was written.
type CheckpointWritten struct {
	Header
	Path      string `json:"path"`
	Reason    string `json:"reason"` // periodic, summary, switch, end
	ToolCalls int    `json:"tool_calls"`
}

// OutputOffloaded: a large tool output went to SQLite; the context keeps a preview.
type OutputOffloaded struct {
	Header
	ExecID int64  `json:"exec_id"`
	Tool   string `json:"tool"`
	Chars  int    `json:"chars"`
	Lines  int    `json:"lines"`
}

// SummaryStarted: task-aware summarization began.
type SummaryStarted struct {
	Header
	Reason       string `json:"reason"` // threshold, context_length, manual
	TokensBefore int    `json:"tokens_before"`
	Messages     int    `json:"messages"` // messages being replaced
}

// SummaryFinished: summarization ended (accepted or rejected).
type SummaryFinished struct {
	Header
	TokensBefore int      `json:"tokens_before"`
	TokensAfter  int      `json:"tokens_after"`
	Replaced     int      `json:"replaced"` // messages replaced by the summary
	Kept         int      `json:"kept"`     // recent messages kept raw
	Heuristic    bool     `json:"heuristic"`
	Accepted     bool     `json:"accepted"`
	Added        []string `json:"added,omitempty"` // plan steps / files the check had to add
	ArchivePath  string   `json:"archive_path,omitempty"`
	Summary      string   `json:"summary,omitempty"`
	Why          string   `json:"why,omitempty"` // why a summary was rejected or fell back
}

// FallbackUsed: the hard context limit was passed and old messages were cut.
type FallbackUsed struct {
	Header
	Tokens int    `json:"tokens"`
	Hard   int    `json:"hard"`
	Detail string `json:"detail"`
}

func (AnchorInjected) Type() string    { return "anchor" }
func (CheckpointWritten) Type() string { return "checkpoint" }
func (OutputOffloaded) Type() string   { return "offloaded" }
func (SummaryStarted) Type() string    { return "summary_started" }
func (SummaryFinished) Type() string   { return "summary_finished" }
func (FallbackUsed) Type() string      { return "fallback" }

// SubAgentStarted: delegate_task started a sub-agent. Its own events
// (text, tools, usage…) follow with Header.Parent set to the parent agent.
type SubAgentStarted struct {
	Header
	CallID       string `json:"call_id"`       // the parent's delegate_task call
	Task         string `json:"task"`          // the task given
	ChildSession string `json:"child_session"` // the sub-agent's transcript (a child session)
	Model        string `json:"model"`         // the model it talks to
}

// SubAgentProgress is the live line of a running sub-agent, sent when its
// state changes (a tool starts or ends, usage arrives).
type SubAgentProgress struct {
	Header
	Tool      string        `json:"tool"` // current tool, "" while the model is thinking
	Brief     string        `json:"brief"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	ToolCalls int           `json:"tool_calls"`
	Usage     chat.Usage    `json:"usage"`
	Cost      float64       `json:"cost"`
}

// SubAgentFinished: a sub-agent ended.
type SubAgentFinished struct {
	Header
	CallID       string        `json:"call_id"`
	Status       string        `json:"status"` // completed, failed, cancelled, max_turns
	Summary      string        `json:"summary"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	ToolCalls    int           `json:"tool_calls"`
	Usage        chat.Usage    `json:"usage"`
	Cost         float64       `json:"cost"`
	ChildSession string        `json:"child_session"`
}

// PersonaSwitched: the user switched personas; Card is the handoff card the
// new persona receives with its next message.
type PersonaSwitched struct {
	Header
	From string `json:"from"`
	To   string `json:"to"`
	Card string `json:"card"`
}

func (SubAgentStarted) Type() string  { return "subagent_started" }
func (SubAgentProgress) Type() string { return "subagent_progress" }
func (SubAgentFinished) Type() string { return "subagent_finished" }
func (PersonaSwitched) Type() string  { return "persona_switched" }

// StatusUpdate carries an agent's status-bar numbers after each step, so a
// UI never reads the agent while it runs.
type StatusUpdate struct {
	Header
	Status Status `json:"status"`
}

func (StatusUpdate) Type() string { return "status" }

// Package chat holds the provider-neutral conversation types shared by the
// store, the context policy, the LLM adapter and the agent loop.
package chat

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Role is who wrote a message, in the chat-completions sense.
type Role string

const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	Tool      Role = "tool"
)

// Kind tells the harness what a message is for. The model only ever sees
// Role and Content; Kind lets the context policy find the messages it owns
// (anchors, summaries) without parsing text.
type Kind string

const (
	KindNormal     Kind = ""            // user prompt, model reply, tool result
	KindAnchor     Kind = "anchor"      // legacy: a stored task anchor (never sent any more)
	KindSummary    Kind = "summary"     // structured summary replacing older messages
	KindActiveTask Kind = "active_task" // legacy: a stored [ACTIVE TASK] block (never sent any more)
	KindTaskBlock  Kind = "task_block"  // the live task block, rebuilt for every request, never stored
	KindHandoff    Kind = "handoff"     // handoff card on persona switch
	KindResume     Kind = "resume"      // checkpoint injected when a session resumes
	KindNote       Kind = "note"        // other harness notes (e.g. interrupted tool call)
	KindShell      Kind = "shell"       // a command the user ran (the TUI's ! mode), then its output
	KindPartial    Kind = "partial"     // what streamed of a reply the user cancelled (sent, marked)
)

// ToolCall is one function call requested by the model.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // raw JSON text exactly as the model produced it
}

// Message is one entry of a conversation.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant messages only
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool messages only
	ToolName   string     `json:"tool_name,omitempty"`    // tool messages: which tool answered

	// Harness metadata, never sent to the model.
	ID     int64   `json:"id,omitempty"`     // row id in the store; 0 until stored
	Kind   Kind    `json:"kind,omitempty"`   // see Kind
	Output *Output `json:"output,omitempty"` // tool messages: where the whole output lives
	Tokens int     `json:"tokens,omitempty"` // cached token estimate of Content (0 = unknown)
	// Label is what a transcript shows for a user message instead of
	// Content: the draft as typed, with long pastes as tokens; a command
	// as typed for the prompt it sent.
	Label string `json:"label,omitempty"`
}

// Output describes the stored, whole output behind a tool message so the
// context policy can shrink the message without any I/O.
type Output struct {
	ExecID    int64  `json:"exec_id"`        // tool_executions row id
	Chars     int    `json:"chars"`          // length of the whole output in characters
	Lines     int    `json:"lines"`          // lines in the whole output
	Offloaded bool   `json:"offloaded"`      // Content is a preview, not the whole output
	Failed    bool   `json:"failed"`         // the tool reported an error
	Stub      string `json:"stub,omitempty"` // the one line a stale output shrinks to, made once when stored
	// Keep: instructions the model works by (a loaded skill): never
	// offloaded, and not shrunk while the task that loaded it runs.
	Keep bool `json:"keep,omitempty"`
}

// Usage is the token accounting the provider reports for one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		CachedTokens:     u.CachedTokens + o.CachedTokens,
	}
}

// Text builders for the common cases.

func UserText(s string) Message      { return Message{Role: User, Content: s} }
func SystemText(s string) Message    { return Message{Role: System, Content: s} }
func AssistantText(s string) Message { return Message{Role: Assistant, Content: s} }

// ToolResult builds the tool message answering call.
func ToolResult(call ToolCall, content string) Message {
	return Message{Role: Tool, ToolCallID: call.ID, ToolName: call.Name, Content: content}
}

// IsHarness reports whether the message was written by the harness rather
// than by the user, the model or a tool.
func (m Message) IsHarness() bool { return m.Kind != KindNormal }

// CountLines counts lines the way an editor does: a trailing newline does not
// start a new line.
func CountLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// briefKeys are the arguments that best identify a call, in order.
var briefKeys = []string{"path", "file", "command", "pattern", "url", "agent", "query", "id", "section", "list", "selector"}

// Brief returns the key argument of a call for compact display, e.g.
// `path=main.go` or `command=go test ./...`. Malformed arguments give "".
func (tc ToolCall) Brief() string {
	var args map[string]any
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		return ""
	}
	for _, k := range briefKeys {
		v, ok := args[k]
		if !ok {
			continue
		}
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			continue
		}
		s = strings.Join(strings.Fields(s), " ")
		if r := []rune(s); len(r) > 80 {
			s = string(r[:77]) + "..."
		}
		return k + "=" + s
	}
	return ""
}

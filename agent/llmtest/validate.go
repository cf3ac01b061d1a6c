package llmtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Wire fields a chat message may carry. Anything else (the harness's id,
// kind, output, tokens, tool_name) leaking onto the wire is a bug.
var (
	messageFields  = []string{"role", "content", "tool_calls", "tool_call_id", "name"}
	toolCallFields = []string{"id", "type", "function"}
	functionFields = []string{"name", "arguments"}
	roles          = []string{"system", "developer", "user", "assistant", "tool"}
)

// validate checks a request the way OpenAI does and returns the error
// message to answer with, or "" when the request is fine.
func validate(raw []byte, req Request) string {
	if msg := checkFields(raw); msg != "" {
		return msg
	}
	if len(req.Messages) == 0 {
		return "[] is too short - 'messages'"
	}
	return checkToolPairs(req.Messages)
}

func checkFields(raw []byte) string {
	var body struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return "llmtest: messages is not an array of objects: " + err.Error()
	}
	for i, m := range body.Messages {
		for k := range m {
			if !slices.Contains(messageFields, k) {
				return fmt.Sprintf("llmtest: messages[%d] has field %q, which is not part of the chat-completions wire format (harness-only field leaked?)", i, k)
			}
		}
		var role string
		_ = json.Unmarshal(m["role"], &role)
		if !slices.Contains(roles, role) {
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'. (messages[%d].role)", role, i)
		}
		tcRaw, ok := m["tool_calls"]
		if !ok {
			continue
		}
		var calls []map[string]json.RawMessage
		if err := json.Unmarshal(tcRaw, &calls); err != nil {
			return fmt.Sprintf("llmtest: messages[%d].tool_calls is not an array of objects: %v", i, err)
		}
		for j, c := range calls {
			for k := range c {
				if !slices.Contains(toolCallFields, k) {
					return fmt.Sprintf("llmtest: messages[%d].tool_calls[%d] has unexpected field %q", i, j, k)
				}
			}
			var fn map[string]json.RawMessage
			if err := json.Unmarshal(c["function"], &fn); err != nil {
				return fmt.Sprintf("Missing required parameter: 'messages[%d].tool_calls[%d].function'.", i, j)
			}
			for k := range fn {
				if !slices.Contains(functionFields, k) {
					return fmt.Sprintf("llmtest: messages[%d].tool_calls[%d].function has unexpected field %q", i, j, k)
				}
			}
		}
	}
	return ""
}

// checkToolPairs enforces OpenAI's rule: an assistant message with tool
// calls is followed directly by one tool message per call id, and a tool
// message only ever answers such a message.
func checkToolPairs(msgs []Message) string {
	var open []string // ids of the current assistant message not answered yet
	inGroup := false
	unanswered := func() string {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
			"The following tool_call_ids did not have response messages: " + joinIDs(open)
	}
	var asked []string // all ids of the current assistant message
	for _, m := range msgs {
		if m.Role == "tool" {
			if !inGroup {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
			}
			if !slices.Contains(asked, m.ToolCallID) {
				return fmt.Sprintf("Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", m.ToolCallID)
			}
			open = slices.DeleteFunc(open, func(id string) bool { return id == m.ToolCallID })
			continue
		}
		if inGroup && len(open) > 0 {
			return unanswered()
		}
		inGroup = m.Role == "assistant" && len(m.ToolCalls) > 0
		open, asked = nil, nil
		for _, c := range m.ToolCalls {
			open = append(open, c.ID)
			asked = append(asked, c.ID)
		}
	}
	if inGroup && len(open) > 0 {
		return unanswered()
	}
	return ""
}

// joinIDs formats ids for error messages.
func joinIDs(ids []string) string { return strings.Join(ids, ", ") }

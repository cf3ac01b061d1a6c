package window

import (
	"fmt"

	"polly/memory/chat"
)

// Interrupted is the result given to a tool call that has none (a crash or
// a cut happened between the call and its result).
const Interrupted = "[no result: this tool call was interrupted before it finished]"

// Validate checks the rule every provider enforces: an assistant message
// with tool_calls is followed by exactly one tool message per call, before
// anything else; no tool message appears anywhere else.
func Validate(h []chat.Message) error {
	for i := 0; i < len(h); i++ {
		m := &h[i] // not a copy: this runs over the whole history before every request
		if m.Role == chat.Tool {
			return fmt.Errorf("message %d: tool result %q does not follow an assistant tool call", i, m.ToolCallID)
		}
		if m.Role != chat.Assistant || len(m.ToolCalls) == 0 {
			continue
		}
		// Calls per message are few: quadratic scans beat maps here, and
		// this runs on every request.
		calls := m.ToolCalls
		for a := range calls {
			for b := a + 1; b < len(calls); b++ {
				if calls[a].ID == calls[b].ID {
					return fmt.Errorf("message %d: duplicate tool call id %q", i, calls[a].ID)
				}
			}
		}
		j := i + 1
		for ; j < len(h) && h[j].Role == chat.Tool; j++ {
			id := h[j].ToolCallID
			found := false
			for _, tc := range calls {
				if tc.ID == id {
					found = true
					break
				}
			}
			if !found {
				return fmt.Errorf("message %d: tool result %q answers no call of message %d", j, id, i)
			}
			for k := i + 1; k < j; k++ {
				if h[k].ToolCallID == id {
					return fmt.Errorf("message %d: second result for tool call %q", j, id)
				}
			}
		}
		if j-(i+1) != len(calls) {
			return fmt.Errorf("message %d: %d tool call(s) have no result", i, len(calls)-(j-(i+1)))
		}
		i = j - 1
	}
	return nil
}

// Repair makes a history valid: orphan or duplicate tool results are
// dropped, missing ones are added as Interrupted, results are kept in the
// order of the calls. It returns how many messages it added or dropped.
func Repair(h []chat.Message) ([]chat.Message, int) {
	if Validate(h) == nil {
		return h, 0
	}
	out := make([]chat.Message, 0, len(h))
	fixes := 0
	for i := 0; i < len(h); i++ {
		m := h[i]
		if m.Role == chat.Tool {
			fixes++ // orphan
			continue
		}
		out = append(out, m)
		if m.Role != chat.Assistant || len(m.ToolCalls) == 0 {
			continue
		}
		results := map[string]chat.Message{}
		j := i + 1
		for ; j < len(h) && h[j].Role == chat.Tool; j++ {
			if _, dup := results[h[j].ToolCallID]; dup {
				fixes++
				continue
			}
			results[h[j].ToolCallID] = h[j]
		}
		seen := map[string]bool{}
		for _, tc := range m.ToolCalls {
			if seen[tc.ID] {
				continue
			}
			seen[tc.ID] = true
			if r, ok := results[tc.ID]; ok {
				out = append(out, r)
				delete(results, tc.ID)
			} else {
				out = append(out, chat.Message{Role: chat.Tool, ToolCallID: tc.ID, ToolName: tc.Name, Content: Interrupted, Kind: chat.KindNote})
				fixes++
			}
		}
		fixes += len(results)
		i = j - 1
	}
	// Duplicate call ids inside one assistant message cannot be answered
	// twice; drop the repeats so the provider accepts the history.
	for i := range out {
		if len(out[i].ToolCalls) < 2 {
			continue
		}
		seen := map[string]bool{}
		var tcs []chat.ToolCall
		for _, tc := range out[i].ToolCalls {
			if !seen[tc.ID] {
				seen[tc.ID] = true
				tcs = append(tcs, tc)
			}
		}
		if len(tcs) != len(out[i].ToolCalls) {
			out[i].ToolCalls = tcs
			fixes++
		}
	}
	return out, fixes
}

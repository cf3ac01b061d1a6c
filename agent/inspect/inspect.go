// Package inspect shows what a model received on one call: the request
// rebuilt from its stored record (memory/store), with the token breakdown
// by part — system prompt, memory files, tools, summary, history, task
// block — as `polly inspect` prints it and the TUI's /context shows it, and
// the request body as sent, as JSON.
package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/dustin/go-humanize"

	"polly/memory/chat"
	"polly/memory/store"
)

// Find returns the calls of a session and the one numbered n (1-based; 0:
// the latest with a record).
func Find(ctx context.Context, st *store.Store, session string, n int) (store.CallInfo, []store.CallInfo, error) {
	calls, err := st.Calls(ctx, session)
	if err != nil {
		return store.CallInfo{}, nil, err
	}
	if len(calls) == 0 {
		return store.CallInfo{}, nil, fmt.Errorf("session %s has made no model call yet", session)
	}
	if n == 0 {
		for i := len(calls) - 1; i >= 0; i-- {
			if calls[i].Record != nil || calls[i].Bad != "" {
				return calls[i], calls, nil
			}
		}
		return calls[len(calls)-1], calls, nil
	}
	if n < 1 || n > len(calls) {
		return store.CallInfo{}, calls, fmt.Errorf("session %s has %d model calls; there is no call %d", session, len(calls), n)
	}
	return calls[n-1], calls, nil
}

// wireMessage is a message as the chat-completions API takes it, the way
// Polly's client sends it: an assistant message with tool calls and no text
// has no content field. It is written here from the chat-completions format
// itself, not from agent/llm's encoder, whose internals follow the HTTP
// client (TestInspectRebuildsEveryRequest compares the two on the wire).
type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Body is the request as sent, as JSON: model, messages, tools,
// temperature, max_tokens, stream.
func Body(rb store.Rebuilt) ([]byte, error) {
	r := rb.Call.Record
	if r == nil {
		return nil, store.ErrNoRecord
	}
	body := struct {
		Model       string          `json:"model"`
		Messages    []wireMessage   `json:"messages"`
		Tools       json.RawMessage `json:"tools,omitempty"`
		Temperature *float64        `json:"temperature,omitempty"`
		MaxTokens   int             `json:"max_tokens,omitempty"`
		Stream      bool            `json:"stream"`
	}{Model: r.Model, Temperature: r.Temperature, MaxTokens: r.MaxTokens, Stream: true}
	if rb.Tools != "" {
		body.Tools = json.RawMessage(rb.Tools)
	}
	for _, m := range rb.Messages {
		w := wireMessage{Role: string(m.Role), ToolCallID: m.ToolCallID}
		content := m.Content
		if m.Role != chat.Assistant || m.Content != "" || len(m.ToolCalls) == 0 {
			w.Content = &content
		}
		for _, tc := range m.ToolCalls {
			c := wireToolCall{ID: tc.ID, Type: "function"}
			c.Function.Name, c.Function.Arguments = tc.Name, tc.Arguments
			w.ToolCalls = append(w.ToolCalls, c)
		}
		body.Messages = append(body.Messages, w)
	}
	return json.MarshalIndent(body, "", "  ")
}

// List prints a session's calls, one a line.
func List(w io.Writer, session string, calls []store.CallInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: %d model calls — polly inspect %s N shows call N\n", session, len(calls), session)
	for _, c := range calls {
		kind, tokens := "(no record)", ""
		if c.Record != nil {
			kind = c.Record.Kind
			tokens = fmt.Sprintf("%s tokens sent", humanize.Comma(int64(c.Record.Tokens.Total())))
		}
		if c.Bad != "" {
			kind = "(damaged record)"
		}
		status := fmt.Sprintf("%s prompt tokens counted", humanize.Comma(int64(c.Usage.PromptTokens)))
		if c.Error != "" {
			status = "failed: " + c.ErrorKind
		}
		fmt.Fprintf(&b, "%4d  %s  %-10s %-10s %s  %s · %s\n", c.Number, c.CreatedAt.Local().Format("15:04:05"), c.Persona, kind, c.Model, tokens, status)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Render prints what the model received on the call: the numbers, the
// token breakdown by part with a bar each (as Claude Code's /context), then
// every message, one line each.
func Render(w io.Writer, rb store.Rebuilt, of int) error {
	c, r := rb.Call, rb.Call.Record
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s · call %d of %d · %s · %s · %s · %s request\n", c.SessionID, c.Number, of, c.Persona, r.Model,
		c.CreatedAt.Local().Format("2006-01-02 15:04:05"), r.Kind)
	total := r.Tokens.Total()
	line := fmt.Sprintf("Context: %s tokens (estimated when sent", humanize.Comma(int64(total)))
	if c.Usage.PromptTokens > 0 {
		line += fmt.Sprintf("; the provider counted %s", humanize.Comma(int64(c.Usage.PromptTokens)))
	}
	line += ")"
	if r.Budget > 0 {
		line += fmt.Sprintf(" of a %s-token budget (window %s)", humanize.Comma(int64(r.Budget)), humanize.Comma(int64(r.Window)))
	}
	if r.Threshold > 0 {
		line += fmt.Sprintf(" · summarizes at %s", humanize.Comma(int64(r.Threshold)))
	}
	b.WriteString(line + "\n\n")

	whole := max(total, r.Budget)
	parts := []struct {
		name string
		n    int
	}{
		{"system prompt", r.Tokens.System}, {"memory files", r.Tokens.Memory}, {fmt.Sprintf("tools (%d)", r.ToolCount), r.Tokens.Tools},
		{"summary", r.Tokens.Summary}, {"history", r.Tokens.History}, {"task block", r.Tokens.Block},
	}
	for _, p := range parts {
		fmt.Fprintf(&b, "  %-14s %8s  %5.1f%%  %s\n", p.name, humanize.Comma(int64(p.n)), pct(p.n, whole), bar(p.n, whole))
	}
	if free := r.Budget - total; r.Budget > 0 {
		fmt.Fprintf(&b, "  %-14s %8s  %5.1f%%\n", "free", humanize.Comma(int64(free)), pct(free, whole))
	}

	fmt.Fprintf(&b, "\nMessages (%d):\n", len(rb.Messages))
	sent := expand(r.Messages)
	for i, m := range rb.Messages {
		what := string(m.Role)
		switch {
		case i == 0 && m.Role == chat.System:
			what = "system"
		case m.Kind == chat.KindSummary:
			what += " [summary]"
		case m.Kind == chat.KindTaskBlock:
			what += " [task block]"
		case m.Kind != chat.KindNormal:
			what += " [" + string(m.Kind) + "]"
		}
		fmt.Fprintf(&b, "%4d  %-20s %s\n", i, what, preview(m, sent, i))
	}
	fmt.Fprintf(&b, "\npolly inspect %s %d --json prints the request body as sent.\n", c.SessionID, c.Number)
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(n, of int) float64 {
	if of <= 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// bar is a share as up to 30 blocks ("▏" for less than one).
func bar(n, of int) string {
	switch {
	case of <= 0 || n <= 0:
		return ""
	case n*30/of == 0:
		return "▏"
	}
	return strings.Repeat("█", n*30/of)
}

// preview is one line about a message: its start, its calls, and whether
// what was sent differs from what is stored.
func preview(m chat.Message, rec []store.RecordedMessage, i int) string {
	s := strings.Join(strings.Fields(m.Content), " ")
	if n := utf8.RuneCountInString(s); n > 90 {
		s = string([]rune(s)[:90]) + "…"
	}
	if s != "" {
		s = fmt.Sprintf("%q", s)
	}
	for _, tc := range m.ToolCalls {
		call := tc.Name + "(" + tc.Brief() + ")"
		if s != "" {
			s += " "
		}
		s += "→ " + call
	}
	s += fmt.Sprintf(" · %s chars", humanize.Comma(int64(len(m.Content))))
	if i > 0 && i-1 < len(rec) {
		switch rm := rec[i-1]; {
		case rm.Content != nil || len(rm.Args) > 0:
			s += fmt.Sprintf(" · shortened for the context (message %d holds it whole)", rm.ID)
		case rm.ID != 0:
			s += fmt.Sprintf(" · message %d", rm.ID)
		}
	}
	return s
}

// expand is one entry per message: a run of stored messages becomes its
// messages.
func expand(ms store.RecordedMessages) []store.RecordedMessage {
	var out []store.RecordedMessage
	for _, m := range ms {
		if m.Message != nil || m.Through <= m.ID {
			out = append(out, m)
			continue
		}
		for id := m.ID; id <= m.Through; id++ {
			out = append(out, store.RecordedMessage{ID: id})
		}
	}
	return out
}

// Explain turns a rebuild failure into what the user reads.
func Explain(err error) string {
	var re *store.RecordError
	switch {
	case errors.Is(err, store.ErrNoRecord):
		return "this call has no request record: it was made before Polly kept them"
	case errors.As(err, &re):
		return re.Error() + " — the call's numbers are still listed above; nothing else is affected"
	}
	return err.Error()
}

package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"polly/memory/chat"
)

// RequestRecord is what rebuilds one model request exactly (llm_calls.request):
// the stored messages sent, by id, with what was sent in their place when
// the context policy shortened them; the messages sent but never stored,
// whole; the system prompt and the tool set by hash, their texts stored
// once per session; and the request's token breakdown.
type RequestRecord struct {
	Kind        string           `json:"kind"` // "main" or "summarizer"
	Persona     string           `json:"persona,omitempty"`
	Model       string           `json:"model"`
	Temperature *float64         `json:"temperature,omitempty"`
	MaxTokens   int              `json:"max_tokens,omitempty"`
	System      string           `json:"system,omitempty"` // sha256 of the system prompt
	Tools       string           `json:"tools,omitempty"`  // sha256 of the tools array as sent (JSON)
	ToolCount   int              `json:"tool_count,omitempty"`
	Messages    RecordedMessages `json:"messages"` // after the system message, in order
	// Sum is WireSum of the request's messages, the system prompt first: a
	// rebuild must give it again, or the record no longer matches the store.
	Sum       string    `json:"sum"`
	Tokens    Breakdown `json:"tokens"`
	Window    int       `json:"window,omitempty"`    // the model's window
	Budget    int       `json:"budget,omitempty"`    // what the context may fill
	Threshold int       `json:"threshold,omitempty"` // the summarization threshold
	Fixed     int       `json:"fixed,omitempty"`     // the fixed cost it was derived from (system prompt, tools, task block; calibrated)
	// The texts behind System and Tools: written to context_texts on save,
	// read from it on load; not in the JSON.
	SystemText string `json:"-"`
	ToolsText  string `json:"-"`
}

// RecordedMessage is one message of a request: a stored one by ID, as it
// was sent (Content, Args: what replaced its content or arguments), or a
// message never stored, whole (Message).
type RecordedMessage struct {
	ID      int64             `json:"id,omitempty"`
	Content *string           `json:"content,omitempty"` // sent instead of the stored content
	Args    map[string]string `json:"args,omitempty"`    // tool call id → arguments sent instead of the stored ones
	Message *chat.Message     `json:"message,omitempty"` // a message no row holds (the task block, an "interrupted" result, a summarizer prompt)
}

// RecordedMessages are a request's messages. In JSON a run of stored
// messages sent as stored with consecutive ids is one string, "12-40"
// (the usual case: a record costs a few bytes, not one object a message).
type RecordedMessages []RecordedMessage

// MarshalJSON writes runs of plain consecutive ids as "first-last".
func (ms RecordedMessages) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i := 0; i < len(ms); {
		if i > 0 {
			b = append(b, ',')
		}
		m := ms[i]
		if m.plain() {
			j := i
			for j+1 < len(ms) && ms[j+1].plain() && ms[j+1].ID == ms[j].ID+1 {
				j++
			}
			b = append(b, '"')
			b = strconv.AppendInt(b, m.ID, 10)
			if j > i {
				b = append(b, '-')
				b = strconv.AppendInt(b, ms[j].ID, 10)
			}
			b = append(b, '"')
			i = j + 1
			continue
		}
		e, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		b = append(b, e...)
		i++
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (ms *RecordedMessages) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := RecordedMessages{}
	for _, r := range raw {
		if len(r) > 0 && r[0] == '"' {
			var run string
			if err := json.Unmarshal(r, &run); err != nil {
				return err
			}
			first, last, found := strings.Cut(run, "-")
			a, err := strconv.ParseInt(first, 10, 64)
			if err != nil {
				return fmt.Errorf("message run %q: %w", run, err)
			}
			z := a
			if found {
				if z, err = strconv.ParseInt(last, 10, 64); err != nil || z < a || z-a > 1_000_000 {
					return fmt.Errorf("message run %q is not a range of ids", run)
				}
			}
			for id := a; id <= z; id++ {
				out = append(out, RecordedMessage{ID: id})
			}
			continue
		}
		var m RecordedMessage
		if err := json.Unmarshal(r, &m); err != nil {
			return err
		}
		out = append(out, m)
	}
	*ms = out
	return nil
}

// plain: a stored message sent as it is stored.
func (m RecordedMessage) plain() bool {
	return m.ID != 0 && m.Content == nil && len(m.Args) == 0 && m.Message == nil
}

// Breakdown is a request's estimated tokens by part, calibrated as the
// agent counted them when it sent it.
type Breakdown struct {
	System  int `json:"system"`  // the system prompt less the memory files
	Memory  int `json:"memory"`  // the workspace memory files in it (MEMORY.md, learnings, daily logs)
	Tools   int `json:"tools"`   // the tool schemas
	Summary int `json:"summary"` // summary messages
	History int `json:"history"` // every other message
	Block   int `json:"block"`   // the live task block
}

// Total is the sum of the parts.
func (b Breakdown) Total() int {
	return b.System + b.Memory + b.Tools + b.Summary + b.History + b.Block
}

// WireSum hashes the fields of messages that go on the wire (role,
// content, tool calls, tool_call_id), in order.
func WireSum(ms []chat.Message) string {
	h := sha256.New()
	var buf []byte
	field := func(s string) {
		// Through one buffer: a string written to the hash directly would
		// be copied to a new []byte each time.
		for len(s) > 0 {
			if len(buf) == cap(buf) {
				h.Write(buf)
				buf = buf[:0]
			}
			n := copy(buf[len(buf):cap(buf)], s)
			buf, s = buf[:len(buf)+n], s[n:]
		}
		if len(buf) == cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = append(buf, 0)
	}
	buf = make([]byte, 0, 32<<10)
	for _, m := range ms {
		field(string(m.Role))
		field(m.Content)
		field(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			field(tc.ID)
			field(tc.Name)
			field(tc.Arguments)
		}
		field("\x01")
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// TextHash is the key of a text in context_texts.
func TextHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// saveRequest stores the record's texts (once per session) and returns its
// JSON for llm_calls.request.
func (s *Store) saveRequest(ctx context.Context, sessionID string, r *RequestRecord) (string, error) {
	for _, t := range []struct{ hash, kind, text string }{{r.System, "system", r.SystemText}, {r.Tools, "tools", r.ToolsText}} {
		if t.hash == "" {
			continue
		}
		if _, err := s.exec(ctx, `INSERT INTO context_texts (session_id, hash, kind, text, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (session_id, hash) DO NOTHING`, sessionID, t.hash, t.kind, t.text, s.nowMs()); err != nil {
			return "", fmt.Errorf("store the %s text: %w", t.kind, err)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode the request record: %w", err)
	}
	return string(b), nil
}

// CallInfo is one model call of a session as `polly inspect` lists it.
type CallInfo struct {
	LLMCall
	Number int            // 1-based, in the order the calls were made in the session
	Record *RequestRecord // nil when no record was stored (a call made before records existed) or it is unreadable
	Bad    string         // why the stored record could not be read ("" when fine or absent)
}

// Calls lists the model calls of a session, oldest first, with their
// request records.
func (s *Store) Calls(ctx context.Context, sessionID string) ([]CallInfo, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, persona, model, prompt_tokens, completion_tokens, cached_tokens,
		latency_ms, attempts, COALESCE(error, ''), COALESCE(error_kind, ''), cost, created_at, request
		FROM llm_calls WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, wrap("list the calls of session "+sessionID, err)
	}
	defer rows.Close()
	var out []CallInfo
	for rows.Next() {
		c := CallInfo{Number: len(out) + 1}
		c.SessionID = sessionID
		var latency, created int64
		var cost sql.NullFloat64
		var req sql.NullString
		if err := rows.Scan(&c.ID, &c.Persona, &c.Model, &c.Usage.PromptTokens, &c.Usage.CompletionTokens, &c.Usage.CachedTokens,
			&latency, &c.Attempts, &c.Error, &c.ErrorKind, &cost, &created, &req); err != nil {
			return nil, wrap("list the calls of session "+sessionID, err)
		}
		c.Latency, c.CreatedAt = time.Duration(latency)*time.Millisecond, fromMs(created)
		if cost.Valid {
			c.Cost = &cost.Float64
		}
		if req.Valid {
			var r RequestRecord
			if err := json.Unmarshal([]byte(req.String), &r); err != nil {
				c.Bad = "the stored request record is not valid JSON: " + err.Error()
			} else {
				c.Record = &r
			}
		}
		out = append(out, c)
	}
	return out, wrap("list the calls of session "+sessionID, rows.Err())
}

// ErrNoRecord: the call was stored without a request record.
var ErrNoRecord = errors.New("no request record was stored for this call (it was made before Polly kept them)")

// RecordError says why a stored request record does not rebuild its
// request: unreadable, a text or a message missing, or a message changed
// since the call.
type RecordError struct {
	Call    int // the call's number in its session
	Problem string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("call %d: the stored request record is damaged: %s", e.Call, e.Problem)
}

// Rebuilt is a model request rebuilt from its record.
type Rebuilt struct {
	Call     CallInfo
	Messages []chat.Message // as sent, the system message first; Kind and ID set where known
	Tools    string         // the tools array as sent (JSON), "" when none
}

// Rebuild rebuilds the request of call from its record: the system prompt
// and tool set from context_texts, every stored message by id with what
// replaced it when sent, the others as recorded. It fails with a
// *RecordError when anything is missing or the result does not match the
// record's sum, and with ErrNoRecord when there is no record.
func (s *Store) Rebuild(ctx context.Context, call CallInfo) (Rebuilt, error) {
	out := Rebuilt{Call: call}
	bad := func(format string, args ...any) (Rebuilt, error) {
		return Rebuilt{}, &RecordError{Call: call.Number, Problem: fmt.Sprintf(format, args...)}
	}
	if call.Bad != "" {
		return bad("%s", call.Bad)
	}
	r := call.Record
	if r == nil {
		return Rebuilt{}, ErrNoRecord
	}
	text := func(hash, kind string) (string, error) {
		if hash == "" {
			return "", nil
		}
		var t string
		err := s.r.QueryRowContext(ctx, `SELECT text FROM context_texts WHERE session_id = ? AND hash = ?`, call.SessionID, hash).Scan(&t)
		if errors.Is(err, sql.ErrNoRows) {
			return "", &RecordError{Call: call.Number, Problem: fmt.Sprintf("its %s text (sha256 %.12s) is not stored", kind, hash)}
		}
		if err != nil {
			return "", wrap("read a context text", err)
		}
		return t, nil
	}
	var err error
	if r.SystemText, err = text(r.System, "system prompt"); err != nil {
		return Rebuilt{}, err
	}
	if r.ToolsText, err = text(r.Tools, "tool set"); err != nil {
		return Rebuilt{}, err
	}
	out.Tools = r.ToolsText
	stored, err := s.messagesByID(ctx, call.SessionID, r.Messages)
	if err != nil {
		return Rebuilt{}, err
	}
	out.Messages = append(out.Messages, chat.Message{Role: chat.System, Content: r.SystemText})
	for i, rm := range r.Messages {
		var m chat.Message
		switch {
		case rm.Message != nil:
			m = *rm.Message
		case rm.ID != 0:
			sm, ok := stored[rm.ID]
			if !ok {
				return bad("message %d (the %d. sent) is no longer stored", rm.ID, i+1)
			}
			m = sm
			if rm.Content != nil {
				m.Content = *rm.Content
			}
			if len(rm.Args) > 0 {
				m.ToolCalls = append([]chat.ToolCall(nil), m.ToolCalls...)
				for k, tc := range m.ToolCalls {
					if a, ok := rm.Args[tc.ID]; ok {
						m.ToolCalls[k].Arguments = a
					}
				}
			}
		default:
			return bad("the %d. message has neither an id nor a text", i+1)
		}
		out.Messages = append(out.Messages, m)
	}
	if got := WireSum(out.Messages); got != r.Sum {
		return bad("the messages it names no longer give the request that was sent (sum %.12s, recorded %.12s): a stored message changed", got, r.Sum)
	}
	return out, nil
}

// messagesByID reads the stored messages a record names, archived ones
// included.
func (s *Store) messagesByID(ctx context.Context, sessionID string, rms []RecordedMessage) (map[int64]chat.Message, error) {
	var ids []any
	for _, rm := range rms {
		if rm.ID != 0 && rm.Message == nil {
			ids = append(ids, rm.ID)
		}
	}
	out := make(map[int64]chat.Message, len(ids))
	const chunk = 500
	for len(ids) > 0 {
		n := min(chunk, len(ids))
		part := ids[:n]
		ids = ids[n:]
		ms, err := s.queryMessages(ctx, "read a request's messages", `SELECT `+messageCols+` FROM messages
			WHERE session_id = ? AND id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, append([]any{sessionID}, part...)...)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			out[m.ID] = m
		}
	}
	return out, nil
}

package store

import (
	"bytes"
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
	// Sum is chat.WireSum of the request's messages, the system prompt first: a
	// rebuild must give it again, or the record no longer matches the store.
	Sum       string    `json:"sum"`
	Tokens    Breakdown `json:"tokens"`
	Window    int       `json:"window,omitempty"`    // the model's window
	Budget    int       `json:"budget,omitempty"`    // what the context may fill
	Threshold int       `json:"threshold,omitempty"` // the summarization threshold
	Fixed     int       `json:"fixed,omitempty"`     // the fixed cost it was derived from (system prompt, tools, task block; calibrated)
	// The texts behind System and Tools: written to context_texts on save
	// (when set: a text an earlier record of the session stored is left
	// out), read from it on load; not in the JSON.
	SystemText string `json:"-"`
	ToolsText  string `json:"-"`
	// MessagesJSON, when set, is Messages as MarshalJSON encodes them,
	// built by the caller from the last record's (EncodeMessagesAfter):
	// saved instead of encoding them all again.
	MessagesJSON []byte `json:"-"`
}

// RecordedMessage is one message of a request: a stored one by ID, as it
// was sent (Stub: as the stub stored with it; Content, Args: what else
// replaced its content or arguments), or a message never stored, whole
// (Message).
type RecordedMessage struct {
	ID int64 `json:"id,omitempty"`
	// Through, when set, makes this entry a run: the stored messages ID,
	// ID+1, … Through, each sent as stored — or each as its stub, with
	// Stub (a record holds one entry per run, not one per message).
	Through int64 `json:"-"`
	// Stub: the message was sent as the one line its stale output shrinks
	// to, which the store keeps with it (output_stub). A long task sends
	// most of its old outputs so: naming the stub instead of repeating its
	// text keeps a record a few bytes a message, not ~150.
	Stub    bool              `json:"-"`
	Content *string           `json:"content,omitempty"` // sent instead of the stored content
	Args    map[string]string `json:"args,omitempty"`    // tool call id → arguments sent instead of the stored ones
	Message *chat.Message     `json:"message,omitempty"` // a message no row holds (the task block, an "interrupted" result, a summarizer prompt)
}

// RecordedMessages are a request's messages. A run of stored messages
// sent as stored with consecutive ids is one entry (Through), and in JSON
// one string, "12-40": the usual case, so a record costs a few bytes, not
// one object a message. A run sent as their stubs is "12-13s" ("12s" for
// one).
type RecordedMessages []RecordedMessage

// Add appends m, joining it to the run before it when it continues it.
func (ms RecordedMessages) Add(m RecordedMessage) RecordedMessages {
	if n := len(ms); n > 0 && m.byID() && ms[n-1].byID() && m.Stub == ms[n-1].Stub && m.ID == ms[n-1].last()+1 {
		ms[n-1].Through = m.ID
		return ms
	}
	return append(ms, m)
}

// Prefix is a copy of the entries that stand for the first n messages, a
// run cut where the n-th message ends, with room for more more entries.
func (ms RecordedMessages) Prefix(n, more int) RecordedMessages {
	out := make(RecordedMessages, 0, len(ms)+more)
	for _, m := range ms {
		if n <= 0 {
			break
		}
		if c := int(m.last()-m.ID) + 1; c > n {
			m.Through = m.ID + int64(n) - 1 // within a run of stored messages: byID
			if m.Through == m.ID {
				m.Through = 0
			}
			n = 0
		} else {
			n -= c
		}
		out = append(out, m)
	}
	return out
}

// Len is the number of messages the entries stand for.
func (ms RecordedMessages) Len() int {
	n := 0
	for _, m := range ms {
		n += int(m.last()-m.ID) + 1
	}
	return n
}

// last is the last id of a run (ID for a single message).
func (m RecordedMessage) last() int64 {
	if m.Through > m.ID {
		return m.Through
	}
	return m.ID
}

// MarshalJSON writes runs of consecutive ids as "first-last" (with an s
// after it: sent as their stubs).
func (ms RecordedMessages) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i := 0; i < len(ms); {
		if i > 0 {
			b = append(b, ',')
		}
		m := ms[i]
		if m.byID() {
			j, last := i, m.last()
			for j+1 < len(ms) && ms[j+1].byID() && ms[j+1].Stub == m.Stub && ms[j+1].ID == last+1 {
				j++
				last = ms[j].last()
			}
			run := m
			if run.Through = last; last == m.ID {
				run.Through = 0
			}
			b, _ = appendEntry(b, run)
			i = j + 1
			continue
		}
		var err error
		if b, err = appendEntry(b, m); err != nil {
			return nil, err
		}
		i++
	}
	return append(b, ']'), nil
}

// appendEntry appends one entry's JSON: a run "first-last" (s: as their
// stubs), or an object.
func appendEntry(b []byte, m RecordedMessage) ([]byte, error) {
	if m.byID() {
		b = append(b, '"')
		b = strconv.AppendInt(b, m.ID, 10)
		if last := m.last(); last > m.ID {
			b = append(b, '-')
			b = strconv.AppendInt(b, last, 10)
		}
		if m.Stub {
			b = append(b, 's')
		}
		return append(b, '"'), nil
	}
	e, err := json.Marshal(m)
	return append(b, e...), err
}

// EncodeMessagesAfter is ms.MarshalJSON() and where each entry ends in it,
// made from the encoding of a list whose first keep entries were ms's
// (last, with its ends): only the entries after them are encoded. ms must
// be a list Add built, in which no entry continues the run before it, so
// each entry is one element of the JSON.
func EncodeMessagesAfter(ms RecordedMessages, keep int, last []byte, lastEnds []int) ([]byte, []int, error) {
	if keep > len(lastEnds) || keep > len(ms) || (keep > 0 && lastEnds[keep-1] > len(last)) {
		keep = 0
	}
	b := make([]byte, 0, len(last)+64*(len(ms)-keep)+2)
	ends := make([]int, 0, len(ms))
	if keep > 0 {
		b = append(b, last[:lastEnds[keep-1]]...)
		ends = append(ends, lastEnds[:keep]...)
	} else {
		b = append(b, '[')
	}
	var err error
	for i := keep; i < len(ms); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendEntry(b, ms[i]); err != nil {
			return nil, nil, err
		}
		ends = append(ends, len(b))
	}
	return append(b, ']'), ends, nil
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
			run, stub := strings.CutSuffix(run, "s")
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
			m := RecordedMessage{ID: a, Stub: stub}
			if z > a {
				m.Through = z
			}
			out = append(out, m)
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

// byID: a stored message sent as it is stored or as its stub, which its id
// alone says.
func (m RecordedMessage) byID() bool {
	return m.ID != 0 && m.Content == nil && len(m.Args) == 0 && m.Message == nil
}

// Shortened: the message was sent shorter than it is stored.
func (m RecordedMessage) Shortened() bool {
	return m.Stub || m.Content != nil || len(m.Args) > 0
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

// TextHash is the key of a text in context_texts.
func TextHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// saveRequest stores the record's texts (once per session) and returns its
// JSON for llm_calls.request.
func (s *Store) saveRequest(ctx context.Context, sessionID string, r *RequestRecord) (string, error) {
	for _, t := range []struct{ hash, kind, text string }{{r.System, "system", r.SystemText}, {r.Tools, "tools", r.ToolsText}} {
		if t.hash == "" || t.text == "" {
			continue // no text, or stored with an earlier record
		}
		if _, err := s.exec(ctx, `INSERT INTO context_texts (session_id, hash, kind, text, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (session_id, hash) DO NOTHING`, sessionID, t.hash, t.kind, t.text, s.nowMs()); err != nil {
			return "", fmt.Errorf("store the %s text: %w", t.kind, err)
		}
	}
	b, err := encodeRecord(r)
	if err != nil {
		return "", fmt.Errorf("encode the request record: %w", err)
	}
	return string(b), nil
}

// noMessages is how a record without messages encodes them.
const noMessages = `"messages":[]`

// encodeRecord is json.Marshal(r), byte for byte, at half the cost: the
// messages (r.MessagesJSON when the caller built it, else
// RecordedMessages.MarshalJSON's) are spliced in,
// because encoding/json scans and compacts again whatever a Marshaler
// returns — half of a record's encoding at 40k tokens of context. The
// splice point cannot be inside a string: quotes in strings are escaped.
func encodeRecord(r *RequestRecord) ([]byte, error) {
	head := *r
	head.Messages = RecordedMessages{}
	b, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(b, []byte(noMessages))
	if i < 0 {
		return nil, errors.New("no messages field in the encoded record")
	}
	msgs := r.MessagesJSON
	if msgs == nil {
		if msgs, err = r.Messages.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, len(b)-len("[]")+len(msgs))
	out = append(out, b[:i+len(noMessages)-len("[]")]...)
	out = append(out, msgs...)
	return append(out, b[i+len(noMessages):]...), nil
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
		if rm.Message != nil {
			out.Messages = append(out.Messages, *rm.Message)
			continue
		}
		if rm.ID == 0 {
			return bad("the %d. entry has neither an id nor a text", i+1)
		}
		for id := rm.ID; id <= rm.last(); id++ {
			m, ok := stored[id]
			if !ok {
				return bad("message %d is no longer stored", id)
			}
			switch {
			case rm.Stub && (m.Output == nil || m.Output.Stub == ""):
				return bad("message %d was sent as its stub, and no stub is stored with it", id)
			case rm.Stub:
				m.Content = m.Output.Stub
			case rm.Content != nil:
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
			out.Messages = append(out.Messages, m)
		}
	}
	if got := chat.WireSum(out.Messages); got != r.Sum {
		return bad("the messages it names no longer give the request that was sent (sum %.12s, recorded %.12s): a stored message changed", got, r.Sum)
	}
	return out, nil
}

// messagesByID reads the stored messages a record names, archived ones
// included.
func (s *Store) messagesByID(ctx context.Context, sessionID string, rms RecordedMessages) (map[int64]chat.Message, error) {
	var ids []any
	for _, rm := range rms {
		if rm.Message != nil {
			continue
		}
		for id := rm.ID; id != 0 && id <= rm.last(); id++ {
			ids = append(ids, id)
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

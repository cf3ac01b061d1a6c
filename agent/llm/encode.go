package llm

import (
	"encoding/json"
	"fmt"
	"sync"
	"unsafe"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"polly/memory/chat"
)

// The request body is built per message and cached: openai-go encodes a
// whole ChatCompletionNewParams through reflection, history included,
// which was the largest per-step cost that grew with the context. With a
// WireCache, a message the previous request already carried keeps its
// encoded bytes, so a step encodes only what changed, and the body is
// those bytes joined. A new message is encoded here, from a struct of its
// four wire fields: the SDK's param types encode the same JSON (a step's
// tool result of a few KB) at about 2.5 times the CPU and garbage. The
// tools and the other request fields, encoded once per conversation, are
// the SDK's types. TestEncodeMatchesSDK checks that the body means what
// the SDK's encoding of the whole request means.

// WireCache keeps the encoded JSON of one conversation's messages and
// tools between its requests. Reuse is decided by comparing each message's
// wire fields (role, content, tool calls, tool_call_id) with the message
// encoded at the same position last time, so an edited, shrunk or
// summarised message is always encoded again. Tools are reused while the
// same slice is passed: a Request's Tools must not be changed in place
// once sent with a cache. It is safe for concurrent use; a conversation
// should have its own, since two sharing one only lose the reuse.
type WireCache struct {
	mu        sync.Mutex
	msgs      []encodedMessage // the last request's, in order; updated in place by the next
	seq       uint64           // requests encoded with the cache
	tools     []ToolSpec       // the slice toolsJSON was encoded from (kept alive, compared by identity)
	toolsJSON []byte
	env       envelopeKey // what envJSON was encoded from
	envJSON   []byte
	buf       []byte // the last body's buffer, reused by the next request
	// body is the array the last body was built in: while a request's
	// buffer is still it, the buffer holds that body, and the messages
	// the new request shares with it from the start are already in place
	// (see encodedMessage.end). A pointer, not an address: it keeps that
	// array alive, so no other buffer can ever be mistaken for it.
	body *byte
}

// encodedMessage is a message's wire fields and their JSON.
type encodedMessage struct {
	role       chat.Role
	content    string
	toolCallID string
	toolCalls  []chat.ToolCall // a copy: a caller changing its slice must not change what is compared
	json       []byte
	end        int    // where its JSON ends in the body it was last written into
	sum        uint32 // the request's wire sum through this message (chat.SumMessage)
}

// NewWireCache returns an empty cache.
func NewWireCache() *WireCache { return &WireCache{} }

// wireMessage is a message as the chat-completions request carries it.
type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// encodeMessage is one message's JSON. Only Role, Content, ToolCalls and
// ToolCallID go on the wire; harness metadata stays home.
func encodeMessage(m chat.Message) ([]byte, error) {
	w := wireMessage{Role: string(m.Role)}
	content := m.Content
	switch m.Role {
	case chat.System, chat.User:
		w.Content = &content
	case chat.Tool:
		if m.ToolCallID == "" {
			return nil, fmt.Errorf("tool message without tool_call_id")
		}
		w.Content, w.ToolCallID = &content, m.ToolCallID
	case chat.Assistant:
		// With tool calls and no text the content is omitted, as OpenAI
		// itself returns it; a bare empty reply still needs a content field.
		if m.Content != "" || len(m.ToolCalls) == 0 {
			w.Content = &content
		}
		for _, tc := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: tc.ID, Type: "function",
				Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments}})
		}
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	return json.Marshal(w)
}

// toolParam is t as openai-go's request type.
func toolParam(t ToolSpec) openai.ChatCompletionToolUnionParam {
	fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(t.Parameters)}
	if t.Parameters == nil {
		// Several servers reject a function without a parameters schema.
		fn.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	}
	if t.Description != "" {
		fn.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(fn)
}

func encodeTools(specs []ToolSpec) ([]byte, error) {
	ps := make([]openai.ChatCompletionToolUnionParam, len(specs))
	for i, t := range specs {
		ps[i] = toolParam(t)
	}
	return json.Marshal(ps)
}

// envelopeKey is what a request's other fields (model, stream options,
// temperature, max tokens) are encoded from.
type envelopeKey struct {
	model               string
	temperature         float64
	hasTemperature      bool
	maxTokens           int
	maxCompletionTokens bool
}

func (c *Client) envelopeKey(req Request) envelopeKey {
	k := envelopeKey{model: req.Model, maxTokens: req.MaxTokens, maxCompletionTokens: c.maxCompletionTokens}
	if req.Temperature != nil {
		k.temperature, k.hasTemperature = *req.Temperature, true
	}
	return k
}

// encode is the request's other fields as openai-go encodes them: a JSON
// object without messages and tools.
func (k envelopeKey) encode() ([]byte, error) {
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(k.model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if k.hasTemperature {
		p.Temperature = openai.Float(k.temperature)
	}
	if k.maxTokens > 0 {
		if k.maxCompletionTokens {
			p.MaxCompletionTokens = openai.Int(int64(k.maxTokens))
		} else {
			p.MaxTokens = openai.Int(int64(k.maxTokens))
		}
	}
	b, err := p.MarshalJSON()
	if err == nil && (len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}') {
		err = fmt.Errorf("request fields encoded as %q, want an object", b)
	}
	return b, err
}

// encodes reports whether e is m's encoding. It runs for every message of
// the history on every request, so the usual case — the same strings sent
// again, sharing their bytes — is decided by pointer and length, without
// a call to compare them.
func (e *encodedMessage) encodes(m *chat.Message) bool {
	if !sameString(string(e.role), string(m.Role)) || !sameString(e.content, m.Content) ||
		!sameString(e.toolCallID, m.ToolCallID) || len(e.toolCalls) != len(m.ToolCalls) {
		return false
	}
	for i := range e.toolCalls {
		a, b := &e.toolCalls[i], &m.ToolCalls[i]
		if !sameString(a.ID, b.ID) || !sameString(a.Name, b.Name) || !sameString(a.Arguments, b.Arguments) {
			return false
		}
	}
	return true
}

// sameString is a == b, without the call when both are the same bytes.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// sameSlice reports whether a and b are the same slice (not merely equal).
func sameSlice(a, b []ToolSpec) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// encode builds the request body and takes the wire sum of its messages
// (chat.WireSum) on the way. With a cache, messages and tools the previous
// request carried are copied from their encoded bytes, and the sum
// resumes after the messages it shares from the start; the cache then
// holds this request's. buf is a buffer to build into (nil: a new one).
func (c *Client) encode(req Request, cache *WireCache, buf []byte) ([]byte, Encoded, error) {
	var msgs []encodedMessage
	var seq uint64
	var toolsJSON, env []byte
	inPlace := false // buf still holds the body the cache's messages were written into
	envKey := c.envelopeKey(req)
	if cache != nil {
		cache.mu.Lock()
		inPlace = cap(buf) > 0 && unsafe.SliceData(buf[:1]) == cache.body
		msgs = cache.msgs
		cache.msgs = nil // this request's now: a request made meanwhile encodes on its own
		cache.seq++
		seq = cache.seq
		if sameSlice(cache.tools, req.Tools) && cache.toolsJSON != nil {
			toolsJSON = cache.toolsJSON
		}
		if cache.envJSON != nil && cache.env == envKey {
			env = cache.envJSON
		}
		cache.mu.Unlock()
	}
	// The list is the last request's, overwritten where this one differs:
	// at 40k tokens a copy of it per request cost more than the
	// comparisons.
	prevLen := len(msgs)
	if cap(msgs) < len(req.Messages) {
		msgs = append(make([]encodedMessage, 0, len(req.Messages)+len(req.Messages)/4), msgs...)
	}
	msgs = msgs[:len(req.Messages)]
	kept := 0 // messages from the start that are the previous request's
	sum := uint32(0)
	for i := range req.Messages {
		m := &req.Messages[i] // not a copy: a Message is 144 bytes, and this runs over the whole history
		if i < prevLen && msgs[i].encodes(m) {
			if kept == i {
				kept++
				sum = msgs[i].sum
				continue
			}
			sum = chat.SumMessage(sum, *m) // its bytes are reused, but the messages before it changed
			msgs[i].sum = sum
			continue
		}
		b, err := encodeMessage(*m)
		if err != nil {
			return nil, Encoded{}, fmt.Errorf("message %d: %w", i, err)
		}
		sum = chat.SumMessage(sum, *m)
		msgs[i] = encodedMessage{role: m.Role, content: m.Content, toolCallID: m.ToolCallID,
			toolCalls: append([]chat.ToolCall(nil), m.ToolCalls...), json: b, sum: sum}
	}
	if prevLen > len(msgs) {
		clear(msgs[len(msgs):prevLen]) // keep no dropped message's text alive
	}
	if toolsJSON == nil && len(req.Tools) > 0 {
		var err error
		if toolsJSON, err = encodeTools(req.Tools); err != nil {
			return nil, Encoded{}, fmt.Errorf("tools: %w", err)
		}
	}

	if env == nil {
		var err error
		if env, err = envKey.encode(); err != nil {
			return nil, Encoded{}, err
		}
	}

	// "stream": true comes first: NewStreaming sets it again (see
	// Client.attempt), and finds it at once. A step adds a few messages
	// to a history sent again: when buf still holds the last body, the
	// messages both share from the start stay where they are, and only
	// the rest is copied (at 40k tokens, a few KB instead of 160).
	b := append(buf[:0], `{"stream":true,"messages":[`...)
	from := 0
	if inPlace && kept > 0 {
		b, from = buf[:msgs[kept-1].end], kept
	}
	for i := from; i < len(msgs); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, msgs[i].json...)
		msgs[i].end = len(b)
	}
	b = append(b, ']')
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":`...)
		b = append(b, toolsJSON...)
	}
	if len(env) > 2 {
		b = append(b, ',')
		b = append(b, env[1:len(env)-1]...)
	}
	b = append(b, '}')

	if cache != nil {
		cache.mu.Lock()
		cache.msgs = msgs
		if len(req.Tools) > 0 {
			cache.tools, cache.toolsJSON = req.Tools, toolsJSON
		}
		cache.env, cache.envJSON = envKey, env
		cache.body = unsafe.SliceData(b)
		cache.mu.Unlock()
	}
	return b, Encoded{Sum: chat.FormatWireSum(sum, len(req.Messages)), Kept: kept, Seq: seq}, nil
}

// takeBuffer lends the cache's body buffer to one request; giveBuffer
// returns it. Two requests at once on one cache get separate buffers.
func (w *WireCache) takeBuffer() []byte {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	w.buf = nil
	return b
}

func (w *WireCache) giveBuffer(b []byte) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.buf = b
	w.mu.Unlock()
}

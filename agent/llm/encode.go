package llm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"polly/memory/chat"
)

// The request body is encoded here rather than by openai-go: its
// reflection-based encoder re-encoded the whole history for every request,
// the largest per-step cost that grew with the context. The JSON is the
// same (TestEncodeMatchesSDK compares it with the SDK's for every kind of
// message); with a WireCache, a message the previous request already
// carried keeps its encoded bytes, so a step encodes only what changed.

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
	msgs      []encodedMessage
	spare     []encodedMessage // the list before msgs, reused for the next request
	tools     []ToolSpec       // the slice toolsJSON was encoded from (kept alive, compared by identity)
	toolsJSON []byte
	buf       []byte // the last body's buffer, reused by the next request
}

// encodedMessage is a message's wire fields and their JSON.
type encodedMessage struct {
	role       chat.Role
	content    string
	toolCallID string
	toolCalls  []chat.ToolCall // a copy: a caller changing its slice must not change what is compared
	json       []byte
}

// NewWireCache returns an empty cache.
func NewWireCache() *WireCache { return &WireCache{} }

// Wire shapes of the chat-completions request, as openai-go sends them.
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

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

type wireFunctionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
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

func encodeTools(specs []ToolSpec) ([]byte, error) {
	ws := make([]wireTool, len(specs))
	for i, t := range specs {
		params := t.Parameters
		if params == nil {
			// Several servers reject a function without a parameters schema.
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		ws[i] = wireTool{Type: "function", Function: wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: params}}
	}
	return json.Marshal(ws)
}

// encodes reports whether e is m's encoding. Strings that share their
// bytes (the usual case: the same history sent again) compare in constant
// time.
func (e *encodedMessage) encodes(m chat.Message) bool {
	if e.role != m.Role || e.content != m.Content || e.toolCallID != m.ToolCallID || len(e.toolCalls) != len(m.ToolCalls) {
		return false
	}
	for i := range e.toolCalls {
		if e.toolCalls[i] != m.ToolCalls[i] {
			return false
		}
	}
	return true
}

// sameSlice reports whether a and b are the same slice (not merely equal).
func sameSlice(a, b []ToolSpec) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// encode builds the request body. With a cache, messages and tools the
// previous request carried are copied from their encoded bytes; the cache
// then holds this request's. buf is a buffer to build into (nil: a new
// one).
func (c *Client) encode(req Request, cache *WireCache, buf []byte) ([]byte, error) {
	var prev, msgs []encodedMessage
	var toolsJSON []byte
	if cache != nil {
		cache.mu.Lock()
		prev, msgs = cache.msgs, cache.spare
		cache.msgs, cache.spare = nil, nil // this request's now
		if sameSlice(cache.tools, req.Tools) && cache.toolsJSON != nil {
			toolsJSON = cache.toolsJSON
		}
		cache.mu.Unlock()
	}
	if cap(msgs) < len(req.Messages) {
		msgs = make([]encodedMessage, len(req.Messages), len(req.Messages)+len(req.Messages)/4)
	}
	msgs = msgs[:len(req.Messages)]
	for i, m := range req.Messages {
		if i < len(prev) && prev[i].encodes(m) {
			msgs[i] = prev[i]
			continue
		}
		b, err := encodeMessage(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		msgs[i] = encodedMessage{role: m.Role, content: m.Content, toolCallID: m.ToolCallID,
			toolCalls: append([]chat.ToolCall(nil), m.ToolCalls...), json: b}
	}
	if toolsJSON == nil && len(req.Tools) > 0 {
		var err error
		if toolsJSON, err = encodeTools(req.Tools); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}

	// "stream" first, where openai-go put it.
	b := append(buf[:0], `{"stream":true,"model":`...)
	b = appendJSONString(b, req.Model)
	b = append(b, `,"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m.json...)
	}
	b = append(b, ']')
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":`...)
		b = append(b, toolsJSON...)
	}
	b = append(b, `,"stream_options":{"include_usage":true}`...)
	if req.Temperature != nil {
		t, err := json.Marshal(*req.Temperature)
		if err != nil {
			return nil, fmt.Errorf("temperature: %w", err)
		}
		b = append(b, `,"temperature":`...)
		b = append(b, t...)
	}
	if req.MaxTokens > 0 {
		if c.maxCompletionTokens {
			b = append(b, `,"max_completion_tokens":`...)
		} else {
			b = append(b, `,"max_tokens":`...)
		}
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	b = append(b, '}')

	if cache != nil {
		clear(prev) // the old list keeps nothing alive; its array is the next request's
		cache.mu.Lock()
		cache.msgs, cache.spare = msgs, prev[:0]
		if len(req.Tools) > 0 {
			cache.tools, cache.toolsJSON = req.Tools, toolsJSON
		}
		cache.mu.Unlock()
	}
	return b, nil
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

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

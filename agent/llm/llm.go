// Package llm adapts an OpenAI-compatible chat-completions endpoint to
// Polly's conversation types through the official openai-go SDK: one
// streaming call with tools, retries with backoff, an idle-stream watchdog
// and classified errors. It holds no policy: what to do with an error is
// the agent loop's decision.
package llm

import (
	"context"
	"time"

	"polly/memory/chat"
)

// ToolSpec is a function the model may call.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON schema of the arguments object
}

// Request is one chat-completions call.
type Request struct {
	Model       string
	Messages    []chat.Message
	Tools       []ToolSpec
	Temperature *float64 // nil: provider default
	MaxTokens   int      // 0: provider default
	// Cache, when set, keeps this conversation's encoded messages and
	// tools for its next request (see WireCache); nil encodes all of it.
	Cache *WireCache
}

// Delta is a piece of a streamed reply.
type Delta struct {
	Text      string // visible assistant text
	Reasoning string // provider extras such as reasoning_content; shown dimmed, never stored as the reply
}

// Response is a finished reply.
type Response struct {
	Message      chat.Message // role assistant: content and tool calls
	FinishReason string
	Usage        chat.Usage
	Model        string // model name the provider reports
	Attempts     int    // HTTP attempts made, including retries
	// Encoded is what encoding the request's messages found (also when
	// the call failed after that); zero when it was never encoded.
	Encoded Encoded
}

// Encoded is what the client learns as it encodes a request's messages,
// which a request record would otherwise walk the history again for.
type Encoded struct {
	Sum string // chat.WireSum of the messages
	// Kept is how many messages from the start were, on the wire, those
	// of the request before it on the same WireCache (number Seq-1).
	Kept int
	Seq  uint64 // the request's number on its WireCache, from 1; 0 without one
}

// Retry describes a wait before the next attempt, so callers can show it.
type Retry struct {
	Attempt int           // the attempt that failed (1-based)
	Wait    time.Duration // how long the client waits before trying again
	Err     *Error        // why
}

// Observer receives what happens during a call. Every field is optional.
type Observer struct {
	OnDelta func(Delta)
	OnRetry func(Retry)
	// OnRequest sees the request body exactly as it is sent (every
	// attempt sends the same), before the first attempt. The bytes are
	// the call's buffer: copy what is kept past the callback.
	OnRequest func(body []byte)
}

// Streamer is what the agent loop needs from a provider. Stream must not
// keep req.Messages once it returns: the loop writes the next request's
// context into the same array.
type Streamer interface {
	Stream(ctx context.Context, req Request, obs Observer) (Response, error)
}

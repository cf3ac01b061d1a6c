package llm

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies provider failures so the loop can act on each.
type Kind int

const (
	KindUnknown       Kind = iota
	KindRateLimit          // 429: wait and retry
	KindContextLength      // 400 context_length_exceeded or the like: compact and retry
	KindAuth               // 401/403: fix the key
	KindBadRequest         // other 4xx: the request is wrong; retrying will not help
	KindServer             // 5xx
	KindNetwork            // connection refused, reset, DNS, TLS
	KindStream             // the stream broke or stalled after it started
	KindCanceled           // the caller cancelled (Esc)
)

func (k Kind) String() string {
	switch k {
	case KindRateLimit:
		return "rate_limit"
	case KindContextLength:
		return "context_length"
	case KindAuth:
		return "auth"
	case KindBadRequest:
		return "bad_request"
	case KindServer:
		return "server"
	case KindNetwork:
		return "network"
	case KindStream:
		return "stream"
	case KindCanceled:
		return "canceled"
	}
	return "unknown"
}

// Retryable reports whether another attempt may succeed.
func (k Kind) Retryable() bool {
	return k == KindRateLimit || k == KindServer || k == KindNetwork
}

// Error is a classified provider failure.
type Error struct {
	Kind       Kind
	Status     int           // HTTP status, 0 when there was none
	Code       string        // provider error code, e.g. "context_length_exceeded"
	Type       string        // provider error type, e.g. "invalid_request_error"
	Message    string        // provider's message, or a description of what broke
	RetryAfter time.Duration // from Retry-After / Retry-After-Ms, 0 if absent
	Partial    string        // text streamed before a stream error (never a complete message)
	Err        error         // underlying error
}

func (e *Error) Error() string {
	s := e.Kind.String()
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the class of err, KindUnknown if it is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}

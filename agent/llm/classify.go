package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// classify turns the error of an attempt into an *Error: an HTTP status
// (the SDK's *openai.Error, or the response tap saw when the SDK could not
// read the error body), an error event in the stream (the SDK's
// *ssestream.StreamError), broken stream data or a failed connection.
// began says whether content had been streamed, which makes a broken
// connection a stream error. tap may be nil.
func classify(err error, began bool, tap *bodyTap) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if e := httpError(err, tap); e != nil {
		return e
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return fromStreamEvent(se)
	}
	var off *offOriginError
	if errors.As(err, &off) {
		return &Error{Kind: KindBadRequest, Err: err,
			Message: "the server redirected to another origin; Polly does not follow it with your key: " + err.Error()}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return &Error{Kind: KindStream, Message: "malformed stream data: " + err.Error(), Err: err}
	}
	if errors.Is(err, bufio.ErrTooLong) {
		return &Error{Kind: KindStream, Message: "malformed stream data: a line longer than 32 MiB", Err: err}
	}
	if isNetwork(err) {
		if began {
			return &Error{Kind: KindStream, Message: "connection lost mid-stream: " + err.Error(), Err: err}
		}
		return &Error{Kind: KindNetwork, Message: err.Error(), Err: err}
	}
	return &Error{Kind: KindUnknown, Message: err.Error(), Err: err}
}

// httpError is the error response behind err, nil if there was none. The
// SDK's *openai.Error carries the status, the headers, the body and what
// it read of an {"error": {...}} object; a body it cannot read as one
// (Ollama's {"error": "text"}) comes back as a JSON error instead, and
// then the tap has the response.
func httpError(err error, tap *bodyTap) *Error {
	var ae *openai.Error
	if errors.As(err, &ae) && ae.Response != nil {
		var body []byte
		if ae.Response.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(ae.Response.Body, maxErrorBody))
		}
		var pe providerError
		if ae.Message != "" {
			pe = providerError{Message: ae.Message, Type: ae.Type, Code: ae.Code, Param: ae.Param}
		}
		e := fromStatus(ae.StatusCode, ae.Response.Header, body, pe)
		e.Err = err
		return e
	}
	if tap == nil {
		return nil
	}
	if res := tap.response(); res != nil && res.StatusCode >= 400 {
		e := fromStatus(res.StatusCode, res.Header, tap.body(), providerError{})
		e.Err = err
		return e
	}
	return nil
}

// fromStatus classifies an HTTP error response from its status, headers
// and (the start of) its body. pe is what the SDK read of the body; when
// empty, the body is read here.
func fromStatus(status int, h http.Header, body []byte, pe providerError) *Error {
	if pe.Message == "" {
		pe = parseErrorBody(body)
	}
	msg := pe.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := &Error{Status: status, Code: pe.Code, Type: pe.Type, Message: msg, RetryAfter: retryAfter(h)}
	switch {
	case status == http.StatusTooManyRequests:
		e.Kind = KindRateLimit
		if pe.Code == "insufficient_quota" || pe.Type == "insufficient_quota" {
			e.Kind = KindAuth // billing, not load: waiting will not help
		}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindAuth
	case (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge ||
		status == http.StatusUnprocessableEntity) && isContextLength(pe.Code, msg):
		e.Kind = KindContextLength
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		e.Kind = KindServer
	case status >= 400:
		e.Kind = KindBadRequest
	default:
		e.Kind = KindUnknown // a redirect not followed, a 1xx
	}
	return e
}

// fromStreamEvent classifies a data: {"error": ...} event inside a stream.
func fromStreamEvent(se *ssestream.StreamError) *Error {
	var ev struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &ev)
	pe := errorObject(ev.Error)
	msg := pe.Message
	if msg == "" {
		msg = se.Error()
	}
	e := &Error{Kind: KindStream, Code: pe.Code, Type: pe.Type, Message: msg, Err: se}
	switch {
	case isContextLength(pe.Code, msg):
		e.Kind = KindContextLength
	case pe.Code == "rate_limit_exceeded" || pe.Code == "429" || strings.Contains(strings.ToLower(msg), "rate limit"):
		e.Kind = KindRateLimit
	}
	return e
}

// contextPhrases are how providers word "the prompt is too long".
var contextPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"too many tokens",
	"prompt is too long",
	"context window",
	"exceeds the context",
}

func isContextLength(code, msg string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	for _, p := range contextPhrases {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// providerError is what an error body says: OpenAI's {"error": {"message",
// "type", "code", "param"}} or another provider's shape.
type providerError struct {
	Message, Type, Code, Param string
}

// parseErrorBody reads an error body of any shape: the {"error": {...}}
// object, {"error": "text"} (Ollama), {"message": ...} or {"detail": ...}
// (vLLM, FastAPI), and falls back to the start of the raw text (a proxy's
// HTML page, a plain-text body).
func parseErrorBody(body []byte) providerError {
	var pe providerError
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil {
		if pe = errorObject(obj["error"]); pe.Message != "" {
			return pe
		}
		for _, k := range []string{"message", "detail"} {
			var s string
			if json.Unmarshal(obj[k], &s) == nil && s != "" {
				pe.Message = s
				return pe
			}
		}
	}
	if s := snippet(body); s != "" {
		pe.Message = "unexpected response body: " + s
	}
	return pe
}

// errorObject reads {"message": ..., "type": ..., "code": ...} or a bare
// string. Codes may be strings or numbers depending on the provider.
func errorObject(raw json.RawMessage) providerError {
	if len(raw) == 0 {
		return providerError{}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return providerError{Message: s}
	}
	var o struct {
		Message string          `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   json.RawMessage `json:"param"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return providerError{}
	}
	return providerError{Message: o.Message, Type: scalar(o.Type), Code: scalar(o.Code), Param: scalar(o.Param)}
}

// scalar is a JSON string's text or a number's digits; "" for null.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if v := string(bytes.TrimSpace(raw)); v != "null" {
		return v
	}
	return ""
}

// snippet is the first ~200 characters of b on one line.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// retryAfter reads Retry-After-Ms, then Retry-After (seconds or HTTP date).
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// isNetwork reports failures of the connection itself.
func isNetwork(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var ne net.Error
	var dns *net.DNSError
	var op *net.OpError
	return errors.As(err, &ne) || errors.As(err, &dns) || errors.As(err, &op)
}

package llm

import (
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

// classify turns an error from openai-go into an *Error. res is the HTTP
// response of the attempt, if one arrived; began says whether content had
// been streamed, which makes a broken connection a stream error.
func classify(err error, res *http.Response, began bool) *Error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return fromStatus(apiErr.StatusCode, apiErr.Code, apiErr.Message, apiErr.Type, apiErr.Response, err)
	}
	// openai-go gives up on some error bodies (e.g. {"error": "text"} from
	// Ollama) and returns the JSON error instead; the status is still ours.
	if res != nil && res.StatusCode >= 400 {
		return fromStatus(res.StatusCode, "", "", "", res, err)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return fromStreamEvent(se)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return &Error{Kind: KindStream, Message: "malformed stream data: " + err.Error(), Err: err}
	}
	if isNetwork(err) {
		if began {
			return &Error{Kind: KindStream, Message: "connection lost mid-stream: " + err.Error(), Err: err}
		}
		return &Error{Kind: KindNetwork, Message: err.Error(), Err: err}
	}
	return &Error{Kind: KindUnknown, Message: err.Error(), Err: err}
}

// fromStatus classifies an HTTP error response.
func fromStatus(status int, code, msg, typ string, res *http.Response, err error) *Error {
	if msg == "" && res != nil && res.Body != nil {
		// No JSON error object: describe the body (an HTML page from a
		// proxy, {"error": "..."}, {"detail": "..."}).
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		var c string
		msg, c = bodyMessage(body)
		if code == "" {
			code = c
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := &Error{Status: status, Code: code, Message: msg, Err: err}
	if res != nil {
		e.RetryAfter = retryAfter(res.Header)
	}
	switch {
	case status == http.StatusTooManyRequests:
		e.Kind = KindRateLimit
		if code == "insufficient_quota" || typ == "insufficient_quota" {
			e.Kind = KindAuth // billing, not load: waiting will not help
		}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindAuth
	case (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge ||
		status == http.StatusUnprocessableEntity) && isContextLength(code, msg):
		e.Kind = KindContextLength
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		e.Kind = KindServer
	case status >= 400:
		e.Kind = KindBadRequest
	default:
		e.Kind = KindUnknown
	}
	return e
}

// fromStreamEvent classifies a data: {"error": ...} event inside a stream.
func fromStreamEvent(se *ssestream.StreamError) *Error {
	var ev struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &ev)
	msg, code := errorObject(ev.Error)
	if msg == "" {
		msg = se.Message
	}
	e := &Error{Kind: KindStream, Code: code, Message: msg, Err: se}
	switch {
	case isContextLength(code, msg):
		e.Kind = KindContextLength
	case code == "rate_limit_exceeded" || code == "429" || strings.Contains(strings.ToLower(msg), "rate limit"):
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

// bodyMessage extracts a message and code from an error body of any shape,
// falling back to the start of the raw text.
func bodyMessage(body []byte) (msg, code string) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil {
		if msg, code = errorObject(obj["error"]); msg != "" {
			return msg, code
		}
		for _, k := range []string{"message", "detail"} {
			var s string
			if json.Unmarshal(obj[k], &s) == nil && s != "" {
				return s, ""
			}
		}
	}
	if s := snippet(body); s != "" {
		return "unexpected response body: " + s, ""
	}
	return "", ""
}

// errorObject reads {"message": ..., "code": ...} or a bare string. Codes
// may be strings or numbers depending on the provider.
func errorObject(raw json.RawMessage) (msg, code string) {
	if len(raw) == 0 {
		return "", ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var o struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", ""
	}
	code = string(bytes.Trim(o.Code, `"`))
	if code == "null" {
		code = ""
	}
	return o.Message, code
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

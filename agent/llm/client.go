package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Defaults for the zero fields of Config.
const (
	DefaultBaseURL        = "https://api.openai.com/v1"
	DefaultMaxRetries     = 4
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 30 * time.Second
	DefaultIdleTimeout    = 90 * time.Second
	DefaultCallTimeout    = 10 * time.Minute

	// maxRetryAfter caps a server-requested wait: a provider asking for
	// minutes is better reported to the user than silently waited out.
	maxRetryAfter = 60 * time.Second
)

// Config describes one OpenAI-compatible endpoint. Zero fields take the
// defaults above.
type Config struct {
	BaseURL        string // e.g. http://localhost:11434/v1
	APIKey         string // empty: no Authorization header (local servers)
	MaxRetries     int    // retries after the first attempt; 0 means 4, negative means none
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// IdleTimeout fails an attempt when no bytes arrive for this long,
	// including the wait for the response headers.
	IdleTimeout time.Duration
	CallTimeout time.Duration // the whole call, retries and waits included
	HTTPClient  *http.Client  // nil: a client on http.DefaultTransport
	// Headers go with every request after Polly's own, so a configured
	// Authorization replaces the Bearer key.
	Headers   map[string]string
	UserAgent string // empty: "Polly"
}

// Client streams chat completions from one endpoint. It is safe for
// concurrent use.
type Client struct {
	cfg Config
	ep  endpoint
	// OpenAI's own API rejects max_tokens for reasoning models; most other
	// servers only know max_tokens.
	maxCompletionTokens bool
}

var _ Streamer = (*Client)(nil)

// New returns a client for cfg.
func New(cfg Config) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = DefaultInitialBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	c := &Client{cfg: cfg, ep: newEndpoint(cfg)}
	if c.ep.base != nil && c.ep.base.Hostname() == "api.openai.com" {
		c.maxCompletionTokens = true
	}
	return c
}

// errCallTimeout marks the CallTimeout deadline, to tell it from the caller's.
var errCallTimeout = errors.New("call timeout")

// Stream sends req and streams the reply, calling obs as text arrives and
// before each retry. Rate limits, server errors and network failures are
// retried with backoff while nothing has been streamed yet. Errors are
// *Error; the returned Response carries Attempts even on error.
func (c *Client) Stream(ctx context.Context, req Request, obs Observer) (Response, error) {
	body, err := c.encode(req, req.Cache, req.Cache.takeBuffer())
	if err != nil {
		return Response{}, &Error{Kind: KindBadRequest, Message: "build request: " + err.Error(), Err: err}
	}
	// Every attempt has ended when Stream returns: the buffer is free.
	defer req.Cache.giveBuffer(body)
	callCtx, cancel := context.WithTimeoutCause(ctx, c.cfg.CallTimeout, errCallTimeout)
	defer cancel()

	for attempt := 1; ; attempt++ {
		resp, began, e := c.attempt(callCtx, body, obs)
		resp.Attempts = attempt
		if e == nil {
			if resp.Model == "" {
				resp.Model = req.Model
			}
			return resp, nil
		}
		if began || !e.Kind.Retryable() || attempt > c.cfg.MaxRetries {
			return resp, e
		}
		wait := c.backoff(attempt, e.RetryAfter)
		if dl, ok := callCtx.Deadline(); ok && time.Until(dl) < wait {
			return resp, e // the wait would outlast the call: report now
		}
		if obs.OnRetry != nil {
			obs.OnRetry(Retry{Attempt: attempt, Wait: wait, Err: e})
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-callCtx.Done():
			t.Stop()
			return resp, c.ctxError(callCtx, "", nil)
		}
	}
}

// backoff is the wait before the retry after attempt: the server's
// Retry-After when given, else full-jitter exponential backoff.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, maxRetryAfter)
	}
	ceiling := c.cfg.InitialBackoff << min(attempt-1, 30)
	if ceiling <= 0 || ceiling > c.cfg.MaxBackoff {
		ceiling = c.cfg.MaxBackoff
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// attempt makes one HTTP request and reads the stream to its end. began
// reports whether any content reached the observer, after which a retry
// would show the user the same text twice.
func (c *Client) attempt(callCtx context.Context, body []byte, obs Observer) (Response, bool, *Error) {
	ctx, cancel := context.WithCancelCause(callCtx)
	defer cancel(nil)
	stalled := fmt.Errorf("stream stalled: no data for %s", fmtDuration(c.cfg.IdleTimeout))
	watchdog := time.AfterFunc(c.cfg.IdleTimeout, func() { cancel(stalled) })
	defer watchdog.Stop()

	tap := &bodyTap{touch: func() { watchdog.Reset(c.cfg.IdleTimeout) }}
	res, streamErr := c.ep.send(ctx, http.MethodPost, c.ep.chatURL, body, tap)
	acc := newAccumulator()
	began := false
	chunks := 0
	if streamErr == nil {
		defer finishBody(res.Body, cancel)
		sse := newSSEReader(res.Body)
		var ck chunk
		for sse.next(&ck) {
			chunks++
			text, reasoning, calls := acc.add(&ck)
			if reasoning != "" {
				began = true
				if obs.OnDelta != nil {
					obs.OnDelta(Delta{Reasoning: reasoning})
				}
			}
			if text != "" {
				began = true
				if obs.OnDelta != nil {
					obs.OnDelta(Delta{Text: text})
				}
			}
			began = began || calls
		}
		streamErr = sse.Err()
	}
	resp := Response{Model: acc.model}
	partial := acc.text.String()

	// Why the attempt ended, most specific first.
	if cause := context.Cause(ctx); errors.Is(cause, stalled) {
		return resp, began, &Error{Kind: KindStream, Message: stalled.Error(), Partial: partial, Err: cause}
	}
	if callCtx.Err() != nil {
		return resp, began, c.ctxError(callCtx, partial, streamErr)
	}
	if err := streamErr; err != nil {
		e := classify(err, began)
		e.Partial = partial
		return resp, began, e
	}
	switch {
	case chunks == 0:
		return resp, began, emptyStream(tap)
	case acc.choices == 0:
		return resp, began, &Error{Kind: KindStream, Message: "stream ended without any choice"}
	case acc.finish == "":
		// The stream closed without finish_reason (and so without [DONE]):
		// whatever arrived may be cut short, so it is not a reply.
		return resp, began, &Error{Kind: KindStream, Partial: partial,
			Message: "stream ended before the reply finished (no finish_reason)"}
	}
	resp.Message = acc.message()
	resp.FinishReason = acc.finish
	resp.Usage = acc.usage
	return resp, began, nil
}

// finishBody reads what follows [DONE] (the end of the chunked body) and
// closes it: net/http reuses a connection only if its body was read to the
// end, and a new connection per step is a new TLS handshake with a real
// provider. A server that keeps the body open after the reply is given
// drainWait, then the attempt's context is cancelled, which drops the
// connection instead.
func finishBody(body io.ReadCloser, cancel context.CancelCauseFunc) {
	stop := time.AfterFunc(drainWait, func() { cancel(errDrainWait) })
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	stop.Stop()
	_ = body.Close()
}

const drainWait = 50 * time.Millisecond

var errDrainWait = errors.New("body still open after the reply")

// ctxError explains why callCtx ended: our CallTimeout or the caller.
func (c *Client) ctxError(callCtx context.Context, partial string, err error) *Error {
	if errors.Is(context.Cause(callCtx), errCallTimeout) {
		kind := KindNetwork
		if partial != "" {
			kind = KindStream
		}
		return &Error{Kind: kind, Partial: partial, Err: context.DeadlineExceeded,
			Message: fmt.Sprintf("call timed out after %s", fmtDuration(c.cfg.CallTimeout))}
	}
	if err == nil {
		err = callCtx.Err()
	}
	return &Error{Kind: KindCanceled, Message: "canceled", Partial: partial, Err: err}
}

// emptyStream describes a 2xx response that carried no chunk at all, such
// as a proxy's HTML page served with status 200.
func emptyStream(tap *bodyTap) *Error {
	res := tap.response()
	if res == nil {
		return &Error{Kind: KindStream, Message: "empty response"}
	}
	return &Error{Kind: KindStream, Status: res.StatusCode,
		Message: fmt.Sprintf("response had no stream data (Content-Type %q): %s",
			res.Header.Get("Content-Type"), snippet(tap.prefix()))}
}

// ListModels returns the model ids the endpoint lists at /models.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.CallTimeout, errCallTimeout)
	defer cancel()
	fail := func(err error) ([]string, error) {
		e := classify(err, false)
		if ctx.Err() != nil {
			e = c.ctxError(ctx, "", err)
		}
		return nil, fmt.Errorf("list models: %w", e)
	}
	res, err := c.ep.send(ctx, http.MethodGet, c.ep.modelsURL, nil, &bodyTap{})
	if err != nil {
		return fail(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxModelList))
	if err != nil {
		return fail(err)
	}
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("list models: %w", &Error{Kind: KindUnknown, Status: res.StatusCode, Err: err,
			Message: fmt.Sprintf("response is not a model list (Content-Type %q): %s", res.Header.Get("Content-Type"), snippet(body))})
	}
	ids := make([]string, 0, len(page.Data))
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// maxModelList bounds the /models body read: OpenRouter's full list with
// descriptions is a few MiB.
const maxModelList = 64 << 20

// bodyTap records the HTTP response of an attempt and calls touch whenever
// bytes arrive, which is what keeps the idle watchdog quiet. It keeps the
// first bytes of the body to describe a response that was not a stream.
type bodyTap struct {
	touch func()

	mu   sync.Mutex
	res  *http.Response
	head []byte // first bytes of the body, for describing odd responses
}

const tapPrefix = 512

// record notes res and routes its body through the tap.
func (t *bodyTap) record(res *http.Response) {
	t.mu.Lock()
	t.res = res
	t.mu.Unlock()
	if t.touch != nil {
		t.touch()
	}
	if res.Body != nil {
		res.Body = &tapReader{rc: res.Body, tap: t}
	}
}

func (t *bodyTap) response() *http.Response {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.res
}

func (t *bodyTap) prefix() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.head...)
}

type tapReader struct {
	rc  io.ReadCloser
	tap *bodyTap
}

func (r *tapReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if n > 0 {
		if r.tap.touch != nil {
			r.tap.touch()
		}
		r.tap.mu.Lock()
		if room := tapPrefix - len(r.tap.head); room > 0 {
			r.tap.head = append(r.tap.head, p[:min(n, room)]...)
		}
		r.tap.mu.Unlock()
	}
	return n, err
}

func (r *tapReader) Close() error { return r.rc.Close() }

// fmtDuration prints whole seconds as "90s" rather than "1m30s".
func fmtDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return d.String()
}

package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/pagination"
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
	HTTPClient  *http.Client  // nil: a client on its own NewTransport
	// Headers go with every request after Polly's own, so a configured
	// Authorization replaces the Bearer key.
	Headers   map[string]string
	UserAgent string       // empty: "Polly"
	Log       *slog.Logger // nil: none; else a debug line per HTTP request

	// under wraps each connection of the transport a Client makes for
	// itself, beneath the one that writes bodies (a test counts writes).
	under func(net.Conn) net.Conn
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
	body, enc, err := c.encode(req, req.Cache, req.Cache.takeBuffer())
	if err != nil {
		return Response{}, &Error{Kind: KindBadRequest, Message: "build request: " + err.Error(), Err: err}
	}
	// Every attempt has ended when Stream returns: the buffer is free.
	defer req.Cache.giveBuffer(body)
	if obs.OnRequest != nil {
		obs.OnRequest(body)
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, c.cfg.CallTimeout, errCallTimeout)
	defer cancel()

	for attempt := 1; ; attempt++ {
		resp, began, e := c.attempt(callCtx, body, obs)
		resp.Attempts, resp.Encoded = attempt, enc
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

// attempt makes one request through openai-go's
// Chat.Completions.NewStreaming and reads the stream to its end. began
// reports whether any content reached the observer, after which a retry
// would show the user the same text twice. The body is Polly's own
// encoding (see Client.encode), put on the request by the call's tap (see
// bodyTap.send) rather than by option.WithRequestBody: NewStreaming sets
// "stream": true in the body it holds with sjson, which copies all of it —
// 160 KB a call at 40k tokens, 40% of what a step allocated — and Polly's
// body already says it, first. The SDK's own body is a few bytes now.
func (c *Client) attempt(callCtx context.Context, body []byte, obs Observer) (Response, bool, *Error) {
	if c.ep.err != nil {
		return Response{}, false, &Error{Kind: KindBadRequest, Message: c.ep.err.Error(), Err: c.ep.err}
	}
	ctx, cancel := context.WithCancelCause(callCtx)
	defer cancel(nil)
	stalled := fmt.Errorf("stream stalled: no data for %s", fmtDuration(c.cfg.IdleTimeout))
	watchdog := time.AfterFunc(c.cfg.IdleTimeout, func() { cancel(stalled) })
	defer watchdog.Stop()

	tap := &bodyTap{send: body, touch: func() { watchdog.Reset(c.cfg.IdleTimeout) }, cancel: cancel}
	stream := c.ep.stream(ctx, openai.ChatCompletionNewParams{}, tap.option())
	defer stream.Close()
	acc := newAccumulator()
	began := false
	chunks := 0
	for stream.Next() {
		ck := stream.Current()
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
	streamErr := stream.Err()
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
		e := classify(err, began, tap)
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
			res.Header.Get("Content-Type"), snippet(tap.body()))}
}

// Model is one entry of the endpoint's model list.
type Model struct {
	ID string
	// Raw is the entry as the server sent it, with the fields that are
	// not OpenAI's: vLLM's max_model_len, OpenRouter's context_length, …
	Raw json.RawMessage
}

// Models lists the endpoint's models: GET /models through openai-go's
// client, the answer read as its page of openai.Model. The body is taken
// as it comes rather than by Models.List, which refuses JSON served as
// text/plain, as some local servers and proxies serve it.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.CallTimeout, errCallTimeout)
	defer cancel()
	fail := func(e *Error) ([]Model, error) { return nil, fmt.Errorf("list models: %w", e) }
	if c.ep.err != nil {
		return fail(&Error{Kind: KindBadRequest, Message: c.ep.err.Error(), Err: c.ep.err})
	}
	tap := &bodyTap{limit: maxModelList}
	var body []byte
	if err := c.ep.get(ctx, "models", nil, &body, tap.option()); err != nil {
		if ctx.Err() != nil {
			return fail(c.ctxError(ctx, "", err))
		}
		return fail(classify(err, false, tap))
	}
	var page pagination.Page[openai.Model]
	if err := json.Unmarshal(body, &page); err != nil || !page.JSON.Data.Valid() {
		var status int
		var ct string
		if res := tap.response(); res != nil {
			status, ct = res.StatusCode, res.Header.Get("Content-Type")
		}
		return fail(&Error{Kind: KindUnknown, Status: status, Err: err,
			Message: fmt.Sprintf("response is not a model list (Content-Type %q): %s", ct, snippet(body))})
	}
	out := make([]Model, len(page.Data))
	for i, m := range page.Data {
		out[i] = Model{ID: m.ID, Raw: json.RawMessage(m.RawJSON())}
	}
	return out, nil
}

// ListModels returns the model ids the endpoint lists at /models.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	ms, err := c.Models(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids, nil
}

// maxModelList bounds the /models body read: OpenRouter's full list with
// descriptions is a few MiB.
const maxModelList = 64 << 20

// fmtDuration prints whole seconds as "90s" rather than "1m30s".
func fmtDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return d.String()
}

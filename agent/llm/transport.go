package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// Every request goes through openai-go (openai.Client). Polly sets it up
// here: its base URL (checked first: http or https and a host), its
// redirect policy, the exact headers, no retries of its own (Client.Stream
// retries), and per call a tap that puts Polly's encoded body on the
// request and watches the response for the idle watchdog and for errors
// the SDK cannot describe.

// endpoint is where a Client's requests go and what each one carries.
type endpoint struct {
	base   *url.URL // nil when the base URL is unusable; err says why
	err    error
	header http.Header // what goes with every request, Content-Type aside
	// stream is the openai.Client's Chat.Completions.NewStreaming, get its
	// Get. Neither the client nor a service is kept in a field: a field of
	// type openai.Client makes every service of the SDK (responses,
	// realtime, audio, …) reachable from Polly's types, and the linker
	// then keeps all their methods: 23 MB more binary and 12 MiB more
	// resident in the idle TUI than these two method values.
	stream func(ctx context.Context, body openai.ChatCompletionNewParams, opts ...option.RequestOption) *ssestream.Stream[openai.ChatCompletionChunk]
	get    func(ctx context.Context, path string, params, res any, opts ...option.RequestOption) error
}

// maxErrorBody bounds how much of an error response is read to describe it.
const maxErrorBody = 64 << 10

// offOriginError is a redirect away from the base URL's scheme, host and
// port: following it would hand the key and the conversation to another
// server, so it is refused.
type offOriginError struct{ to string }

func (e *offOriginError) Error() string { return "redirect to another origin refused: " + e.to }

func newEndpoint(cfg Config) endpoint {
	var ep endpoint
	ep.header = http.Header{}
	ep.header.Set("Accept", "application/json")
	ua := cfg.UserAgent
	if ua == "" {
		ua = "Polly"
	}
	ep.header.Set("User-Agent", ua)
	if cfg.APIKey != "" {
		ep.header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	for k, v := range cfg.Headers {
		ep.header.Set(k, v) // after the key: a proxy's own Authorization wins
	}

	ep.base, ep.err = parseBaseURL(cfg.BaseURL)
	if ep.err != nil {
		return ep
	}
	// The SDK resolves each path against the base URL, which drops the
	// base's query; it is added back to every request (Azure's api-version).
	root := *ep.base
	root.RawQuery, root.ForceQuery = "", false
	opts := []option.RequestOption{
		option.WithBaseURL(root.String()),
		option.WithHTTPClient(guardRedirects(httpClient(cfg.HTTPClient, cfg.under))),
		option.WithMaxRetries(0),
		// The SDK's own view of the request holds Polly's key, not one
		// from OPENAI_API_KEY (exactHeaders decides what is sent).
		option.WithAPIKey(cfg.APIKey),
		option.WithMiddleware(exactHeaders(ep.header)),
	}
	for k, vs := range ep.base.Query() {
		for _, v := range vs {
			opts = append(opts, option.WithQueryAdd(k, v))
		}
	}
	if cfg.Log != nil {
		opts = append(opts, option.WithMiddleware(logRequests(cfg.Log)))
	}
	sdk := openai.NewClient(opts...)
	ep.stream, ep.get = sdk.Chat.Completions.NewStreaming, sdk.Get
	return ep
}

// exactHeaders sends Polly's headers and no others. openai.NewClient adds
// its own (X-Stainless-* telemetry, its User-Agent) and reads
// OPENAI_API_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID and
// OPENAI_CUSTOM_HEADERS from the environment; Polly's configuration has
// already decided which key and headers go to which provider, and an
// OpenAI key or organisation id must not reach another one.
func exactHeaders(h http.Header) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		ct := req.Header.Get("Content-Type")
		req.Header = h.Clone()
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		return next(req)
	}
}

// logRequests writes one debug line per HTTP request: method, path, status,
// bytes sent and the time to the response headers (never headers, query
// or bodies, which may carry keys).
func logRequests(l *slog.Logger) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		start := time.Now()
		res, err := next(req)
		attrs := []any{"method", req.Method, "path", req.URL.Path, "sent", req.ContentLength, "wait", time.Since(start)}
		if res != nil {
			attrs = append(attrs, "status", res.StatusCode)
		}
		if err != nil {
			var ue *url.Error // its text repeats the URL, query included
			if errors.As(err, &ue) {
				err = ue.Err
			}
			attrs = append(attrs, "error", err.Error())
		}
		l.Debug("llm request", attrs...)
		return res, err
	}
}

// NewTransport is the transport of a Client given no HTTP client: one
// like http.DefaultTransport (proxies from the environment, the same
// timeouts and pool) whose connections send a request body from Polly's
// own bytes (bodyConn). Each Client has its own, so its connections are
// kept for its endpoint.
func NewTransport() *http.Transport { return newTransport(nil) }

// newTransport is NewTransport; under, when set, wraps each connection
// beneath its bodyConn (where a test counts the writes).
func newTransport(under func(net.Conn) net.Conn) *http.Transport {
	var t *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	} else {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if under != nil {
			c = under(c)
		}
		return bodyConn{c}, nil
	}
	return t
}

// requestBody is a request body Polly encoded, as the tap puts it on the
// request: a bodyConn writes what is left of it from its bytes.
type requestBody struct{ bytes.Reader }

func newRequestBody(b []byte) *requestBody {
	r := &requestBody{}
	r.Reset(b)
	return r
}

func (*requestBody) Close() error { return nil }

// bodyConn is a connection that writes a request body held in memory
// straight from its bytes, in one write. net/http sends a body of known
// length by copying an io.LimitedReader of it into the connection; with
// a plain connection the bytes went through a 32 KB buffer allocated per
// request, in six writes for 150 KB (TestClientSendsTheBodyFromItsBytes).
// At 40k tokens of context the body is ~160 KB, and a copy of it is as
// much memory the caches miss for, every step. Over TLS the encryption
// writes the bytes anyway: the TLS connection wraps this one and never
// asks it to read a body.
type bodyConn struct{ net.Conn }

func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if b, ok := lr.R.(*requestBody); ok && int64(b.Len()) <= lr.N {
			n, err := b.WriteTo(c.Conn)
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r) // a TCP connection's own: splice, sendfile or a copy
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// httpClient is hc, or a client on NewTransport (its connections wrapped
// by under, when set).
func httpClient(hc *http.Client, under func(net.Conn) net.Conn) *http.Client {
	if hc != nil {
		return hc
	}
	return &http.Client{Transport: newTransport(under)}
}

// guardRedirects is a copy of hc (nil: a default client) that refuses a
// redirect to another origin before that server hears anything; same-origin
// redirects are followed (a 307 sends the body again).
func guardRedirects(hc *http.Client) *http.Client {
	c := &http.Client{}
	if hc != nil {
		*c = *hc
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, via[0].URL) {
			return &offOriginError{to: req.URL.Redacted()}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return fmt.Errorf("stopped after %d redirects", len(via))
		}
		return nil
	}
	return c
}

// parseBaseURL accepts an absolute http(s) URL. Its path is the prefix of
// every endpoint ("/v1"); a query (Azure's api-version) goes with every
// request.
func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q: want http:// or https:// and a host", u.Redacted())
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// bodyTap sits between the SDK and the wire for one call (a per-call
// middleware). It records the HTTP response, calls touch whenever bytes
// arrive (which keeps the idle watchdog quiet), keeps the start of the
// body (all of an error body, bounded) to describe a response the SDK
// could not read, and on Close reads a stream's body to its end so the
// connection is reused.
type bodyTap struct {
	// send, when set, is the request body: it replaces the SDK's own on
	// the request the SDK built (same headers, URL and client), so the
	// bytes sent are the bytes Polly encoded, never copied.
	send   []byte
	touch  func()                  // nil: none
	cancel context.CancelCauseFunc // the attempt's; ends a drain that waits too long (nil: no drain)
	limit  int64                   // bound on a 2xx body; 0: none

	mu   sync.Mutex
	res  *http.Response
	head []byte
}

const tapPrefix = 512

func (t *bodyTap) option() option.RequestOption { return option.WithMiddleware(t.middleware) }

func (t *bodyTap) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if t.send != nil {
		// In place: the SDK made this request for this attempt alone, and
		// the debug log's middleware reads its length after it is sent.
		body := t.send
		req.GetBody = func() (io.ReadCloser, error) { return newRequestBody(body), nil }
		req.Body, _ = req.GetBody()
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	t.mu.Lock()
	t.res = res
	t.mu.Unlock()
	if t.touch != nil {
		t.touch()
	}
	ok := res.StatusCode/100 == 2
	r := &tapReader{rc: res.Body, r: res.Body, tap: t, keep: tapPrefix, drain: ok && t.cancel != nil}
	switch {
	case !ok:
		r.r, r.keep = io.LimitReader(res.Body, maxErrorBody), maxErrorBody
	case t.limit > 0:
		r.r = io.LimitReader(res.Body, t.limit)
	}
	res.Body = r
	if !ok && res.StatusCode < 400 {
		// A 1xx or a 3xx not followed: the SDK would take it for a reply.
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return nil, fromStatus(res.StatusCode, res.Header, b, providerError{})
	}
	return res, nil
}

func (t *bodyTap) response() *http.Response {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.res
}

// body is what the tap kept of the response body.
func (t *bodyTap) body() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.head...)
}

type tapReader struct {
	rc    io.ReadCloser
	r     io.Reader // rc, or a bound on it
	tap   *bodyTap
	keep  int  // bytes of the body the tap keeps
	drain bool // read to the end on Close
	eof   bool
}

func (r *tapReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		if r.tap.touch != nil {
			r.tap.touch()
		}
		r.tap.mu.Lock()
		if room := r.keep - len(r.tap.head); room > 0 {
			r.tap.head = append(r.tap.head, p[:min(n, room)]...)
		}
		r.tap.mu.Unlock()
	}
	if err == io.EOF {
		r.eof = true
	}
	return n, err
}

// Close reads what follows [DONE] (the end of the chunked body) first:
// net/http reuses a connection only if its body was read to the end, and
// a new connection per step is a new TLS handshake with a real provider.
// A server that keeps the body open after the reply is given drainWait,
// then the attempt's context is cancelled, which drops the connection
// instead.
func (r *tapReader) Close() error {
	if r.drain && !r.eof {
		r.drain = false
		stop := time.AfterFunc(drainWait, func() { r.tap.cancel(errDrainWait) })
		_, _ = io.CopyN(io.Discard, r, 4<<10)
		stop.Stop()
	}
	return r.rc.Close()
}

const drainWait = 50 * time.Millisecond

var errDrainWait = errors.New("body still open after the reply")

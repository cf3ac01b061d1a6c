package llm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Polly speaks HTTP to the provider itself. It already encodes the request
// body (encode.go) and decodes the stream (sse.go); what remained of
// openai-go in production was building the POST and the error type, and
// linking the SDK cost a third of the binary and milliseconds of package
// init on every start. openai-go stays in the tests, as the reference the
// wire format is checked against (sdk_test.go).

// endpoint is where a Client's requests go and what each one carries.
type endpoint struct {
	base      *url.URL // nil when the base URL is unusable; err says why
	err       error
	chatURL   string
	modelsURL string
	header    http.Header  // auth, user agent, configured headers
	hc        *http.Client // the configured client, refusing redirects off the base URL's origin
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
	ep.base, ep.err = parseBaseURL(cfg.BaseURL)
	if ep.base != nil {
		ep.chatURL = ep.base.JoinPath("chat/completions").String()
		ep.modelsURL = ep.base.JoinPath("models").String()
	}

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
		ep.header.Set(k, v)
	}

	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
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
	ep.hc = hc
	return ep
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

// send makes one request with body as JSON (nil: none), recording the
// response in tap. A status outside 2xx comes back as an *Error, its body
// read and closed; otherwise the caller reads and closes res.Body.
func (ep *endpoint) send(ctx context.Context, method, target string, body []byte, tap *bodyTap) (*http.Response, error) {
	if ep.err != nil {
		return nil, &Error{Kind: KindBadRequest, Message: ep.err.Error(), Err: ep.err}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body) // also sets ContentLength and GetBody (for a 307)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	req.Header = ep.header.Clone()
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := ep.hc.Do(req)
	if err != nil {
		return nil, err
	}
	tap.record(res)
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		return nil, fromStatus(res.StatusCode, res.Header, b)
	}
	return res, nil
}

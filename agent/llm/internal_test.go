package llm

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"polly/agent/llmtest"
	"polly/memory/chat"
)

func TestRetryAfter(t *testing.T) {
	date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		h        http.Header
		min, max time.Duration
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, 2 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, 250 * time.Millisecond},
		{http.Header{"Retry-After": {date}}, time.Second, 3 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0, 0},
		{http.Header{}, 0, 0},
	}
	for _, tc := range cases {
		if got := retryAfter(tc.h); got < tc.min || got > tc.max {
			t.Errorf("retryAfter(%v) = %v, want in [%v, %v]", tc.h, got, tc.min, tc.max)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := New(Config{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if got := c.backoff(1, 5*time.Minute); got != maxRetryAfter {
		t.Errorf("Retry-After of 5m gave %v, want the %v cap", got, maxRetryAfter)
	}
	if got := c.backoff(1, 2*time.Second); got != 2*time.Second {
		t.Errorf("Retry-After of 2s gave %v", got)
	}
	var sawLow bool
	for range 200 {
		if d := c.backoff(1, 0); d < 0 || d > 100*time.Millisecond {
			t.Fatalf("first backoff %v outside [0, 100ms]", d)
		}
		d := c.backoff(40, 0) // the shift saturates; MaxBackoff caps it
		if d < 0 || d > time.Second {
			t.Fatalf("late backoff %v outside [0, 1s]", d)
		}
		sawLow = sawLow || d < 900*time.Millisecond
	}
	if !sawLow {
		t.Error("backoff never jittered below 90% of the cap")
	}
}

func TestSnippetAndParseErrorBody(t *testing.T) {
	long := "<html>" + strings.Repeat("é", 300) + "</html>"
	s := snippet([]byte(long))
	if !strings.HasSuffix(s, "…") || len(s) > 204 || !strings.HasPrefix(s, "<html>") {
		t.Errorf("snippet = %q", s)
	}
	for body, want := range map[string]string{
		`{"error":{"message":"boom","code":"x"}}`: "boom",
		`{"error":"model not found"}`:             "model not found",
		`{"detail":"Not Found"}`:                  "Not Found",
		`{"object":"error","message":"too long"}`: "too long",
		"<h1>Bad Gateway</h1>":                    "unexpected response body: <h1>Bad Gateway</h1>",
	} {
		if got := parseErrorBody([]byte(body)).Message; got != want {
			t.Errorf("parseErrorBody(%s) = %q, want %q", body, got, want)
		}
	}
}

// TestClientMakesItsOwnTransport: a Client given no HTTP client sends on
// NewTransport, whose connections write a body from its bytes
// (TestClientSendsTheBodyFromItsBytes); a given one is used as it is.
func TestClientMakesItsOwnTransport(t *testing.T) {
	tr, ok := httpClient(nil, nil).Transport.(*http.Transport)
	if !ok || tr == http.DefaultTransport || tr.Proxy == nil || tr.DialContext == nil {
		t.Fatalf("the default client's transport is %#v, want NewTransport's", httpClient(nil, nil).Transport)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := tr.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(bodyConn); !ok {
		t.Errorf("the default transport dials a %T, want a bodyConn", c)
	}
	hc := &http.Client{}
	if httpClient(hc, nil) != hc {
		t.Error("a given HTTP client is not the one used")
	}
}

// TestClientSendsTheBodyFromItsBytes: a Client made with no HTTP client,
// as Polly makes them, sends a 150 KB request body (a 40k-token context
// is ~160 KB) in one write from its bytes, after the headers, and the
// server receives it whole. The control, a client on a plain connection,
// takes six writes through net/http's 32 KB copies: the count can fail.
func TestClientSendsTheBodyFromItsBytes(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 150<<10/16)
	for _, tc := range []struct {
		name      string
		config    func(count func(net.Conn) net.Conn) Config
		fromBytes bool
	}{
		{"own transport", func(count func(net.Conn) net.Conn) Config { return Config{under: count} }, true},
		{"plain connection", func(count func(net.Conn) net.Conn) Config {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return count(c), nil
			}
			return Config{HTTPClient: &http.Client{Transport: tr}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Text("ok"))
			var mu sync.Mutex
			var writes []int
			cfg := tc.config(func(c net.Conn) net.Conn {
				return countedConn{Conn: c, count: func(n int) { mu.Lock(); writes = append(writes, n); mu.Unlock() }}
			})
			cfg.BaseURL = srv.URL()
			if _, err := New(cfg).Stream(context.Background(), Request{Model: "m", Messages: []chat.Message{chat.UserText(big)}}, Observer{}); err != nil {
				t.Fatal(err)
			}
			if got := srv.Last().Messages; len(got) == 0 || got[len(got)-1].Content != big {
				t.Fatal("the server did not receive the 150 KB message whole")
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%d writes: %v", len(writes), writes)
			// The headers go first, and net/http's 4 KB buffer may take
			// the body's start with them; the rest must leave in one write.
			fromBytes := len(writes) > 0 && len(writes) <= 2 && writes[len(writes)-1] >= len(big)-4096
			if fromBytes != tc.fromBytes {
				t.Errorf("the request went in writes %v; want the body in one write: %v", writes, tc.fromBytes)
			}
		})
	}
}

type countedConn struct {
	net.Conn
	count func(int)
}

func (c countedConn) Write(p []byte) (int, error) {
	c.count(len(p))
	return c.Conn.Write(p)
}

package permission

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"polly/memory/chat"
	"polly/tools"
)

// Fail closed (issue 17), through the real policy: fetch_url to a host an
// allow rule covers, redirected to a host nothing covers, asks; headless
// it is denied and the second host receives nothing. Host names map to
// loopback servers through the client's dialer.
func TestRedirectToNewHostAsksThroughPolicy(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, "<html><p>internal</p></html>")
	}))
	defer other.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/go" {
			http.Redirect(w, r, "http://other.test/landing", http.StatusFound)
			return
		}
		fmt.Fprint(w, "<html><p>fine</p></html>")
	}))
	defer allowed.Close()
	hosts := map[string]string{"allowed.test:80": allowed.Listener.Addr().String(), "other.test:80": other.Listener.Addr().String()}
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		to, ok := hosts[addr]
		if !ok {
			return nil, fmt.Errorf("test dialer: no route to %s", addr)
		}
		return dialer.DialContext(ctx, network, to)
	}}}
	fetch := tools.WebTools(tools.WebOptions{HTTPClient: client, RespectRobots: false})[0]

	for _, mode := range []Mode{Ask, AutoEdit} {
		pol, err := New(Options{Mode: mode, Root: t.TempDir(), Rules: Rules{Allow: []Rule{{Tool: "fetch_url", Pattern: "allowed.test"}}}})
		if err != nil {
			t.Fatal(err)
		}
		call := func(url string) tools.Result {
			return tools.NewRegistry(fetch).Execute(context.Background(),
				chat.ToolCall{ID: "1", Name: "fetch_url", Arguments: fmt.Sprintf(`{"url": %q}`, url)}, tools.Exec{Gate: pol})
		}
		if res := call("http://allowed.test/page"); res.IsError || !strings.Contains(res.Output, "fine") {
			t.Fatalf("%s: allowed host: %s", mode, res.Output)
		}
		res := call("http://allowed.test/go")
		if !res.IsError || !strings.Contains(res.Output, "refused a redirect to another host") || !strings.Contains(res.Output, "other.test") {
			t.Fatalf("%s: redirect: %s", mode, res.Output)
		}
		if n := otherHits.Load(); n != 0 {
			t.Fatalf("%s: other.test received %d request(s)", mode, n)
		}
	}

	// A person who approves it gets the page.
	pol, err := New(Options{Mode: Ask, Root: t.TempDir(), Asker: askerFunc(func(r Request) Reply {
		if r.Access.URL != "http://other.test/landing" {
			t.Errorf("asked about %q", r.Access.URL)
		}
		return Reply{Answer: AllowOnce}
	}), Rules: Rules{Allow: []Rule{{Tool: "fetch_url", Pattern: "allowed.test"}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := tools.NewRegistry(fetch).Execute(context.Background(),
		chat.ToolCall{ID: "1", Name: "fetch_url", Arguments: `{"url": "http://allowed.test/go"}`}, tools.Exec{Gate: pol})
	if res.IsError || !strings.Contains(res.Output, "internal") || otherHits.Load() != 1 {
		t.Fatalf("approved redirect: %s", res.Output)
	}
}

type askerFunc func(Request) Reply

func (f askerFunc) Ask(_ context.Context, r Request) (Reply, error) { return f(r), nil }

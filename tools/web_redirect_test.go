package tools

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"polly/memory/chat"
)

// serveOn starts a test server on a given loopback address.
func serveOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// Fail closed (issue 17): a redirect to a host the gate was never asked
// about is asked about; refused, the new host receives nothing (not even
// a robots.txt request).
func TestFetchRechecksRedirectTargets(t *testing.T) {
	var otherHits atomic.Int64
	other := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, "<html><title>other</title><p>secret</p></html>")
	}))
	first := serveOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/landing", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "<html><title>final</title><p>same host</p></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	fetch, _ := webTools(WebOptions{})

	var mu sync.Mutex
	var asked []string
	run := func(url string, allowOther bool) Result {
		gate := webGateFunc(func(_ context.Context, tool string, a Access) error {
			mu.Lock()
			asked = append(asked, tool+" "+a.URL)
			mu.Unlock()
			if strings.HasPrefix(a.URL, other.URL) && !allowOther {
				return &Denied{Reason: "the user denied fetch_url (the host 127.0.0.2)"}
			}
			return nil
		})
		return NewRegistry(fetch).Execute(context.Background(), chat.ToolCall{ID: "1", Name: "fetch_url", Arguments: fmt.Sprintf(`{"url": %q}`, url)}, Exec{Gate: gate})
	}

	res := run(first.URL+"/away", false)
	if !res.IsError || !strings.Contains(res.Output, "refused a redirect to another host") || !strings.Contains(res.Output, "permission denied") {
		t.Fatalf("redirect to a new host: %s", res.Output)
	}
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the redirect target received %d request(s) after the gate refused", n)
	}
	if want := []string{"fetch_url " + first.URL + "/away", "fetch_url " + other.URL + "/landing"}; strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Fatalf("gate asked %q, want %q", asked, want)
	}

	// Approved, the redirect is followed.
	asked = nil
	res = run(first.URL+"/away", true)
	if res.IsError || !strings.Contains(res.Output, "secret") || otherHits.Load() == 0 {
		t.Fatalf("approved redirect: %s", res.Output)
	}
	// A redirect within the same host is not asked again.
	asked = nil
	res = run(first.URL+"/here", false)
	if res.IsError || !strings.Contains(res.Output, "same host") || len(asked) != 1 {
		t.Fatalf("same-host redirect: asked %q, %s", asked, res.Output)
	}
}

// A tool run outside Registry.Execute has no gate to ask: a redirect to
// another host is refused.
func TestRedirectWithoutGateIsRefused(t *testing.T) {
	var hits atomic.Int64
	other := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	first := serveOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/x", http.StatusFound)
	}))
	w := newWebFetcher(WebOptions{})
	_, err := w.fetch(context.Background(), first.URL+"/")
	if err == nil || !strings.Contains(err.Error(), "no permission policy") || hits.Load() != 0 {
		t.Fatalf("err = %v, hits %d", err, hits.Load())
	}
}

// robots.txt redirecting to another host goes through the gate too; refused,
// the other host receives nothing and robots.txt counts as unreachable, so
// the page is not fetched (RFC 9309: unreachable disallows).
func TestRobotsRedirectRechecked(t *testing.T) {
	var otherHits, pageHits atomic.Int64
	other := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1) }))
	first := serveOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, other.URL+"/robots.txt", http.StatusMovedPermanently)
			return
		}
		pageHits.Add(1)
	}))
	fetch, _ := webTools(WebOptions{RespectRobots: true})
	var asked []string
	gate := webGateFunc(func(_ context.Context, tool string, a Access) error {
		asked = append(asked, a.URL)
		if strings.HasPrefix(a.URL, other.URL) {
			return &Denied{Reason: "the user denied fetch_url (the host 127.0.0.2)"}
		}
		return nil
	})
	res := NewRegistry(fetch).Execute(context.Background(), chat.ToolCall{ID: "1", Name: "fetch_url", Arguments: fmt.Sprintf(`{"url": %q}`, first.URL+"/page")}, Exec{Gate: gate})
	if !res.IsError || !strings.Contains(res.Output, "could not be read") || !strings.Contains(res.Output, "refused a redirect to another host") {
		t.Fatalf("robots.txt redirect refused: %s", res.Output)
	}
	if otherHits.Load() != 0 || pageHits.Load() != 0 {
		t.Fatalf("other host hits %d, page hits %d; want 0 and 0", otherHits.Load(), pageHits.Load())
	}
	if want := first.URL + "/page|" + other.URL + "/robots.txt"; strings.Join(asked, "|") != want {
		t.Fatalf("gate asked %q, want %q", asked, want)
	}
}

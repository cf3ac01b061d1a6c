package tools

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Racing calls for one host share one robots.txt fetch while it is in
// flight, not only through the cache: every cached copy here is already
// stale, so without the shared fetch each call would ask the site.
func TestRobotsConcurrentCallsShareOneFetch(t *testing.T) {
	const callers = 8
	var robotsHits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			io.WriteString(w, "ok")
			return
		}
		if robotsHits.Add(1) == callers {
			close(release) // every caller fetched on its own: no sharing
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, "User-agent: *\nDisallow: /private\n")
	}))
	defer srv.Close()
	var clock atomic.Int64 // each reading is a day later: nothing cached is fresh
	now := func() time.Time { return time.Unix(0, 0).Add(time.Duration(clock.Add(1)) * 25 * time.Hour) }
	fetch, _ := webTools(WebOptions{RespectRobots: true, Now: now, Timeout: 10 * time.Second})

	var wg sync.WaitGroup
	results := make([]Result, callers)
	for i := range callers {
		wg.Go(func() {
			results[i] = webCall(t, fetch, map[string]string{"url": srv.URL + fmt.Sprintf("/private/p%d", i)})
		})
	}
	// The callers have a second to join the fetch in flight.
	select {
	case <-release:
	case <-time.After(time.Second):
		close(release)
	}
	wg.Wait()
	if n := robotsHits.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times by %d racing calls, want once", n, callers)
	}
	for i, res := range results {
		if !res.IsError {
			t.Errorf("caller %d fetched a disallowed page: %s", i, res.Output)
		}
	}
}

// A caller that gives up does not cut the fetch short for the others: they
// fetch again in their own context and get the real answer.
func TestRobotsCancelledCallerDoesNotPoisonOthers(t *testing.T) {
	var robotsHits atomic.Int64
	first := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if robotsHits.Add(1) == 1 {
			close(first)
			<-r.Context().Done() // the first fetch never answers; its caller gives up
			return
		}
		io.WriteString(w, "User-agent: *\nDisallow: /x\n")
	}))
	defer srv.Close()
	w := newWebFetcher(WebOptions{RespectRobots: true, UserAgent: "Polly/test"})
	u, _ := url.Parse(srv.URL + "/x")
	ctx, cancel := context.WithCancel(context.Background())
	cut := make(chan error, 1)
	go func() { cut <- w.checkRobots(ctx, u) }()
	<-first
	other := make(chan error, 1)
	go func() { other <- w.checkRobots(context.Background(), u) }()
	cancel()
	if err := <-cut; err == nil || ctx.Err() == nil {
		t.Fatalf("cancelled caller: %v", err)
	}
	if _, ok := (<-other).(*RobotsDeniedError); !ok || robotsHits.Load() != 2 {
		t.Fatalf("the other caller did not refetch (hits %d)", robotsHits.Load())
	}
	// The answer is cached now.
	if _, ok := w.checkRobots(context.Background(), u).(*RobotsDeniedError); !ok || robotsHits.Load() != 2 {
		t.Fatalf("not cached: hits %d", robotsHits.Load())
	}
}

package models

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"polly/workspace/atomicfile"
)

// Defaults of Options.
const (
	DefaultTTL        = 24 * time.Hour
	DefaultFailureTTL = time.Hour // a failed discovery is retried after this
	DefaultTimeout    = 5 * time.Second
)

// Options configure a Catalogue. Zero fields take the defaults.
type Options struct {
	CacheDir   string        // e.g. ~/.cache/polly; "" keeps everything in memory
	TTL        time.Duration // how long a listing is fresh
	Timeout    time.Duration // bound on one provider's discovery
	HTTPClient *http.Client
	Now        func() time.Time
	// Debug receives one line when discovery fails; nil drops it.
	Debug func(line string)
}

// Catalogue holds the listings of the configured providers and the
// windows learned from context-length errors. It is safe for concurrent
// use and implements config.ModelFacts.
type Catalogue struct {
	o Options

	mu       sync.Mutex
	listings map[string]Listing // provider → its latest listing
	learned  map[string]int     // provider + "/" + model → tokens

	// inFlight holds the discovery running for each provider; it is
	// joined, not repeated. It is read and written under mu together with
	// listings, so "is one running, or is the listing fresh" is one check.
	inFlight map[string]chan struct{}
}

// New returns a catalogue and loads what the cache holds (no network).
func New(o Options) *Catalogue {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Catalogue{o: o, listings: map[string]Listing{}, learned: map[string]int{}, inFlight: map[string]chan struct{}{}}
	c.loadLearned()
	return c
}

// DiscoveredWindow is the window the provider's listing gives model, 0
// when unknown.
func (c *Catalogue) DiscoveredWindow(provider, model string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listings[provider].Window(model)
}

// LearnedWindow is the window a context-length error stated, 0 when none.
func (c *Catalogue) LearnedWindow(provider, model string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.learned[provider+"/"+model]
}

// Learn records the window a provider's context-length error stated for a
// model ("maximum context length is N tokens"). It wins over everything
// else from now on, and is kept in the cache directory for later runs.
func (c *Catalogue) Learn(provider, model string, tokens int) error {
	if tokens <= 0 {
		return nil
	}
	c.mu.Lock()
	c.learned[provider+"/"+model] = tokens
	snapshot := make(map[string]int, len(c.learned))
	for k, v := range c.learned {
		snapshot[k] = v
	}
	c.mu.Unlock()
	if c.o.CacheDir == "" {
		return nil
	}
	return writeJSON(c.LearnedPath(), snapshot)
}

// LearnedPath is the file learned windows are kept in; "" when the
// catalogue keeps everything in memory.
func (c *Catalogue) LearnedPath() string {
	if c.o.CacheDir == "" {
		return ""
	}
	return filepath.Join(c.o.CacheDir, "learned-windows.json")
}

// Listing returns a provider's listing, if any was loaded or discovered.
func (c *Catalogue) Listing(provider string) (Listing, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.listings[provider]
	return l, ok
}

// Refresh makes each provider's listing current: a cached one that is
// fresh and for the same base URL is used as is; the others are
// discovered in the background, each bounded by Options.Timeout. The
// returned channel closes when all of them are done, so a caller can wait
// a short while for them and go on without them after that.
func (c *Catalogue) Refresh(ctx context.Context, endpoints map[string]Endpoint) <-chan struct{} {
	var waits []chan struct{}
	for name, ep := range endpoints {
		c.loadCachedFile(name, ep)
		c.mu.Lock()
		// Decided under one lock: a discovery that finished a moment ago
		// has stored its listing before it left inFlight, so it is seen
		// either as running or as fresh, never as neither.
		if done, ok := c.inFlight[name]; ok {
			c.mu.Unlock()
			waits = append(waits, done) // joined, not repeated
			continue
		}
		if c.freshLocked(name, ep) {
			c.mu.Unlock()
			continue
		}
		done := make(chan struct{})
		c.inFlight[name] = done
		c.mu.Unlock()
		waits = append(waits, done)
		go func() {
			// It ends within Options.Timeout or when its caller stops.
			c.discover(ctx, name, ep)
			c.mu.Lock()
			delete(c.inFlight, name)
			c.mu.Unlock()
			close(done)
		}()
	}
	all := make(chan struct{})
	go func() {
		for _, w := range waits {
			<-w
		}
		close(all)
	}()
	return all
}

func (c *Catalogue) discover(parent context.Context, name string, ep Endpoint) {
	ctx, cancel := context.WithTimeout(parent, c.o.Timeout)
	defer cancel()
	l, err := Discover(ctx, c.o.HTTPClient, ep)
	if parent.Err() != nil {
		// Stopped by the caller (Polly is closing): nothing was learned
		// about the provider, so nothing is recorded.
		return
	}
	l.FetchedAt = c.o.Now()
	if err != nil {
		l.Models, l.Error = nil, err.Error()
		if c.o.Debug != nil {
			c.o.Debug(fmt.Sprintf("models: discovery for provider %s gave up: %v", name, err))
		}
	}
	c.mu.Lock()
	if err == nil || len(c.listings[name].Models) == 0 {
		c.listings[name] = l // a failure never replaces a good listing
	}
	c.mu.Unlock()
	if c.o.CacheDir != "" {
		if werr := writeJSON(c.cachePath(name), l); werr != nil && c.o.Debug != nil {
			c.o.Debug(fmt.Sprintf("models: cache for provider %s not written: %v", name, werr))
		}
	}
}

// loadCachedFile puts the cache file's listing of name in memory when
// none is there yet and it is for the same endpoint (fresh or not: a stale
// listing is better than nothing until the refresh lands).
func (c *Catalogue) loadCachedFile(name string, ep Endpoint) {
	if c.o.CacheDir == "" {
		return
	}
	c.mu.Lock()
	_, ok := c.listings[name]
	c.mu.Unlock()
	if ok {
		return
	}
	var l Listing
	b, err := os.ReadFile(c.cachePath(name))
	if err != nil || json.Unmarshal(b, &l) != nil || l.BaseURL != ep.BaseURL {
		return
	}
	if l.Error != "" && len(l.Models) == 0 && c.o.Now().Sub(l.FetchedAt) > c.ttl(l) {
		return // a stale failure says nothing
	}
	c.mu.Lock()
	if _, ok := c.listings[name]; !ok {
		c.listings[name] = l
	}
	c.mu.Unlock()
}

// freshLocked reports whether the listing in memory for name is for ep
// and still fresh. c.mu is held.
func (c *Catalogue) freshLocked(name string, ep Endpoint) bool {
	l, ok := c.listings[name]
	return ok && l.BaseURL == ep.BaseURL && c.o.Now().Sub(l.FetchedAt) <= c.ttl(l)
}

// ttl is how long l stays fresh: a failed discovery is retried sooner.
func (c *Catalogue) ttl(l Listing) time.Duration {
	if l.Error != "" {
		return min(c.o.TTL, DefaultFailureTTL)
	}
	return c.o.TTL
}

func (c *Catalogue) cachePath(provider string) string {
	return filepath.Join(c.o.CacheDir, "models", provider+".json")
}

func (c *Catalogue) loadLearned() {
	if c.o.CacheDir == "" {
		return
	}
	b, err := os.ReadFile(c.LearnedPath())
	if err != nil {
		return
	}
	var m map[string]int
	if json.Unmarshal(b, &m) != nil {
		return
	}
	for k, v := range m {
		if v > 0 {
			c.learned[k] = v
		}
	}
}

// writeJSON replaces path atomically, so a concurrent Polly never reads
// half a file.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o644)
}

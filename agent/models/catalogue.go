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

	"golang.org/x/sync/singleflight"
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

	discovering singleflight.Group // keyed by provider: one discovery at a time
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
	c := &Catalogue{o: o, listings: map[string]Listing{}, learned: map[string]int{}}
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
	return writeJSON(filepath.Join(c.o.CacheDir, "learned-windows.json"), snapshot)
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
	var wg sync.WaitGroup
	for name, ep := range endpoints {
		if c.loadCached(name, ep) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A discovery already running for name is joined, not repeated;
			// it ends within Options.Timeout or when its caller stops.
			<-c.discovering.DoChan(name, func() (any, error) {
				c.discover(ctx, name, ep)
				return nil, nil
			})
		}()
	}
	all := make(chan struct{})
	go func() {
		wg.Wait()
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

// loadCached uses the cached listing of name when it is fresh and for the
// same endpoint, and reports whether it did.
func (c *Catalogue) loadCached(name string, ep Endpoint) bool {
	c.mu.Lock()
	l, ok := c.listings[name]
	c.mu.Unlock()
	if !ok && c.o.CacheDir != "" {
		b, err := os.ReadFile(c.cachePath(name))
		if err == nil && json.Unmarshal(b, &l) == nil {
			ok = true
		}
	}
	if !ok || l.BaseURL != ep.BaseURL {
		return false
	}
	ttl := c.o.TTL
	if l.Error != "" {
		ttl = min(ttl, DefaultFailureTTL)
	}
	if c.o.Now().Sub(l.FetchedAt) > ttl {
		if len(l.Models) > 0 {
			c.mu.Lock()
			c.listings[name] = l // stale but better than nothing until the refresh lands
			c.mu.Unlock()
		}
		return false
	}
	c.mu.Lock()
	c.listings[name] = l
	c.mu.Unlock()
	return true
}

func (c *Catalogue) cachePath(provider string) string {
	return filepath.Join(c.o.CacheDir, "models", provider+".json")
}

func (c *Catalogue) loadLearned() {
	if c.o.CacheDir == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(c.o.CacheDir, "learned-windows.json"))
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
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

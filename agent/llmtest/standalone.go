package llmtest

import (
	"fmt"
	"log"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
)

// Start runs a scripted server outside a test, for demos and manual
// testing (agent/llmtest/fakeopenai): it listens on addr ("" or
// "127.0.0.1:0" picks a free port). Script problems that would fail a test
// are logged instead. Call Close when done.
func Start(addr string, steps ...Step) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("llmtest: listen %s: %w", addr, err)
	}
	tb := &standaloneTB{}
	s := newServer(tb, steps)
	s.hs = httptest.NewUnstartedServer(s.routes())
	s.hs.Listener.Close()
	s.hs.Listener = ln
	s.hs.Start()
	tb.Cleanup(s.shutdown)
	return s, nil
}

// Close stops a server made by Start. For a server made by NewServer it
// does nothing: the test's cleanup closes it.
func (s *Server) Close() {
	if tb, ok := s.t.(*standaloneTB); ok {
		tb.runCleanups()
	}
}

// standaloneTB stands in for testing.TB when the server runs outside a
// test. The embedded interface is nil: only the methods the server calls
// are implemented, and a call to any other would panic loudly.
type standaloneTB struct {
	testing.TB

	mu       sync.Mutex
	cleanups []func()
}

func (*standaloneTB) Helper() {}

func (*standaloneTB) Errorf(format string, args ...any) { log.Printf("llmtest: "+format, args...) }

func (*standaloneTB) Fatalf(format string, args ...any) { log.Printf("llmtest: "+format, args...) }

func (*standaloneTB) Logf(format string, args ...any) { log.Printf("llmtest: "+format, args...) }

func (tb *standaloneTB) Cleanup(f func()) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.cleanups = append(tb.cleanups, f)
}

func (tb *standaloneTB) runCleanups() {
	tb.mu.Lock()
	fs := tb.cleanups
	tb.cleanups = nil
	tb.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

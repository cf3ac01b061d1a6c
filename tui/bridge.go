package tui

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"polly/agent"
	"polly/tools/permission"
)

// frameDelay is how long a stream of text deltas may gather before it is
// delivered to Update: a fast model sends hundreds of tiny deltas a second,
// and one message per frame is all the screen can show anyway.
const frameDelay = 30 * time.Millisecond

// bridge carries agent events and permission questions from the agent's
// goroutines into the Bubble Tea loop. Emit never blocks the agent and never
// drops anything: the queue is unbounded, but consecutive text deltas of
// one agent are merged into one, so a stream only grows it by one entry per
// frame. Only the loop takes from it (through wait or drain).
type bridge struct {
	mu    sync.Mutex
	queue []any         // agent.Event, askMsg, askCancelMsg, in emission order
	n     uint64        // pushes so far
	wake  chan struct{} // capacity 1: "the queue may be non-empty"
	done  chan struct{} // closed when the program ends
	once  sync.Once
	delay time.Duration
}

func newBridge() *bridge {
	return &bridge{wake: make(chan struct{}, 1), done: make(chan struct{}), delay: frameDelay}
}

// Emit is the agent's event callback.
func (b *bridge) Emit(e agent.Event) { b.push(e) }

func (b *bridge) push(m any) {
	b.mu.Lock()
	b.n++
	if !b.merge(m) {
		b.queue = append(b.queue, m)
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// merge folds a text or reasoning delta into the same agent's previous
// delta when nothing else of that agent came in between. Called with mu held.
func (b *bridge) merge(m any) bool {
	switch d := m.(type) {
	case agent.TextDelta:
		for i := len(b.queue) - 1; i >= 0; i-- {
			e, ok := b.queue[i].(agent.Event)
			if !ok || !sameAgent(e.Head(), d.Header) {
				continue
			}
			if last, ok := e.(agent.TextDelta); ok {
				last.Text += d.Text
				b.queue[i] = last
				return true
			}
			return false
		}
	case agent.ReasoningDelta:
		for i := len(b.queue) - 1; i >= 0; i-- {
			e, ok := b.queue[i].(agent.Event)
			if !ok || !sameAgent(e.Head(), d.Header) {
				continue
			}
			if last, ok := e.(agent.ReasoningDelta); ok {
				last.Text += d.Text
				b.queue[i] = last
				return true
			}
			return false
		}
	case agent.ToolOutput:
		for i := len(b.queue) - 1; i >= 0; i-- {
			e, ok := b.queue[i].(agent.Event)
			if !ok || !sameAgent(e.Head(), d.Header) {
				continue
			}
			if last, ok := e.(agent.ToolOutput); ok && last.CallID == d.CallID {
				last.Text += d.Text
				last.Skipped += d.Skipped
				b.queue[i] = last
				return true
			}
			return false
		}
	}
	return false
}

func sameAgent(a, b agent.Header) bool {
	return a.Agent == b.Agent && a.Parent == b.Parent && a.Session == b.Session
}

// eventsMsg is a batch taken from the bridge, in emission order: every
// push up to number upTo is in it or in an earlier batch.
type eventsMsg struct {
	items []any
	upTo  uint64
}

// mark is the number of pushes so far. A Cmd that ends work records it
// when the work returns; Update finishes the work only once the batches
// up to the mark are applied, so a run never turns idle before its last
// events are on screen (they may still be in flight in a batch).
func (b *bridge) mark() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// wait is the Cmd that delivers the next batch. Exactly one is outstanding:
// Init starts it and every eventsMsg re-arms it. A batch of deltas only is
// held for one frame so a fast stream arrives as one message; anything else
// (a tool finishing, the end of a run, a permission question) goes at once.
func (b *bridge) wait() tea.Cmd {
	return func() tea.Msg {
		select {
		case <-b.wake:
		case <-b.done:
			return nil
		}
		if b.onlyDeltas() {
			t := time.NewTimer(b.delay)
			select {
			case <-t.C:
			case <-b.done:
				t.Stop()
				return nil
			}
		}
		items, upTo := b.drain()
		return eventsMsg{items: items, upTo: upTo}
	}
}

func (b *bridge) onlyDeltas() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.queue {
		switch m.(type) {
		case agent.TextDelta, agent.ReasoningDelta, agent.ToolOutput:
		default:
			return false
		}
	}
	return true
}

// drain takes everything queued, and the number of pushes it covers.
func (b *bridge) drain() ([]any, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue
	b.queue = nil
	return q, b.n
}

// close ends the waiting Cmd and unblocks pending permission questions.
func (b *bridge) close() { b.once.Do(func() { close(b.done) }) }

// askMsg is a permission question from an agent goroutine; the dialog
// answers on reply (buffered, so answering never blocks the loop).
type askMsg struct {
	id    int64
	req   permission.Request
	reply chan permission.Reply
}

// askCancelMsg withdraws a question whose run was cancelled.
type askCancelMsg struct{ id int64 }

// asker is the TUI's permission.Asker. Ask runs on the agent's goroutine
// and blocks it until the user answers, the run is cancelled, or the TUI
// exits.
type asker struct {
	b    *bridge
	next atomic.Int64
}

var errTUIClosed = errors.New("the TUI closed before the question was answered")

func (a *asker) Ask(ctx context.Context, r permission.Request) (permission.Reply, error) {
	id := a.next.Add(1)
	reply := make(chan permission.Reply, 1)
	a.b.push(askMsg{id: id, req: r, reply: reply})
	select {
	case rep := <-reply:
		return rep, nil
	case <-ctx.Done():
		a.b.push(askCancelMsg{id: id})
		return permission.Reply{}, ctx.Err()
	case <-a.b.done:
		return permission.Reply{}, errTUIClosed
	}
}

// runGroup tracks the Cmds that use the session (runs, switches,
// compactions, loads) so Run can wait for them before it closes the store.
// A Cmd enters when its goroutine starts, not when it is made: Bubble Tea
// may drop Cmds that never started at exit, and a WaitGroup.Add made in
// Update for one of those would never be matched.
type runGroup struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	closed bool
}

// enter reports whether work may start; the caller must leave after.
func (g *runGroup) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

func (g *runGroup) leave() { g.wg.Done() }

// close stops new work and waits up to d for the running work; it
// reports whether everything ended in time.
func (g *runGroup) close(d time.Duration) bool {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// work wraps a Cmd that uses the session in enter/leave.
func (g *runGroup) work(f func() tea.Msg) tea.Cmd {
	return func() tea.Msg {
		if !g.enter() {
			return nil
		}
		defer g.leave()
		return f()
	}
}

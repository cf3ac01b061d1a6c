package tui

import (
	"sync"
	"testing"
	"time"

	"polly/agent"
)

// A fast stream arrives as one merged delta per agent per batch; events
// that end something are never merged or dropped, and order is kept.
func TestBridgeCoalescesDeltasAndKeepsTerminalEvents(t *testing.T) {
	b := newBridge()
	defer b.close()
	a, c := hdr("default"), hdr("coder")
	var wg sync.WaitGroup
	for _, h := range []agent.Header{a, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b.Emit(agent.TextDelta{Header: h, Text: "x"})
			}
			b.Emit(agent.ToolFinished{Header: h, CallID: h.Agent})
			b.Emit(agent.TextDelta{Header: h, Text: "after"})
			b.Emit(agent.Done{Header: h, Reason: "completed"})
		}()
	}
	wg.Wait()
	items, upTo := b.drain()
	if upTo != 2*1003 {
		t.Errorf("upTo %d, want %d", upTo, 2*1003)
	}
	if len(items) > 8 {
		t.Errorf("%d items: deltas were not merged", len(items))
	}
	for _, h := range []agent.Header{a, c} {
		var seq []string
		text := 0
		for _, it := range items {
			e := it.(agent.Event)
			if e.Head().Agent != h.Agent {
				continue
			}
			seq = append(seq, e.Type())
			if d, ok := e.(agent.TextDelta); ok && d.Text != "after" {
				text += len(d.Text)
			}
		}
		want := []string{"text_delta", "tool_finished", "text_delta", "done"}
		if len(seq) != len(want) {
			t.Fatalf("%s: %v", h.Agent, seq)
		}
		for i := range want {
			if seq[i] != want[i] {
				t.Fatalf("%s: %v", h.Agent, seq)
			}
		}
		if text != 1000 {
			t.Errorf("%s: %d characters of 1000 arrived", h.Agent, text)
		}
	}
}

// The waiting Cmd holds a batch of deltas for a frame but delivers a
// terminal event at once.
func TestBridgeWaitDelaysOnlyDeltas(t *testing.T) {
	b := newBridge()
	defer b.close()
	b.delay = 200 * time.Millisecond
	b.Emit(agent.Done{Header: hdr("default")})
	start := time.Now()
	msg := b.wait()().(eventsMsg)
	if time.Since(start) > 100*time.Millisecond || len(msg.items) != 1 {
		t.Errorf("terminal event held %v (%d items)", time.Since(start), len(msg.items))
	}
	b.Emit(agent.TextDelta{Header: hdr("default"), Text: "a"})
	start = time.Now()
	msg = b.wait()().(eventsMsg)
	if time.Since(start) < 150*time.Millisecond || len(msg.items) != 1 {
		t.Errorf("delta delivered after %v", time.Since(start))
	}
	b.close()
	if msg := b.wait()(); msg != nil {
		t.Errorf("wait after close: %v", msg)
	}
}

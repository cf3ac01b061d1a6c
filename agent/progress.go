package agent

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ToolOutput is output a running tool produced since the last one
// (run_command's stdout and stderr as they come), sent at most every
// outputEvery; the tool's ToolFinished follows the last of them.
type ToolOutput struct {
	Header
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
	Text    string `json:"text"`
	Skipped int    `json:"skipped,omitempty"` // bytes left out before Text (a burst over outputMax)
}

func (ToolOutput) Type() string { return "tool_output" }

const (
	outputEvery = 100 * time.Millisecond // live output is sent at most this often
	outputMax   = 16 << 10               // and keeps at most the last 16 KiB of a burst
)

// outputStream turns a tool's writes into throttled ToolOutput events.
// Writes come from the process's copying goroutine, flushes from a timer;
// close flushes what is left and stops everything, before ToolFinished.
type outputStream struct {
	mu      sync.Mutex
	send    func(text string, skipped int)
	buf     []byte
	skipped int
	timer   *time.Timer
	closed  bool
}

func newOutputStream(send func(text string, skipped int)) *outputStream {
	return &outputStream{send: send}
}

func (o *outputStream) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return len(p), nil
	}
	o.buf = append(o.buf, p...)
	if over := len(o.buf) - outputMax; over > 0 {
		o.skipped += over
		o.buf = append(o.buf[:0], o.buf[over:]...)
	}
	if o.timer == nil {
		o.timer = time.AfterFunc(outputEvery, o.flush)
	}
	return len(p), nil
}

func (o *outputStream) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushLocked()
}

// flushLocked sends what is buffered, keeping an incomplete UTF-8
// sequence at the end for the next write.
func (o *outputStream) flushLocked() {
	o.timer = nil
	if o.closed || len(o.buf) == 0 {
		return
	}
	n := len(o.buf)
	for i := 1; i < utf8.UTFMax && i <= n; i++ {
		if utf8.RuneStart(o.buf[n-i]) {
			if !utf8.FullRune(o.buf[n-i:]) {
				n -= i
			}
			break
		}
	}
	text := strings.ToValidUTF8(string(o.buf[:n]), "\uFFFD")
	o.buf = append(o.buf[:0], o.buf[n:]...)
	skipped := o.skipped
	o.skipped = 0
	if text != "" || skipped > 0 {
		o.send(text, skipped)
	}
}

// close sends the rest; later writes (a process that outlived its call)
// are dropped.
func (o *outputStream) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.timer != nil {
		o.timer.Stop()
	}
	if len(o.buf) > 0 {
		o.buf = []byte(strings.ToValidUTF8(string(o.buf), "\uFFFD"))
	}
	o.flushLocked()
	o.closed = true
}

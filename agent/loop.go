package agent

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"polly/memory/chat"
	"polly/memory/window"
)

// loopState is the loop detector: there is no turn cap by default, so a
// model stuck on a call must be noticed. It keeps the last LoopWindow
// finished calls (tool, arguments and result, hashed): a call made with
// the same arguments and the same result LoopNote times within that
// window gets a harness note with its result — whether the repeats came in
// a row or in a cycle (read a, read b, read a, read b…) — and LoopStop
// times stops the run with the reason. A changing result is not a repeat.
type loopState struct {
	recent  []loopCall // oldest first, at most LoopWindow
	stopped string     // why the run must stop; "" to go on
}

type loopCall struct {
	sig  [32]byte
	what string // "read_file path=a.txt", for the reason
}

// observe counts one finished call and returns the note to append to its
// result ("" : none).
func (l *loopState) observe(call chat.ToolCall, output string, s window.Settings) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", call.Name, call.Arguments, output)
	var c loopCall
	copy(c.sig[:], h.Sum(nil))
	c.what = call.Name
	if b := call.Brief(); b != "" {
		c.what += " " + b
	}
	l.recent = append(l.recent, c)
	if n := len(l.recent) - s.LoopWindow; n > 0 {
		l.recent = append(l.recent[:0], l.recent[n:]...)
	}
	count, inARow := 0, 0
	for i := len(l.recent) - 1; i >= 0; i-- {
		if l.recent[i].sig == c.sig {
			count++
			if inARow == len(l.recent)-1-i {
				inARow++
			}
		}
	}
	switch {
	case count >= s.LoopStop:
		l.stopped = l.reason(c, count, inARow)
		return fmt.Sprintf("\n[harness: %d identical calls with the same result — the run is stopped here]", count)
	case count >= s.LoopNote:
		var b strings.Builder
		if err := repeatedCall().Execute(&b, struct {
			Count, Stop, Window int
			InARow              bool
		}{count, s.LoopStop, len(l.recent), inARow == count}); err != nil {
			panic(fmt.Sprintf("prompts/repeated_call.md: %v", err)) // the fields are fixed: a broken template file
		}
		return "\n" + promptText(b.String())
	}
	return ""
}

// reason says why the run stopped: the repeated call, how often, and the
// others it cycled with.
func (l *loopState) reason(c loopCall, count, inARow int) string {
	if inARow == count {
		return fmt.Sprintf("%s was called %d times in a row with the same arguments and got the same result each time", c.what, count)
	}
	var others []string
	seen := map[string]bool{c.what: true}
	for _, r := range l.recent {
		if !seen[r.what] {
			seen[r.what] = true
			others = append(others, r.what)
		}
	}
	cycle := ""
	if len(others) > 0 && len(others) <= 3 {
		cycle = " in a cycle with " + strings.Join(others, ", ")
	}
	return fmt.Sprintf("%s was called %d times in the last %d calls%s, with the same arguments and the same result each time", c.what, count, len(l.recent), cycle)
}

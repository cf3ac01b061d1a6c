package agent

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"polly/memory/chat"
	"polly/memory/window"
)

// loopState is the loop detector: there is no turn cap by default, so a
// model stuck on one call must be noticed. The same tool with the same
// arguments and the same result several times in a row gets a harness note
// with its result; a long streak stops the run with the reason.
type loopState struct {
	sig     [32]byte
	streak  int
	stopped string // why the run must stop; "" to go on
}

// observe counts one finished call and returns the note to append to its
// result ("" : none).
func (l *loopState) observe(call chat.ToolCall, output string, s window.Settings) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", call.Name, call.Arguments, output)
	var sig [32]byte
	copy(sig[:], h.Sum(nil))
	if sig == l.sig {
		l.streak++
	} else {
		l.sig, l.streak = sig, 1
	}
	what := call.Name
	if b := call.Brief(); b != "" {
		what += " " + b
	}
	switch {
	case l.streak >= s.LoopStop:
		l.stopped = fmt.Sprintf("%s was called %d times in a row with the same arguments and got the same result each time", what, l.streak)
		return fmt.Sprintf("\n[harness: %d identical calls in a row — the run is stopped here]", l.streak)
	case l.streak >= s.LoopNote:
		var b strings.Builder
		if err := repeatedCall().Execute(&b, struct{ Streak, Stop int }{l.streak, s.LoopStop}); err != nil {
			panic(fmt.Sprintf("prompts/repeated_call.md: %v", err)) // the fields are fixed: a broken template file
		}
		return "\n" + promptText(b.String())
	}
	return ""
}

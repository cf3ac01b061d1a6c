package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"polly/agent"
)

// Output formats of a headless run.
const (
	FormatText       = "text"
	FormatJSON       = "json"
	FormatStreamJSON = "stream-json"
)

// printer renders agent events for a headless run: progress on stderr,
// the answer (or JSON) on stdout. It is called from the agent's goroutines,
// so it serialises writes.
type printer struct {
	format string
	stdout io.Writer
	stderr io.Writer
	mu     sync.Mutex
	err    error // first write error on stdout (a closed pipe)
}

func newPrinter(format string, stdout, stderr io.Writer) *printer {
	return &printer{format: format, stdout: stdout, stderr: stderr}
}

// Event handles one agent event.
func (p *printer) Event(e agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.format == FormatStreamJSON {
		b, err := agent.MarshalEvent(e)
		if err == nil {
			p.write(p.stdout, string(b)+"\n")
		}
		return
	}
	if p.format == FormatJSON {
		// Only errors and notices go to stderr; the result is printed at the end.
		switch e := e.(type) {
		case agent.Notice:
			fmt.Fprintf(p.stderr, "polly: %s\n", e.Text)
		case agent.Retrying:
			fmt.Fprintf(p.stderr, "polly: %s; retrying in %s\n", e.Reason, e.Wait.Round(100*time.Millisecond))
		}
		return
	}
	p.progress(e)
}

// progress writes the human-readable trace of a text-mode run to stderr.
func (p *printer) progress(e agent.Event) {
	who := ""
	if h := e.Head(); h.Parent != "" {
		who = "[" + h.Agent + "] "
	}
	switch e := e.(type) {
	case agent.MessageDone:
		if len(e.Message.ToolCalls) > 0 && strings.TrimSpace(e.Message.Content) != "" {
			fmt.Fprintf(p.stderr, "%s%s\n", who, strings.TrimSpace(e.Message.Content))
		}
	case agent.ToolFinished:
		mark := "✓"
		if e.IsError {
			mark = "✗"
		}
		extra := ""
		if e.Offloaded {
			extra = fmt.Sprintf(", offloaded as #%d", e.ExecID)
		}
		fmt.Fprintf(p.stderr, "%s%s %s %s (%s, %s chars%s)\n", who, mark, e.Tool, e.Brief, duration(e.Duration), commas(e.OutputChars), extra)
		switch {
		case e.Status == "denied":
			// The whole refusal: it ends with how to allow the call.
			fmt.Fprintf(p.stderr, "%s  %s\n", who, strings.TrimSpace(e.Preview))
		case e.IsError:
			fmt.Fprintf(p.stderr, "%s  %s\n", who, firstLine(e.Preview))
		}
	case agent.Retrying:
		fmt.Fprintf(p.stderr, "%s… %s; retrying in %s (attempt %d)\n", who, e.Reason, e.Wait.Round(100*time.Millisecond), e.Attempt+1)
	case agent.Notice:
		fmt.Fprintf(p.stderr, "%spolly: %s\n", who, e.Text)
	case agent.HookRan:
		// Warnings and timeouts come as notices too; say only what decided something.
		if e.Outcome != "warning" && e.Outcome != "timeout" {
			target := ""
			if e.Target != "" {
				target = " " + e.Target
			}
			what := "`" + firstLine(e.Command) + "`"
			if e.Status != "" { // the entry's statusMessage
				what = e.Status
			}
			fmt.Fprintf(p.stderr, "%s↪ hook %s%s: %s %s (%s)\n", who, e.Event, target, e.Outcome, what, duration(e.Duration))
		}
	case agent.AnchorInjected:
		fmt.Fprintf(p.stderr, "%s⚓ task anchor #%d after %s\n", who, e.Number, plural(e.ToolCalls, "tool call"))
	case agent.SummaryFinished:
		if e.Accepted {
			fmt.Fprintf(p.stderr, "%s⇣ context summarized: %s → %s tokens (%s replaced, %d kept)\n", who, commas(e.TokensBefore), commas(e.TokensAfter), plural(e.Replaced, "message"), e.Kept)
		}
	case agent.ErrorEvent:
		fmt.Fprintf(p.stderr, "%serror: %s\n", who, e.Message)
		if e.Hint != "" {
			fmt.Fprintf(p.stderr, "%s  %s\n", who, e.Hint)
		}
	}
}

func (p *printer) write(w io.Writer, s string) {
	if p.err != nil {
		return
	}
	if _, err := io.WriteString(w, s); err != nil && w == p.stdout {
		p.err = err
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// duration is short and never "0s" for a call that did run.
func duration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// plural is "1 tool call", "2 tool calls".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// commas formats 48210 as "48,210".
func commas(n int) string { return humanize.Comma(int64(n)) }

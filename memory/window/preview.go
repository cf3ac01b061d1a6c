package window

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"

	"polly/memory/chat"
)

// Preview is what the context keeps of an offloaded output: one line that
// says plainly it is a part (id, sizes, how to read more), a short head and
// a longer tail — errors and summaries land at the end of outputs.
func Preview(output string, execID int64, head, tail int) string {
	chars := len([]rune(output))
	lines := chat.CountLines(output)
	h := headLines(output, head)
	t := tailLines(output[len(h):], tail)
	hl, tl := chat.CountLines(h), chat.CountLines(t)
	omitted := output[len(h) : len(output)-len(t)]

	var b strings.Builder
	fmt.Fprintf(&b, "[output #%d: %s chars, %s lines; you see only lines 1-%d and %s-%s — read_tool_output(id=%d, offset, limit) or grep_tool_output(id=%d, pattern) for the rest]\n",
		execID, commas(chars), commas(lines), hl, commas(lines-tl+1), commas(lines), execID, execID)
	b.WriteString(h)
	if !strings.HasSuffix(h, "\n") {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "[… %s chars, %s lines omitted …]\n", commas(len([]rune(omitted))), commas(chat.CountLines(omitted)))
	b.WriteString(t)
	return b.String()
}

// Stub is the one line a stale output shrinks to.
func Stub(m chat.Message, call chat.ToolCall) string {
	what := m.ToolName
	if b := call.Brief(); b != "" {
		what += " (" + b + ")"
	}
	status := ""
	if m.Output.Failed {
		status = " failed;"
	}
	return fmt.Sprintf("[output #%d of %s:%s %s chars, %s lines — older output hidden to save context; read_tool_output(id=%d) shows it again]",
		m.Output.ExecID, what, status, commas(m.Output.Chars), commas(m.Output.Lines), m.Output.ExecID)
}

// headLines returns whole lines from the start of s, at most n bytes (at
// least one line, cut if that line alone is longer).
func headLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], '\n')
	if cut <= 0 {
		return clipRunes(s, n)
	}
	return s[:cut+1]
}

// tailLines returns whole lines from the end of s, at most n bytes.
func tailLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	start := len(s) - n
	if i := strings.IndexByte(s[start:], '\n'); i >= 0 && start+i+1 < len(s) {
		return s[start+i+1:]
	}
	for start < len(s) && s[start]&0xC0 == 0x80 {
		start++
	}
	return s[start:]
}

func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// commas formats 48210 as "48,210".
func commas(n int) string { return humanize.Comma(int64(n)) }

// MaxPreviewShare is the largest preview, note included, an offloaded
// output gets, as a share of the output: a preview must clearly save
// context, never replace an output with something about as large.
const MaxPreviewShare = 0.6

// OutputContent decides what the context gets for a tool output of chars
// characters: the output itself up to the tool's offload limit; past it a
// preview with its note, its head and tail shortened for an output just
// above the limit so the preview stays within MaxPreviewShare of it (a
// 2,100-character output gets a ~1,260-character preview, not the whole
// output). execID 0 means there is nowhere to offload to; the preview then
// says the output was cut and offloaded is false.
func OutputContent(output string, chars int, execID int64, tool string, s Settings) (content string, offloaded bool) {
	s = s.WithDefaults()
	if chars <= s.OffloadLimit(tool) {
		return output, false
	}
	head, tail := s.PreviewHead, s.PreviewTail
	limit := int(MaxPreviewShare * float64(chars))
	p := Preview(output, execID, head, tail)
	if n := len([]rune(p)); n > limit {
		// The note and markers cost the same whatever is shown: what is
		// left of the limit goes to head and tail in their proportion.
		note := len([]rune(Preview(output, execID, 0, 0)))
		room := max(0, limit-note)
		head, tail = room*head/(head+tail), room*tail/(head+tail)
		p = Preview(output, execID, head, tail)
	}
	return p, execID != 0
}

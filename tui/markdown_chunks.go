package tui

import (
	"strings"
	"unicode/utf8"
)

// A reply is rendered in chunks, each a glamour document of its own: a
// chunk ends where what follows cannot change how it is drawn, so a
// streaming reply renders every chunk once, as it settles, and only the
// open chunk at its end again per frame. A finished reply is cut at the
// same places, so it looks exactly as its last streamed frame did and
// reuses what streaming rendered.

// Chunk sizes: a code block longer than codeChunk is also cut at its
// blank lines (a file written out in one block would otherwise be
// re-highlighted whole every frame), and any run of text longer than
// bigChunk at its line starts (a long list or paragraph).
const (
	codeChunk = 2 << 10
	bigChunk  = 8 << 10
)

// mdCursor is where a chunk starts: a byte offset, and the opening line
// of the code fence open there ("" outside one), which the chunk's
// source gets again in front so that it is still code.
type mdCursor struct {
	pos   int
	fence string
}

// chunkSource is the Markdown of the chunk from c to end.
func chunkSource(s string, c mdCursor, end int) string {
	if c.fence == "" {
		return s[c.pos:end]
	}
	return c.fence + "\n" + s[c.pos:end]
}

// nextChunk finds where the chunk starting at c ends, if that is already
// decided by s: after a blank line that is followed by a line starting at
// the margin (a new block: an indented line may continue a list item);
// inside a long code block, after a blank line (after any line in a very
// long one) unless the fence may close there; in a long run of text,
// before a line that starts at the margin and cannot turn the line above
// into a heading or a table. It looks at the first byte of the next line
// (all of it for a "-" line) and never past it, so a cut found while
// streaming is still one in the finished text.
func nextChunk(s string, c mdCursor) (mdCursor, bool) {
	fence := c.fence
	for pos := c.pos; ; {
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			return c, false // the last line is still being written
		}
		line := s[pos : pos+nl]
		next := pos + nl + 1
		if next >= len(s) {
			return c, false // what follows is not known yet
		}
		t := strings.TrimSpace(line)
		blank := t == ""
		switch {
		case fence == "" && isFence(t):
			fence = strings.TrimRight(line, " \r")
		case fence != "" && closesFence(t, fence):
			fence = ""
		}
		size := next - c.pos
		b := s[next]
		switch {
		case fence == "" && blank && b != ' ' && b != '\t' && b != '\n' && b != '\r':
			return mdCursor{pos: next}, true
		case fence != "" && (blank && size >= codeChunk || size >= bigChunk) && b != '\n' && b != '\r' && !startsFence(s[next:]):
			return mdCursor{pos: next, fence: fence}, true
		case fence == "" && !blank && size >= bigChunk && canCutBefore(line, s[next:]):
			return mdCursor{pos: next}, true
		}
		pos = next
	}
}

// canCutBefore: a long run of text may be cut between line and the one
// starting rest, when rest starts at the margin, neither is a table row,
// and rest is no heading underline or rule ("===", "---").
func canCutBefore(line, rest string) bool {
	b := rest[0]
	if b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '|' || b == '=' || strings.HasPrefix(strings.TrimSpace(line), "|") {
		return false
	}
	if b == '-' || b == '*' || b == '_' {
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			return false // the whole line decides
		}
		if strings.Trim(rest[:nl], string(b)+" \t\r") == "" {
			return false
		}
	}
	return true
}

// isFence: a line (trimmed) that opens a fenced code block.
func isFence(t string) bool { return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") }

// closesFence: a line (trimmed) that closes the block opened by fence.
func closesFence(t, fence string) bool {
	open := strings.TrimLeft(fence, " ")
	mark := open[:1]
	n := len(open) - len(strings.TrimLeft(open, mark))
	return strings.HasPrefix(t, strings.Repeat(mark, n)) && strings.Trim(t, mark) == ""
}

// startsFence: s starts with a (possibly closing) fence line, or may.
func startsFence(s string) bool {
	t := strings.TrimLeft(s, " ")
	return t == "" || t[0] == '`' || t[0] == '~'
}

// Plain text (a reply too long to lay out as Markdown) is cut after a
// line once plainChunk bytes have gathered, or inside a line that has no
// end in sight.
const plainChunk = 16 << 10

func nextPlainChunk(s string, from int) (int, bool) {
	if len(s)-from < plainChunk {
		return 0, false
	}
	if nl := strings.IndexByte(s[from+plainChunk:min(len(s), from+4*plainChunk)], '\n'); nl >= 0 {
		return from + plainChunk + nl + 1, true
	}
	if len(s)-from < 4*plainChunk {
		return 0, false
	}
	end := from + 4*plainChunk
	for i := 0; i < utf8.UTFMax && !utf8.RuneStart(s[end]); i++ {
		end--
	}
	return end, true
}

// Package termsafe keeps what model, command and tool text can do to a
// terminal down to printing and colour: an answer or an output preview can
// carry escape sequences (OSC 52 sets the clipboard, OSC 8 makes a link
// whose text lies, DCS and APC reach the terminal itself or a multiplexer
// around it, CSI moves the cursor and rewrites what is on screen). Text
// passed through here keeps printable characters, newlines, tabs and SGR
// (colour and style) sequences; everything else is dropped.
package termsafe

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Text returns s with every escape sequence but SGR and every control
// character but newline and tab removed.
func Text(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	var state byte
	for len(s) > 0 {
		seq, width, n, next := ansi.DecodeSequence(s, state, nil)
		if n <= 0 {
			break
		}
		switch {
		case seq == "\n" || seq == "\t" || sgr(seq):
			b.WriteString(seq)
		case width > 0 && utf8.ValidString(seq) && !strings.ContainsFunc(seq, control):
			b.WriteString(seq)
		}
		s, state = s[n:], next
	}
	return b.String()
}

// safe is the fast path: only printable text, newlines, tabs and SGR.
func safe(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
				j++
			}
			if i+1 >= len(s) || s[i+1] != '[' || j >= len(s) || s[j] != 'm' {
				return false
			}
			i = j + 1
		case c < 0x20 && c != '\n' && c != '\t' || c == 0x7f:
			return false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError || control(r) {
				return false
			}
			i += size
		}
	}
	return true
}

// sgr: CSI parameters m, nothing else.
func sgr(seq string) bool {
	return len(seq) >= 3 && seq[0] == 0x1b && seq[1] == '[' && seq[len(seq)-1] == 'm' &&
		strings.Trim(seq[2:len(seq)-1], "0123456789;:") == ""
}

// control: C0 and C1 controls (C1 ones, U+0080–U+009F, start sequences on
// terminals that read them) other than newline and tab.
func control(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0
}

// Writer filters everything written to w through Text. Each write is
// filtered whole: a sequence split across two writes loses its start, and
// what follows prints as plain text.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (f writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(f.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

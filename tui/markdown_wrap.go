package tui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// span is a run of text drawn with one SGR sequence ("" = plain). Text
// never holds escape codes: the renderer adds them when a line is joined.
type span struct {
	text, sgr string
}

const sgrReset = "\x1b[m"

// textWidth is the display width of s (no escape codes), fast for ASCII.
func textWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// joinSpans draws spans as one terminal line; neighbours with the same
// SGR share one sequence, and every styled run is closed so no style
// bleeds into the padding after the line.
func joinSpans(ss []span) string {
	if len(ss) == 1 && ss[0].sgr == "" {
		return ss[0].text
	}
	var b strings.Builder
	for i := 0; i < len(ss); {
		j := i + 1
		for j < len(ss) && ss[j].sgr == ss[i].sgr {
			j++
		}
		if ss[i].sgr != "" {
			b.WriteString(ss[i].sgr)
		}
		for _, s := range ss[i:j] {
			b.WriteString(s.text)
		}
		if ss[i].sgr != "" {
			b.WriteString(sgrReset)
		}
		i = j
	}
	return b.String()
}

// wrapSpans word-wraps styled text to w columns. A word may cross spans
// ("**bold**," is one word) and is only broken inside when it is wider
// than a line. "\n" in a span is a hard line break. Spaces at a break are
// dropped; spaces inside a line keep their style (inline code's
// background runs through "go test").
func wrapSpans(ss []span, w int) [][]span {
	w = max(w, 1)
	var (
		lines [][]span
		line  []span
		lineW int
		word  []span
		wordW int
		gap   []span // the spaces before word
		gapW  int
	)
	emit := func() {
		lines = append(lines, line)
		line, lineW = nil, 0
	}
	placeWord := func() {
		if len(word) == 0 {
			gap, gapW = gap[:0], 0
			return
		}
		if lineW > 0 && lineW+gapW+wordW > w {
			emit()
		}
		if lineW > 0 {
			line = append(line, gap...)
			lineW += gapW
		}
		if wordW <= w-lineW {
			line = append(line, word...)
			lineW += wordW
		} else {
			for _, s := range word { // wider than a line: cut it
				for s.text != "" {
					if lineW == w {
						emit()
					}
					head, hw := cutWidth(s.text, w-lineW)
					if hw == 0 && lineW > 0 {
						emit()
						continue
					}
					if head == "" { // one rune wider than the line
						_, n := utf8.DecodeRuneInString(s.text)
						head, hw = s.text[:n], w-lineW
					}
					line = append(line, span{head, s.sgr})
					lineW += hw
					s.text = s.text[len(head):]
				}
			}
		}
		word, wordW, gap, gapW = word[:0], 0, gap[:0], 0
	}
	for _, s := range ss {
		t := s.text
		for t != "" {
			switch c := t[0]; {
			case c == '\n':
				placeWord()
				emit()
				t = t[1:]
			case c == ' ':
				if len(word) > 0 {
					placeWord()
				}
				n := len(t) - len(strings.TrimLeft(t, " "))
				gap = append(gap, span{t[:n], s.sgr})
				gapW += n
				t = t[n:]
			default:
				n := strings.IndexAny(t, " \n")
				if n < 0 {
					n = len(t)
				}
				word = append(word, span{t[:n], s.sgr})
				wordW += textWidth(t[:n])
				t = t[n:]
			}
		}
	}
	placeWord()
	if len(line) > 0 || len(lines) == 0 {
		emit()
	}
	return lines
}

// cutWidth returns the longest prefix of s at most w columns wide and its
// width.
func cutWidth(s string, w int) (string, int) {
	if w <= 0 {
		return "", 0
	}
	ascii := true
	for i := 0; i < len(s) && i <= w; i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		if len(s) <= w {
			return s, len(s)
		}
		return s[:w], w
	}
	head := ansi.Truncate(s, w, "")
	return head, textWidth(head)
}

// hardWrapSpans cuts styled text (a line of code) into lines of at most
// w columns without looking for word boundaries.
func hardWrapSpans(ss []span, w int) [][]span {
	w = max(w, 1)
	var lines [][]span
	var line []span
	lineW := 0
	for _, s := range ss {
		for s.text != "" {
			head, hw := cutWidth(s.text, w-lineW)
			if head == "" {
				if lineW == 0 { // one rune wider than the line
					_, n := utf8.DecodeRuneInString(s.text)
					head, hw = s.text[:n], w
				} else {
					lines = append(lines, line)
					line, lineW = nil, 0
					continue
				}
			}
			line = append(line, span{head, s.sgr})
			lineW += hw
			s.text = s.text[len(head):]
		}
	}
	return append(lines, line)
}

package tokens

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizers cut text into the pieces BPE merges within, exactly
// as tiktoken-go/tokenizer's split expressions do (it runs them with
// regexp2, which turns the text into runes and allocates per match): the
// same alternatives tried in the same order, with the same backtracking,
// over the same Unicode classes (Go's unicode tables; \s is
// unicode.IsSpace). TestCountMatchesLibrary and FuzzCountMatchesLibrary
// hold them to it.
//
// o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// cl100k_base:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Both take valid UTF-8 (see validUTF8) and return where the piece that
// starts at i ends, or i where no alternative matches (only DEL; the
// library skips it).

// Character classes, as bits.
const (
	cLetter    = 1 << iota // \p{L}
	cNumber                // \p{N}
	cSpace                 // \s
	cUpper                 // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower                 // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cNewline               // [\r\n]
	cUnmatched             // DEL (see asciiClass)
)

// notWordPrefix is [^\r\n\p{L}\p{N}]; punct is [^\s\p{L}\p{N}].
const (
	notWordPrefix = cNewline | cLetter | cNumber | cUnmatched
	notPunct      = cSpace | cLetter | cNumber | cUnmatched
)

// asciiClass is classOf for ASCII, with one quirk of the library's
// generated matcher kept: its ASCII bitmaps for [^\r\n\p{L}\p{N}] and
// [^\s\p{L}\p{N}] leave out DEL (0x7F), so DEL matches no alternative:
// it is skipped, no token, and ends the run of punctuation before it.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range t {
		t[r] = classOf(rune(r))
	}
	t[0x7f] |= cUnmatched
	return t
}()

// classOf classifies a character with as few table lookups as it can:
// the general categories are disjoint, so a letter is exactly one of
// Ll, Lu, Lt, Lm, Lo, and a mark, a number or a space is no letter.
// TestClassOfEveryRune checks it against the classes' definitions.
func classOf(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		switch {
		case unicode.IsLower(r):
			return cLetter | cLower
		case unicode.IsUpper(r), unicode.IsTitle(r):
			return cLetter | cUpper
		default: // Lm, Lo
			return cLetter | cUpper | cLower
		}
	case unicode.IsMark(r):
		return cUpper | cLower
	case unicode.IsNumber(r):
		return cNumber
	case r == '\r' || r == '\n':
		return cSpace | cNewline
	case unicode.IsSpace(r):
		return cSpace
	}
	return 0
}

// at is the class and size of the character at i (0, 0 past the end).
func at(s string, i int) (class uint8, size int) {
	if i >= len(s) {
		return 0, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return classOf(r), n
}

// run is where the run of characters with any of the bits in want that
// starts at i ends.
func run(s string, i int, want uint8) int {
	for {
		c, n := at(s, i)
		if n == 0 || c&want == 0 {
			return i
		}
		i += n
	}
}

// runNot is where the run of characters with none of the bits in avoid
// that starts at i ends.
func runNot(s string, i int, avoid uint8) int {
	for {
		c, n := at(s, i)
		if n == 0 || c&avoid != 0 {
			return i
		}
		i += n
	}
}

func splitO200k(s string, i int) int {
	c, n := at(s, i)
	// The two word alternatives, each first with the optional prefix
	// character and then without it (a mark is both a prefix and a letter).
	prefixed := c&notWordPrefix == 0
	if prefixed {
		if e := lowerWord(s, i+n); e > 0 {
			return e
		}
	}
	if e := lowerWord(s, i); e > 0 {
		return e
	}
	if prefixed {
		if e := upperWord(s, i+n); e > 0 {
			return e
		}
	}
	if e := upperWord(s, i); e > 0 {
		return e
	}
	if c&cNumber != 0 {
		return digits(s, i)
	}
	if e := punctuation(s, i, cNewline, '/'); e > 0 {
		return e
	}
	return spaces(s, i)
}

func splitCl100k(s string, i int) int {
	if e := contraction(s, i); e > i {
		return e
	}
	c, n := at(s, i)
	if c&notWordPrefix == 0 {
		if d, _ := at(s, i+n); d&cLetter != 0 {
			return run(s, i+n, cLetter)
		}
	}
	if c&cLetter != 0 {
		return run(s, i, cLetter)
	}
	if c&cNumber != 0 {
		return digits(s, i)
	}
	if e := punctuation(s, i, cNewline, -1); e > 0 {
		return e
	}
	return spaces(s, i)
}

// lowerWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// and an optional contraction at i, or returns -1. The first loop is
// greedy and gives characters back until the second can match one: if
// the character after the whole upper run is lower, the second loop runs
// on from it; otherwise it takes the last character of the upper run
// that is also lower (Lm, Lo, M), and only that one.
func lowerWord(s string, i int) int {
	lastLower := -1
	for {
		c, n := at(s, i)
		if n == 0 || c&cUpper == 0 {
			if c&cLower != 0 {
				return contraction(s, run(s, i, cLower))
			}
			if lastLower < 0 {
				return -1
			}
			return contraction(s, lastLower)
		}
		i += n
		if c&cLower != 0 {
			lastLower = i
		}
	}
}

// upperWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// and an optional contraction at i, or returns -1.
func upperWord(s string, i int) int {
	e := run(s, i, cUpper)
	if e == i {
		return -1
	}
	return contraction(s, run(s, e, cLower))
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i and returns its
// end, or i. Case folding adds ſ (U+017F) to s; no other non-ASCII letter
// folds to one of these.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	next := func(j int, want byte) bool { return j < len(s) && s[j]|0x20 == want }
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if next(i+2, 'e') {
			return i + 3
		}
	case 'l':
		if next(i+2, 'l') {
			return i + 3
		}
	}
	if len(s) >= i+3 && s[i+1:i+3] == "ſ" {
		return i + 3
	}
	return i
}

// digits matches \p{N}{1,3} at i (a number character is there).
func digits(s string, i int) int {
	for k := 0; k < 3; k++ {
		c, n := at(s, i)
		if n == 0 || c&cNumber == 0 {
			break
		}
		i += n
	}
	return i
}

// punctuation matches ' ?[^\s\p{L}\p{N}]+' and then any run of trail
// characters (the classes in trailClass, and the byte trailByte if ≥ 0)
// at i, or returns -1.
func punctuation(s string, i int, trailClass uint8, trailByte int) int {
	j := i
	if s[i] == ' ' {
		j++
	}
	c, _ := at(s, j)
	if j >= len(s) || c&notPunct != 0 {
		return -1
	}
	j = runNot(s, j, notPunct)
	for j < len(s) {
		c, n := at(s, j)
		if c&trailClass == 0 && int(s[j]) != trailByte {
			break
		}
		j += n
	}
	return j
}

// spaces matches \s*[\r\n]+ | \s+(?!\S) | \s+ at i (a space is there).
// The library's generated matcher backtracks \s* to the first newline of
// the run of spaces, not the last (so " \n \n" is two pieces, " \n" and
// " \n", where tiktoken has one): the piece ends after the newlines that
// follow it. Without a newline: the whole run if the text ends there, or
// all of it but its last space (which then leads the next piece); a lone
// space before a non-space is a piece of its own.
func spaces(s string, i int) int {
	lastStart, count := i, 0
	j := i
	for {
		c, n := at(s, j)
		if n == 0 || c&cSpace == 0 {
			break
		}
		if c&cNewline != 0 {
			for j < len(s) && (s[j] == '\n' || s[j] == '\r') {
				j++
			}
			return j
		}
		lastStart, count = j, count+1
		j += n
	}
	switch {
	case count == 0:
		return i // not a space: no alternative matches here
	case j == len(s) || count == 1:
		return j
	default:
		return lastStart
	}
}

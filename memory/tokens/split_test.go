package tokens

import (
	"testing"
	"unicode"
)

// classOf agrees with the classes as the split expressions define them,
// for every code point.
func TestClassOfEveryRune(t *testing.T) {
	in := func(r rune, tables ...*unicode.RangeTable) bool { return unicode.In(r, tables...) }
	for r := rune(0); r <= unicode.MaxRune; r++ {
		var want uint8
		if in(r, unicode.L) {
			want |= cLetter
		}
		if in(r, unicode.N) {
			want |= cNumber
		}
		if unicode.IsSpace(r) {
			want |= cSpace
		}
		if in(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
			want |= cUpper
		}
		if in(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
			want |= cLower
		}
		if r == '\r' || r == '\n' {
			want |= cNewline
		}
		if got := classOf(r); got != want {
			t.Fatalf("classOf(%U) = %06b, want %06b", r, got, want)
		}
	}
}

package vocab

import (
	"strings"
	"testing"
)

func TestBuildOpenRank(t *testing.T) {
	toks := []string{"a", "b", "ab", "", "abc", "hello", " world", "\x00", "日本"}
	file, err := Build(toks)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Open(string(file))
	if err != nil {
		t.Fatal(err)
	}
	if v.Len() != len(toks) {
		t.Fatalf("Len %d, want %d", v.Len(), len(toks))
	}
	for r, tok := range toks {
		if got := v.Token(r); got != tok {
			t.Errorf("Token(%d) = %q, want %q", r, got, tok)
		}
		if tok == "" {
			continue // a gap is not a token
		}
		if got, ok := v.Rank(tok); !ok || got != r {
			t.Errorf("Rank(%q) = %d, %v; want %d", tok, got, ok, r)
		}
	}
	for _, s := range []string{"", "c", "ba", "abcd", "hello ", "日", "\x00\x00"} {
		if r, ok := v.Rank(s); ok {
			t.Errorf("Rank(%q) = %d: not a token", s, r)
		}
	}
}

func TestBuildRejectsDuplicates(t *testing.T) {
	if _, err := Build([]string{"a", "b", "a"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("err = %v", err)
	}
}

// A damaged file is an error, never a panic or a wrong answer.
func TestOpenRejectsDamage(t *testing.T) {
	file, err := Build([]string{"a", "b", "ab"})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"empty":     "",
		"header":    string(file[:6]),
		"truncated": string(file[:len(file)-1]),
		"longer":    string(file) + "x",
		"zero":      "\x00\x00\x00\x00\x02\x00\x00\x00",
		"bits":      string(file[:4]) + "\x40\x00\x00\x00" + string(file[8:]),
	}
	for name, f := range bad {
		if _, err := Open(f); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
}

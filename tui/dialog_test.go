package tui

import "testing"

// The permission dialog reads the policy's reason as a sentence, without
// raw backticks, whatever form the reason takes.
func TestReasonSentence(t *testing.T) {
	for in, want := range map[string]string{
		"writes hello.go, which needs approval in mode ask":                       "It writes hello.go, which needs approval in mode ask.",
		"`go run hello.go`: go run is not read-only; approved, it runs sandboxed": "“go run hello.go” — go run is not read-only; approved, it runs sandboxed.",
		"`x` only": "“x” only.",
	} {
		if got := unquote(reasonSentence(in)); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

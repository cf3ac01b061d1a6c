package mcp

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k", "EMPTY": "", "HOME": "/home/u"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tt := range []struct{ in, want, err string }{
		{"Bearer ${TOKEN}", "Bearer t0k", ""},
		{"${HOME}/bin/server", "/home/u/bin/server", ""},
		{"${PORT:-8080}", "8080", ""},
		{"${EMPTY:-fallback}", "fallback", ""}, // like the shell's :- : empty takes the default
		{"${EMPTY}", "", ""},                   // set but empty, no default: empty
		{"${TOKEN:-x}-${PORT:-1}", "t0k-1", ""},
		{"price $5 and ^a.*$", "price $5 and ^a.*$", ""}, // no ${: untouched
		{"${MISSING}", "", "${MISSING} is not set"},
		{"${TOKEN", "", "without a closing }"},
		{"${1BAD}", "", "not a variable name"},
	} {
		got, err := Expand(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Expand(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

package mcp

import (
	"fmt"
	"strings"
)

// Expand replaces ${VAR} and ${VAR:-default} in s, as Claude Code does in
// .mcp.json (command, args, env, url, headers). A variable that is unset
// and has no default is an error naming it: a server started with an empty
// token fails later in a way that says nothing. A "$" not followed by "{"
// is kept, so regular expressions and prices pass through.
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q: ${ without a closing }", s)
		}
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validName(name) {
			return "", fmt.Errorf("%q: ${%s} is not a variable name", s, expr)
		}
		v, ok := lookup(name)
		switch {
		case ok && (v != "" || !hasDef):
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			return "", fmt.Errorf("${%s} is not set (write ${%s:-default} to give it a default)", name, name)
		}
		s = s[i+end+1:]
	}
}

func validName(n string) bool {
	if n == "" {
		return false
	}
	for i, r := range n {
		if r != '_' && !(r >= 'A' && r <= 'Z') && !(r >= 'a' && r <= 'z') && !(i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

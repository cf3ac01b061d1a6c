package config

import (
	"fmt"
	"slices"
	"strings"

	"polly/workspace/jsonfile"
)

// Rule is a permission rule, written "tool" (every call of the tool) or
// "tool(pattern)", e.g. "run_command(go test *)" or "write_file(src/**)".
// Config only checks the syntax; what a pattern matches is decided by the
// permission package.
type Rule struct {
	Tool    string
	Pattern string // "" matches every call
}

// ParseRule parses the textual form of a rule.
func ParseRule(s string) (Rule, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return Rule{}, fmt.Errorf("empty permission rule")
	}
	tool, rest, hasArgs := strings.Cut(text, "(")
	tool = strings.TrimSpace(tool)
	if err := checkToolName(tool); err != nil {
		return Rule{}, fmt.Errorf("invalid rule %q: %w", s, err)
	}
	if !hasArgs {
		return Rule{Tool: tool}, nil
	}
	pattern, ok := strings.CutSuffix(rest, ")")
	if !ok {
		return Rule{}, fmt.Errorf("invalid rule %q: missing \")\" at the end", s)
	}
	if pattern = strings.TrimSpace(pattern); pattern == "" {
		return Rule{}, fmt.Errorf("invalid rule %q: empty pattern; write %q to match every call", s, tool)
	}
	return Rule{Tool: tool, Pattern: pattern}, nil
}

func checkToolName(tool string) error {
	if tool == "" {
		return fmt.Errorf("missing tool name before \"(\"")
	}
	for i, r := range tool {
		// '*' makes a pattern of tool names, for MCP tools: "mcp__github__*".
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '*')) {
			return fmt.Errorf("%q is not a tool name (expected something like run_command or write_file)", tool)
		}
	}
	return nil
}

// String is the canonical textual form.
func (r Rule) String() string {
	if r.Pattern == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Pattern + ")"
}

// UnmarshalText parses a rule from a config file.
func (r *Rule) UnmarshalText(b []byte) error {
	parsed, err := ParseRule(string(b))
	if err != nil {
		return err
	}
	*r = parsed
	return nil
}

// MarshalText writes the canonical form.
func (r Rule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// CheckRuleTools fails on the first permission rule whose tool is not one of
// known: a misspelt tool in a deny rule would otherwise protect nothing.
// The error names the rule and where it was written.
func (c *Config) CheckRuleTools(known []string) error {
	for _, l := range []struct {
		key   string
		rules []Rule
	}{{"permissions.allow", c.Permissions.Allow}, {"permissions.ask", c.Permissions.Ask}, {"permissions.deny", c.Permissions.Deny}} {
		for i, r := range l.rules {
			// MCP tools are only known once their servers run; a rule may
			// name them ahead, by name or pattern (mcp__github__*).
			if slices.Contains(known, r.Tool) || strings.HasPrefix(r.Tool, "mcp_") {
				continue
			}
			msg := fmt.Sprintf("rule %q names the unknown tool %q", r.String(), r.Tool)
			if s := jsonfile.Closest(r.Tool, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (tools: " + strings.Join(known, ", ") + ")"
			}
			key := indexPath(l.key, i)
			return sourceError(c.Source(key), key, msg)
		}
	}
	return nil
}

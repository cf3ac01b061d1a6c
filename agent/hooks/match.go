package hooks

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// matcher is a compiled "matcher" field, evaluated as Claude Code
// documents it: "*", "" or none match everything; a value of only letters,
// digits, _, -, spaces, commas and | is a list of exact names; anything
// else is an unanchored regular expression.
type matcher struct {
	all   bool
	exact []string
	re    *regexp.Regexp
}

func compileMatcher(m string) (matcher, error) {
	m = strings.TrimSpace(m)
	if m == "" || m == "*" {
		return matcher{all: true}, nil
	}
	if exactOnly(m) {
		var names []string
		for _, part := range strings.FieldsFunc(m, func(r rune) bool { return r == '|' || r == ',' }) {
			if p := strings.TrimSpace(part); p != "" {
				names = append(names, p)
			}
		}
		return matcher{exact: names}, nil
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return matcher{}, err
	}
	return matcher{re: re}, nil
}

// CheckMatcher reports a matcher that cannot be compiled, for the config.
func CheckMatcher(m string) error {
	_, err := compileMatcher(m)
	return err
}

func exactOnly(m string) bool {
	for _, r := range m {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '_' || r == '-' || r == ' ' || r == ',' || r == '|':
		default:
			return false
		}
	}
	return true
}

// matches reports whether any of the names (a tool's Claude Code name and
// Polly's own, a notification type…) is matched.
func (m matcher) matches(names []string) bool {
	if m.all {
		return true
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if m.re != nil && m.re.MatchString(n) {
			return true
		}
		for _, e := range m.exact {
			if e == n {
				return true
			}
		}
	}
	return false
}

// ifRule is a handler's "if" field: one permission rule such as
// "Bash(git *)" or "Edit(*.ts)", checked against the tool call. It errs on
// the side of running the hook, as Claude Code's filter does: a command it
// cannot split, or a rule it does not understand, lets the hook run.
type ifRule struct {
	tool    string
	pattern string // "" matches any call of the tool
}

func parseIf(s string) (ifRule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return ifRule{}, nil
	}
	tool, rest, hasArgs := strings.Cut(s, "(")
	if !hasArgs {
		return ifRule{tool: s}, nil
	}
	pattern, ok := strings.CutSuffix(rest, ")")
	if !ok || strings.TrimSpace(tool) == "" {
		return ifRule{}, fmt.Errorf("%q is not a permission rule like Bash(git *) or Edit(*.ts)", s)
	}
	return ifRule{tool: strings.TrimSpace(tool), pattern: strings.TrimSpace(pattern)}, nil
}

// allows reports whether the call (its Claude Code name and tool_input)
// passes the rule. A rule on another tool never lets the hook run.
func (r ifRule) allows(names []string, input json.RawMessage, root string) bool {
	if r.tool == "" {
		return true
	}
	named := false
	for _, n := range names {
		named = named || n == r.tool
	}
	if !named {
		return false
	}
	if r.pattern == "" || r.pattern == "*" {
		return true
	}
	var args struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
		URL      string `json:"url"`
	}
	if json.Unmarshal(input, &args) != nil {
		return true
	}
	switch {
	case args.Command != "":
		return commandMatches(r.pattern, args.Command)
	case args.FilePath != "" || args.Path != "":
		return pathMatches(r.pattern, firstNonEmpty(args.FilePath, args.Path), root)
	case args.URL != "":
		if host, ok := strings.CutPrefix(r.pattern, "domain:"); ok {
			return strings.Contains(args.URL, "://"+host) || strings.Contains(args.URL, "."+host)
		}
		return globMatch(r.pattern, args.URL)
	}
	return true
}

// subcommandSep splits a command line into its subcommands.
var subcommandSep = regexp.MustCompile(`&&|\|\||[;|\n]`)

// commandMatches checks each subcommand of a command line against a Bash
// rule ("git *", or the older "git:*"); a command with $( or backticks
// always runs the hook.
func commandMatches(pattern, command string) bool {
	if strings.Contains(command, "$(") || strings.Contains(command, "`") {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, ":*"); ok {
		pattern = prefix + " *"
	}
	parts := subcommandSep.Split(command, -1)
	for _, p := range parts {
		fields := strings.Fields(p)
		for len(fields) > 0 && strings.Contains(fields[0], "=") && !strings.HasPrefix(fields[0], "=") {
			fields = fields[1:] // leading VAR=value assignments
		}
		sub := strings.Join(fields, " ")
		if globMatch(pattern, sub) || strings.HasSuffix(pattern, " *") && sub == strings.TrimSuffix(pattern, " *") {
			return true
		}
	}
	return false
}

// pathMatches matches a file rule the way gitignore does: a pattern with
// no slash matches the file name at any depth, others the path relative
// to the project root.
func pathMatches(pattern, file, root string) bool {
	rel := file
	if root != "" && strings.HasPrefix(file, root+"/") {
		rel = strings.TrimPrefix(file, root+"/")
	}
	if !strings.Contains(pattern, "/") {
		ok, _ := doublestar.Match(pattern, path.Base(rel))
		return ok
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if ok, _ := doublestar.Match(pattern, rel); ok {
		return true
	}
	ok, _ := doublestar.Match(pattern, file)
	return ok
}

// globMatch is a glob where * matches any run of characters, / included.
func globMatch(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	ok, _ := regexp.MatchString(re, s)
	return ok
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return strings.TrimSpace(x)
		}
	}
	return ""
}

// RuleAllows reports whether a tool call (its names and Claude Code
// tool_input) matches one permission rule as Claude Code writes them in
// allowed-tools and "if": "Read", "Bash(git add:*)", "Edit(src/**)". A rule
// that does not parse matches nothing.
func RuleAllows(rule string, names []string, input json.RawMessage, root string) bool {
	r, err := parseIf(rule)
	if err != nil || r.tool == "" {
		return false
	}
	return r.allows(names, input, root)
}

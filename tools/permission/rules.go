package permission

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule is one permission rule from the config: every call of Tool when
// Pattern is "", or the calls whose command (run_command), host
// (fetch_url) or path (the file tools) matches Pattern.
//
// Command patterns are shell globs matched against each simple command of
// the parsed line ("*" matches anything, spaces and slashes included; a
// trailing " *" also matches the bare command). Path patterns are
// doublestar globs against the project-relative path ("src/**"), or
// against the absolute path when they start with "/" or "~/". Host
// patterns are globs against the host name ("*.github.com").
type Rule struct {
	Tool    string
	Pattern string
}

func (r Rule) String() string {
	if r.Pattern == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Pattern + ")"
}

// NetworkRule is the rule "tool" name that lets commands use the network
// in the sandbox: "network(npm install *)" in permissions.allow lets that
// command ask for network without a question; "network" alone, every command.
const NetworkRule = "network"

// Rules are the config's permission lists. Precedence: deny, then ask,
// then allow, then the mode.
type Rules struct {
	Allow, Ask, Deny []Rule
}

type compiledRule struct {
	Rule
	list string         // "allow", "ask" or "deny", for messages
	glob *regexp.Regexp // command and host patterns
	path string         // path pattern, ~ expanded
}

func (r compiledRule) describe() string { return fmt.Sprintf("%s %q", r.list, r.String()) }

type ruleSet struct {
	allow, ask, deny []compiledRule
}

func (rs ruleSet) empty() bool { return len(rs.allow)+len(rs.ask)+len(rs.deny) == 0 }

func compileRules(r Rules, home string) (ruleSet, error) {
	var rs ruleSet
	for _, l := range []struct {
		name string
		in   []Rule
		out  *[]compiledRule
	}{{"allow", r.Allow, &rs.allow}, {"ask", r.Ask, &rs.ask}, {"deny", r.Deny, &rs.deny}} {
		for _, rule := range l.in {
			cr, err := compileRule(rule, l.name, home)
			if err != nil {
				return ruleSet{}, err
			}
			*l.out = append(*l.out, cr)
		}
	}
	return rs, nil
}

func compileRule(r Rule, list, home string) (compiledRule, error) {
	cr := compiledRule{Rule: r, list: list}
	if strings.TrimSpace(r.Tool) == "" {
		return cr, fmt.Errorf("permission rule %q: no tool name", r.String())
	}
	if r.Pattern == "" {
		return cr, nil
	}
	cr.glob = globRegexp(r.Pattern)
	p := r.Pattern
	if (p == "~" || strings.HasPrefix(p, "~/")) && home != "" {
		p = filepath.ToSlash(home) + p[1:]
	}
	cr.path = p
	if r.Tool != "run_command" && r.Tool != NetworkRule && r.Tool != "fetch_url" && !doublestar.ValidatePattern(p) {
		return cr, fmt.Errorf("permission rule %q: %q is not a valid path pattern", r.String(), r.Pattern)
	}
	return cr, nil
}

// globRegexp turns a command or host glob into an anchored regexp.
func globRegexp(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	body := pat
	optionalArgs := strings.HasSuffix(pat, " *")
	if optionalArgs {
		body = strings.TrimSuffix(pat, " *")
	}
	for i := 0; i < len(body); i++ {
		switch ch := body[i]; ch {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '\\':
			if i+1 < len(body) {
				i++
				b.WriteString(regexp.QuoteMeta(body[i : i+1]))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	if optionalArgs {
		b.WriteString(`( .*)?`)
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// matchText reports whether a command or host rule matches any of texts.
func (r compiledRule) matchText(texts ...string) bool {
	if r.Pattern == "" {
		return true
	}
	for _, t := range texts {
		if t != "" && r.glob.MatchString(t) {
			return true
		}
	}
	return false
}

// pathCandidates are the forms a path rule is matched against.
func pathCandidates(pl place, root string) (rel, abs []string) {
	if pl.rel != "" {
		rel = append(rel, pl.rel)
	}
	if within(pl.given, root) {
		if r, err := filepath.Rel(root, pl.given); err == nil {
			rel = append(rel, filepath.ToSlash(r))
		}
	}
	abs = append(abs, filepath.ToSlash(pl.given))
	if pl.real != "" {
		abs = append(abs, filepath.ToSlash(pl.real))
	}
	return rel, abs
}

// matchPlace: any (deny, ask) or all (allow) of the place's forms match.
func (r compiledRule) matchPlace(pl place, root string, all bool) bool {
	if r.Pattern == "" {
		return true
	}
	rel, abs := pathCandidates(pl, root)
	cands := rel
	if strings.HasPrefix(r.path, "/") {
		cands = abs
	}
	if len(cands) == 0 {
		return false
	}
	for _, c := range cands {
		ok, _ := doublestar.Match(r.path, c)
		if ok && !all {
			return true
		}
		if !ok && all {
			return false
		}
	}
	return all
}

func firstRule(rules []compiledRule, tool string, match func(compiledRule) bool) (compiledRule, bool) {
	for _, r := range rules {
		if toolMatches(r.Tool, tool) && match(r) {
			return r, true
		}
	}
	return compiledRule{}, false
}

package workspace

import (
	"os"
	"regexp"
	"strings"
)

// Fix is a solved error from .learnings/ERRORS.md.
type Fix struct {
	When  string // the entry's heading (local date and time)
	Error string
	Fix   string
}

// KnownFix looks for a solved error in .learnings/ERRORS.md whose
// signature matches errText, so a mistake made before is not made again
// (PEERS idea 7). Signatures ignore case, numbers, quoted strings and
// paths; the newest matching entry wins.
func (w *Workspace) KnownFix(errText string) (Fix, bool) {
	want := signature(errText)
	if len(want) < 12 {
		return Fix{}, false
	}
	// The start of a message names the failure; its tail carries details
	// (hints, suggestions) that differ from one occurrence to the next.
	if len(want) > 60 {
		want = want[:60]
	}
	b, err := os.ReadFile(w.path(ErrorsFile))
	if err != nil {
		return Fix{}, false
	}
	entries := parseErrors(string(b))
	for i := len(entries) - 1; i >= 0; i-- {
		have := signature(entries[i].Error)
		if len(have) >= 12 && strings.Contains(have, want) {
			return entries[i], true
		}
	}
	return Fix{}, false
}

// parseErrors reads the "## when / - **Error:** / - **Fix:**" entries.
func parseErrors(doc string) []Fix {
	var out []Fix
	var cur *Fix
	field := ""
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			out = append(out, Fix{When: strings.TrimSpace(line[3:])})
			cur, field = &out[len(out)-1], ""
		case cur == nil:
		case strings.HasPrefix(line, "- **Error:**"):
			cur.Error, field = strings.TrimSpace(strings.TrimPrefix(line, "- **Error:**")), "error"
		case strings.HasPrefix(line, "- **Fix:**"):
			cur.Fix, field = strings.TrimSpace(strings.TrimPrefix(line, "- **Fix:**")), "fix"
		case strings.HasPrefix(line, "  ") && field == "error":
			cur.Error += " " + strings.TrimSpace(line)
		case strings.HasPrefix(line, "  ") && field == "fix":
			cur.Fix += " " + strings.TrimSpace(line)
		}
	}
	kept := out[:0]
	for _, f := range out {
		if f.Error != "" && f.Fix != "" {
			kept = append(kept, f)
		}
	}
	return kept
}

var (
	sigQuoted = regexp.MustCompile("\"[^\"]*\"|'[^']*'|`[^`]*`")
	sigPath   = regexp.MustCompile(`\S*[/\\.]\S*`)
	sigNumber = regexp.MustCompile(`[0-9]+`)
)

// signature reduces an error message to what identifies its kind.
func signature(s string) string {
	s = strings.ToLower(firstLines(s, 1))
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "error:"))
	s = sigQuoted.ReplaceAllString(s, "_")
	s = sigPath.ReplaceAllString(s, "_")
	s = sigNumber.ReplaceAllString(s, "#")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160]
	}
	return s
}

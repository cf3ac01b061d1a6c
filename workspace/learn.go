package workspace

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Fix is a solved error from .learnings/ERRORS.md.
type Fix struct {
	When      string // the entry's heading (local date and time)
	Tool      string // the tool whose call failed; "" when the model logged it
	Call      string // the tool and its key argument: "read_file path=a.txt"
	Signature string // the normalised error: what identifies its kind
	Error     string
	Fix       string
}

// LogToolError records an error the harness saw solved: a call of tool
// (brief: its key argument, "path=a.txt") failed with errText, and the same
// operation on the same target later succeeded (fix says how). The entry
// carries the tool and the error's signature, which is what KnownFix
// matches on, and p's marker. The same tool, error and fix are logged once.
func (w *Workspace) LogToolError(p Provenance, tool, brief, errText, fix string) (string, error) {
	errText, fix = clip(quoteComments(errText)), clip(quoteComments(fix))
	sig := Signature(errText)
	if tool == "" || sig == "" || fix == "" {
		return "", errors.New("log tool error: tool, error and fix are all needed")
	}
	call := oneLine(tool)
	if b := oneLine(quoteComments(brief)); b != "" {
		call += " " + b
	}
	body := "- **Tool:** " + oneLine(tool) + "\n- **Call:** " + call + "\n- **Signature:** " + sig +
		"\n- **Error:** " + indent(errText) + "\n- **Fix:** " + indent(fix) + "\n"
	return w.Apply(w.errorEntry("log tool error", p, Fix{Tool: oneLine(tool), Error: errText, Fix: fix}, body))
}

// errorEntry appends body, under a dated heading and p's marker, to
// ERRORS.md unless an entry with the same tool, error and fix is there
// already.
func (w *Workspace) errorEntry(op string, p Provenance, f Fix, body string) Edit {
	where := w.path(ErrorsFile)
	return Edit{File: ErrorsFile, op: op, change: func(old string, exists bool) (string, string, bool) {
		if !exists {
			old = w.templateText(ErrorsFile, "# Errors and fixes\n")
		}
		for _, e := range parseErrors(old) {
			if e.Tool == f.Tool && oneLine(e.Error) == oneLine(f.Error) && oneLine(e.Fix) == oneLine(f.Fix) {
				return "", "already logged in " + where, false
			}
		}
		old = strings.TrimRight(old, "\n")
		if old != "" {
			old += "\n\n"
		}
		return old + "## " + w.stamp() + "\n" + markerLine(w.stamped(p)) + body, "written to " + where, true
	}}
}

// KnownFix looks for a solved error in .learnings/ERRORS.md for a call of
// tool that failed with errText, so a mistake made before is not made
// again (PEERS idea 7). It matches only the same tool and the same
// signature (the normalised error: case, numbers, quoted strings and paths
// ignored); an entry that names no tool is never recalled, as nothing ties
// it to a call. The newest matching entry wins.
func (w *Workspace) KnownFix(tool, errText string) (Fix, bool) {
	want := Signature(errText)
	if len(want) < minSignature {
		return Fix{}, false
	}
	b, err := os.ReadFile(w.path(ErrorsFile))
	if err != nil {
		return Fix{}, false
	}
	entries := parseErrors(string(b))
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Tool == "" || e.Tool != tool {
			continue
		}
		if e.Signature == want {
			return e, true
		}
	}
	return Fix{}, false
}

// minSignature: shorter signatures ("failed", "exit code #") say too little
// to pair a fix with.
const minSignature = 12

// parseErrors reads the "## when / - **Tool:** / - **Signature:** /
// - **Error:** / - **Fix:**" entries; Tool and Signature may be missing
// (entries the model logged, older files), and the signature is then
// computed from the error.
func parseErrors(doc string) []Fix {
	var out []Fix
	var cur *Fix
	field := ""
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			out = append(out, Fix{When: strings.TrimSpace(line[3:])})
			cur, field = &out[len(out)-1], ""
			continue
		}
		if cur == nil {
			continue
		}
		if k, v, ok := errorField(line); ok {
			field = k
			switch k {
			case "tool":
				cur.Tool = v
			case "call":
				cur.Call = v
			case "signature":
				cur.Signature = v
			case "error":
				cur.Error = v
			case "fix":
				cur.Fix = v
			}
			continue
		}
		if !strings.HasPrefix(line, "  ") {
			field = ""
			continue
		}
		switch field {
		case "error":
			cur.Error += "\n" + strings.TrimSpace(line)
		case "fix":
			cur.Fix += "\n" + strings.TrimSpace(line)
		}
	}
	kept := out[:0]
	for _, f := range out {
		if f.Error == "" || f.Fix == "" {
			continue
		}
		if f.Signature == "" {
			f.Signature = Signature(f.Error)
		}
		kept = append(kept, f)
	}
	return kept
}

// errorField recognises "- **Name:** value" lines of an ERRORS.md entry.
func errorField(line string) (key, value string, ok bool) {
	for _, k := range []string{"Tool", "Call", "Signature", "Error", "Fix"} {
		if v, found := strings.CutPrefix(line, "- **"+k+":**"); found {
			return strings.ToLower(k), strings.TrimSpace(v), true
		}
	}
	return "", "", false
}

var (
	sigQuoted  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("\"[^\"]*\"|'[^']*'|`[^`]*`") })
	sigPath    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\S*[/\\.]\S*`) })
	sigNumber  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9]+`) })
	sigBlanks  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`_(?:[ ,]+_)+`) })
	sigExit    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(exit code|exit status): -?[0-9]+$`) })
	errorWords = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(error|fail|failed|failure|panic|fatal|cannot|can't|undefined|not found|no such|denied|refused|invalid|unknown|missing|does not exist|timed out)\b`)
	})
)

// ErrorLine picks the line of a failed call's output that says what went
// wrong. For a command's output (it starts with "exit code: N", which says
// nothing about the kind of failure) that is the first line reading like an
// error, else the last line, where errors land; for anything else, the
// first line.
func ErrorLine(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	if !sigExit().MatchString(strings.ToLower(strings.TrimSpace(lines[0]))) {
		return strings.TrimSpace(lines[0])
	}
	last := ""
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if errorWords().MatchString(l) {
			return l
		}
		last = l
	}
	return last
}

// Signature reduces an error to what identifies its kind: its error line
// in lower case, without an "error:" prefix or the hints after "; ", with
// quoted strings and paths as "_" and numbers as "#", capped at 120
// characters.
func Signature(errText string) string {
	s := strings.ToLower(ErrorLine(errText))
	s = strings.TrimSpace(strings.TrimPrefix(s, "error:"))
	s = sigQuoted().ReplaceAllString(s, "_")
	// What follows "; " is a hint for this occurrence ("did you mean: a.txt?").
	if i := strings.Index(s, "; "); i > 0 {
		s = s[:i]
	}
	s = sigPath().ReplaceAllString(s, "_")
	s = sigNumber().ReplaceAllString(s, "#")
	s = sigBlanks().ReplaceAllString(s, "_")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

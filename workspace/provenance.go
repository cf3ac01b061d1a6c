package workspace

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Workspace memory enters the system prompt of every later session in
// every project, so a write to it is a persistence channel: a page read in
// one repository could steer sessions in another (issue 25). Every entry a
// session writes therefore carries its provenance — which session, in
// which project, as which persona, when, and whether that session had read
// untrusted content (fetched pages, MCP results) — as a marker in the file
// itself, at the end of the entry's first line or on its own line under an
// entry's heading:
//
//	- The API uses tabs. _(2026-11-26)_ <!-- polly:provenance at=2026-11-26T14%3A03%3A05Z&persona=coder&project=%2Fsrc%2Fapp&session=01JD… -->
//
// In the file, not beside it: the marker travels with its entry when the
// user edits the file, when tidy moves entries to archive/ and when the
// file is copied; a side file would drift from the entries it describes
// and would need a lock of its own. It is an HTML comment, so rendered
// Markdown does not show it, and its fields are URL-encoded, so it is one
// line that a value cannot end early ("-->" cannot appear in it). The
// prompt builder takes markers out before capping a file (they cost no
// prompt space) and flags the entries of sessions that had read untrusted
// content; the memory inspector shows them as a line a person reads.

// Provenance says who wrote an entry of the workspace memory.
type Provenance struct {
	Session string
	Project string // the project directory the session ran in
	Persona string
	// At is when it was written; zero means the workspace's clock at the
	// write.
	At time.Time
	// Untrusted lists the untrusted sources (URLs, "MCP server x, tool y")
	// the session had read before the write; empty when it had read none.
	Untrusted []string
}

// IsZero reports whether p says nothing (a write by the user or a test).
func (p Provenance) IsZero() bool {
	return p.Session == "" && p.Project == "" && p.Persona == "" && len(p.Untrusted) == 0
}

// markedSources bounds the sources one marker lists.
const markedSources = 3

const (
	markerOpen  = "<!-- polly:provenance "
	markerClose = " -->"
)

// marker is p as the comment written into a file ("" for a zero p).
func (p Provenance) marker() string {
	if p.IsZero() {
		return ""
	}
	v := url.Values{}
	set := func(k, s string) {
		if s = oneLine(s); s != "" {
			v.Set(k, s)
		}
	}
	set("session", p.Session)
	set("project", p.Project)
	set("persona", p.Persona)
	if !p.At.IsZero() {
		v.Set("at", p.At.UTC().Format(time.RFC3339))
	}
	for i, s := range p.Untrusted {
		if i == markedSources {
			v.Set("untrusted_more", itoa(len(p.Untrusted)-markedSources))
			break
		}
		v.Add("untrusted", oneLine(s))
	}
	return markerOpen + v.Encode() + markerClose
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// markerRE matches a marker; its group is the encoded fields. A marker is
// one line and its fields hold no space (they are URL-encoded).
var markerRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`<!-- polly:provenance ([^ \n]*) -->`)
})

// replaceMarkers replaces each marker of text (with the space before it)
// by what fn returns for it; ownLine says the marker is a line of its own,
// which goes whole when fn returns "".
func replaceMarkers(text string, fn func(p Provenance, ownLine bool) string) string {
	if !strings.Contains(text, markerOpen) {
		return text
	}
	var b strings.Builder
	last := 0
	for _, m := range markerRE().FindAllStringSubmatchIndex(text, -1) {
		start, end := m[0], m[1]
		own := (start == 0 || text[start-1] == '\n') && (end == len(text) || text[end] == '\n')
		if start > last && text[start-1] == ' ' {
			start--
		}
		repl := fn(parseMarker(text[m[2]:m[3]]), own)
		if own && repl == "" && end < len(text) {
			end++
		}
		b.WriteString(text[last:start])
		b.WriteString(repl)
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}

// ParseProvenance reads the markers in text, in order.
func ParseProvenance(text string) []Provenance {
	if !strings.Contains(text, markerOpen) {
		return nil
	}
	var out []Provenance
	for _, m := range markerRE().FindAllStringSubmatch(text, -1) {
		out = append(out, parseMarker(m[1]))
	}
	return out
}

func parseMarker(fields string) Provenance {
	v, _ := url.ParseQuery(fields) // a damaged marker still yields what parses
	p := Provenance{Session: v.Get("session"), Project: v.Get("project"), Persona: v.Get("persona"), Untrusted: v["untrusted"]}
	p.At, _ = time.Parse(time.RFC3339, v.Get("at"))
	if more := v.Get("untrusted_more"); more != "" {
		p.Untrusted = append(p.Untrusted, "… "+more+" more")
	}
	return p
}

// withMarker puts p's marker at the end of the first line of text.
func withMarker(text string, p Provenance) string {
	m := p.marker()
	if m == "" {
		return text
	}
	first, rest, found := strings.Cut(text, "\n")
	if !found {
		return text + " " + m
	}
	return first + " " + m + "\n" + rest
}

// markerLine is p's marker as a line of its own ("" for a zero p), for
// entries under a "## when" heading.
func markerLine(p Provenance) string {
	if m := p.marker(); m != "" {
		return m + "\n"
	}
	return ""
}

// untrustedFlag is what the system prompt shows in place of the marker of
// an entry written by a session that had read untrusted content.
const untrustedFlag = "[written by a session that had read untrusted content]"

// promptView is text as the system prompt shows it: markers taken out, an
// entry of a session that had read untrusted content flagged.
func promptView(text string) string {
	return replaceMarkers(text, func(p Provenance, own bool) string {
		switch {
		case len(p.Untrusted) == 0:
			return ""
		case own:
			return untrustedFlag
		}
		return " " + untrustedFlag
	})
}

// StripProvenance is text without its provenance markers.
func StripProvenance(text string) string { return stripMarkers(text) }

// stripMarkers removes every marker from text.
func stripMarkers(text string) string {
	return replaceMarkers(text, func(Provenance, bool) string { return "" })
}

// Readable shows text as a person reads it in the memory inspector: each
// marker becomes a short italic note of who wrote the entry.
func Readable(text string) string {
	return replaceMarkers(text, func(p Provenance, own bool) string {
		var parts []string
		if p.Persona != "" {
			parts = append(parts, p.Persona)
		}
		if p.Session != "" {
			parts = append(parts, "session "+p.Session)
		}
		if p.Project != "" {
			parts = append(parts, "in "+p.Project)
		}
		if !p.At.IsZero() {
			parts = append(parts, p.At.Local().Format("2006-01-02 15:04"))
		}
		note := "written by " + strings.Join(parts, ", ")
		if len(p.Untrusted) > 0 {
			note += "; ⚠ the session had read untrusted content: " + strings.Join(p.Untrusted, ", ")
		}
		note = "_(" + strings.NewReplacer("_", `\_`, "*", `\*`).Replace(note) + ")_"
		if own {
			return note
		}
		return " " + note
	})
}

// quoteComments keeps text the model gives from opening an HTML comment:
// a comment would hide words from the person reading the rendered file
// while the prompt still carried them, and could fake a marker.
func quoteComments(s string) string {
	if !strings.Contains(s, "<!--") {
		return s
	}
	return strings.ReplaceAll(s, "<!--", "&lt;!--")
}

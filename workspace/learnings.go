package workspace

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Caps of the learnings part of the system prompt: a few lines that help,
// not the files.
const (
	learningsMax      = 8   // insights shown
	featureRequestMax = 4   // feature requests shown
	learningLineCap   = 220 // characters of one shown entry
)

// entry is one "## when" entry of a .learnings file.
type entry struct {
	when string // the heading's date and time
	seen int    // how often it was logged (1 unless logged again)
	body string
}

// seenSuffix is how a heading counts repeats: "## 2026-11-25 14:03 · seen 3×".
var seenSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` · seen ([0-9]+)×$`) })

// parseEntries reads the entries of LEARNINGS.md or FEATURE_REQUESTS.md.
// Indented text (the template's example) is not an entry.
func parseEntries(doc string) []entry {
	var out []entry
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			e := entry{when: strings.TrimSpace(line[3:]), seen: 1}
			if m := seenSuffix().FindStringSubmatch(e.when); m != nil {
				e.seen, _ = strconv.Atoi(m[1])
				e.when = strings.TrimSuffix(e.when, m[0])
			}
			out = append(out, e)
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].body += line + "\n"
		}
	}
	kept := out[:0]
	for _, e := range out {
		if e.body = strings.TrimSpace(e.body); e.body != "" {
			kept = append(kept, e)
		}
	}
	return kept
}

// rankEntries orders entries most-used first, newest first among equals
// (headings are local date-times, so they sort as text).
func rankEntries(es []entry) []entry {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b entry) int {
		if a.seen != b.seen {
			return b.seen - a.seen
		}
		return strings.Compare(b.when, a.when)
	})
	return es
}

// bumpSeen finds the entry whose body is body (compared like facts) and
// counts one more sighting in its heading, adding marker (the sighting's
// provenance line, may be "") under it. ok is false when there is none.
func bumpSeen(doc, body, marker string) (out string, seen int, ok bool) {
	want := normFact(oneLine(body))
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "## ") {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "## ") {
			j++
		}
		if normFact(oneLine(strings.Join(lines[i+1:j], " "))) != want {
			i = j - 1
			continue
		}
		head, n := lines[i], 1
		if m := seenSuffix().FindStringSubmatch(head); m != nil {
			n, _ = strconv.Atoi(m[1])
			head = strings.TrimSuffix(head, m[0])
		}
		lines[i] = fmt.Sprintf("%s · seen %d×", head, n+1)
		if marker != "" {
			lines = slices.Insert(lines, i+1, strings.TrimSuffix(marker, "\n"))
		}
		return strings.Join(lines, "\n"), n + 1, true
	}
	return doc, 0, false
}

// renderLearnings is the learnings part of the prompt: the most-used and
// newest insights of LEARNINGS.md, one line each, and the note that says
// how many more there are and where.
func renderLearnings(doc string, size int64) (text, note string) {
	all := parseEntries(doc)
	shown := rankEntries(all)
	if len(shown) > learningsMax {
		shown = shown[:learningsMax]
	}
	var b strings.Builder
	for _, e := range shown {
		line := shorten(oneLine(e.body), learningLineCap)
		if e.seen > 1 {
			line += fmt.Sprintf(" (seen %d×)", e.seen)
		}
		fmt.Fprintf(&b, "- %s\n", line)
	}
	if left := len(all) - len(shown); left > 0 {
		note = fmt.Sprintf("[%d more insights in %s, not shown — workspace_read(%q) lists them all]", left, LearningsFile, LearningsFile)
	}
	return b.String(), note
}

// renderFeatureRequests lists the newest feature requests, so the model
// does not file the same one again.
func renderFeatureRequests(doc string, size int64) (text, note string) {
	all := parseEntries(doc)
	shown := slices.Clone(all)
	slices.Reverse(shown)
	if len(shown) > featureRequestMax {
		shown = shown[:featureRequestMax]
	}
	var b strings.Builder
	for _, e := range shown {
		fmt.Fprintf(&b, "- %s\n", shorten(oneLine(e.body), learningLineCap))
	}
	if left := len(all) - len(shown); left > 0 {
		note = fmt.Sprintf("[%d older feature requests in %s, not shown]", left, FeatureRequestsFile)
	}
	return b.String(), note
}

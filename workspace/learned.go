package workspace

import (
	"fmt"
	"strings"
	"time"
)

// LearnFacts appends durable facts a summary extracted (the semantic
// memory tier) to MEMORY.md (see LearnEdit). It returns the facts it added.
func (w *Workspace) LearnFacts(p Provenance, facts []string) ([]string, error) {
	e, added := w.LearnEdit(p, facts)
	if _, err := w.Apply(e); err != nil {
		return nil, err
	}
	return *added, nil
}

// LearnEdit appends durable facts a summary extracted to MEMORY.md, under
// "## Learned — <date> (session <id>)", each with p's marker. A fact
// already anywhere in MEMORY.md (compared as SaveFact compares) is not
// added again. added lists the facts the edit adds, once it is applied (or
// previewed).
func (w *Workspace) LearnEdit(p Provenance, facts []string) (e Edit, added *[]string) {
	added = new([]string)
	return Edit{File: MemoryFile, op: "learn facts", change: func(old string, exists bool) (string, string, bool) {
		section := fmt.Sprintf("Learned — %s (session %s)", w.now().Format(time.DateOnly), quoteComments(oneLine(p.Session)))
		*added = nil
		doc := old
		if !exists {
			doc = w.templateText(MemoryFile, "# MEMORY\n")
		}
		known := map[string]bool{}
		for _, l := range strings.Split(doc, "\n") {
			if b, ok := cutBullet(strings.TrimSpace(l)); ok {
				known[normFact(b)] = true
			}
		}
		p := w.stamped(p)
		for _, f := range facts {
			f = strings.TrimSpace(stripStamp(oneLine(quoteComments(f))))
			if f == "" || known[normFact(f)] {
				continue
			}
			known[normFact(f)] = true
			doc, _, _ = addFact(doc, section, f, withMarker("- "+f, p))
			*added = append(*added, f)
		}
		return doc, fmt.Sprintf("%d facts added to %s", len(*added), MemoryFile), len(*added) > 0
	}}, added
}

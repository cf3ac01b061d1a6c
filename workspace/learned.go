package workspace

import (
	"fmt"
	"strings"
	"time"
)

// LearnFacts appends durable facts a summary extracted (the semantic
// memory tier) to MEMORY.md, under "## Learned — <date> (session <id>)".
// A fact already anywhere in MEMORY.md (compared as SaveFact compares) is
// not added again. It returns the facts it added.
func (w *Workspace) LearnFacts(session string, facts []string) ([]string, error) {
	section := fmt.Sprintf("Learned — %s (session %s)", w.now().Format(time.DateOnly), session)
	var added []string
	err := w.update(MemoryFile, func(old string, exists bool) (string, bool) {
		added = nil
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
		for _, f := range facts {
			f = strings.TrimSpace(stripStamp(oneLine(f)))
			if f == "" || known[normFact(f)] {
				continue
			}
			known[normFact(f)] = true
			doc, _, _ = addFact(doc, section, f, "- "+f)
			added = append(added, f)
		}
		return doc, len(added) > 0
	})
	if err != nil {
		return nil, fmt.Errorf("learn facts: %w", err)
	}
	return added, nil
}

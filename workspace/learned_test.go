package workspace

import (
	"os"
	"strings"
	"testing"
)

// Durable facts land under a dated Learned section with the session id,
// once: a second identical fact (in any spelling SaveFact treats as the
// same) is not added.
func TestLearnFactsOnce(t *testing.T) {
	w := open(t)
	added, err := w.LearnFacts("s1", []string{"The user prefers tabs over spaces.", "Deploys go through make release"})
	if err != nil || len(added) != 2 {
		t.Fatalf("added %q, %v", added, err)
	}
	added, err = w.LearnFacts("s2", []string{"the user prefers tabs over spaces", "CI runs as root"})
	if err != nil || len(added) != 1 || added[0] != "CI runs as root" {
		t.Fatalf("second time added %q, %v", added, err)
	}
	b, _ := os.ReadFile(w.path(MemoryFile))
	doc := string(b)
	if strings.Count(strings.ToLower(doc), "prefers tabs") != 1 {
		t.Fatalf("fact twice:\n%s", doc)
	}
	day := testNow.Format("2006-01-02")
	for _, want := range []string{"## Learned — " + day + " (session s1)\n- The user prefers tabs over spaces.\n- Deploys go through make release", "## Learned — " + day + " (session s2)\n- CI runs as root"} {
		if !strings.Contains(doc, want) {
			t.Fatalf("MEMORY.md lacks %q:\n%s", want, doc)
		}
	}
}

package workspace

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Durable facts land under a dated Learned section with the session id,
// once: a second identical fact (in any spelling SaveFact treats as the
// same) is not added.
func TestLearnFactsOnce(t *testing.T) {
	w := open(t)
	added, err := w.LearnFacts(Provenance{Session: "s1"}, []string{"The user prefers tabs over spaces.", "Deploys go through make release"})
	if err != nil || len(added) != 2 {
		t.Fatalf("added %q, %v", added, err)
	}
	added, err = w.LearnFacts(Provenance{Session: "s2", Persona: "coder", Project: "/src/app", Untrusted: []string{"https://docs.test/ci"}},
		[]string{"the user prefers tabs over spaces", "CI runs as root"})
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
		if !strings.Contains(stripMarkers(doc), want) {
			t.Fatalf("MEMORY.md lacks %q:\n%s", want, doc)
		}
	}
	// Each fact carries who learned it, and the prompt flags the one from
	// a session that had read untrusted content.
	ps := ParseProvenance(doc)
	if len(ps) != 3 || ps[0].Session != "s1" || !ps[0].At.Equal(testNow) || ps[2].Session != "s2" || ps[2].Persona != "coder" ||
		ps[2].Project != "/src/app" || fmt.Sprint(ps[2].Untrusted) != "[https://docs.test/ci]" {
		t.Fatalf("provenance = %+v\n%s", ps, doc)
	}
	view := promptView(doc)
	if !strings.Contains(view, "- CI runs as root [written by a session that had read untrusted content]\n") ||
		!strings.Contains(view, "- Deploys go through make release\n") || strings.Contains(view, "polly:provenance") {
		t.Fatalf("prompt view:\n%s", view)
	}
}

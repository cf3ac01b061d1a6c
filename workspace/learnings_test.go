package workspace

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Issue 19: LEARNINGS.md and FEATURE_REQUESTS.md are read back into a
// short part of the prompt, most-used and newest first, capped, with a
// note saying how many more there are and where.
func TestLearningsPartMostUsedAndNewestFirst(t *testing.T) {
	w := open(t)
	clock := testNow
	w.now = func() time.Time { clock = clock.Add(time.Minute); return clock }
	for i := range 12 {
		if _, err := w.LogLearning(Provenance{}, fmt.Sprintf("insight number %02d about the build", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Learned again twice: it leads, though it is old.
	for range 2 {
		res, err := w.LogLearning(Provenance{}, "Insight number 03 about the build.")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res, "already logged") {
			t.Fatalf("repeat: %q", res)
		}
	}
	w.RequestFeature(Provenance{}, "A tool to render JavaScript pages")
	w.RequestFeature(Provenance{}, "A tool to diff two CSV files")

	p, err := w.SystemPrompt(PromptInput{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	head := "# Learnings (" + w.path(LearningsFile) + " — most-used and newest first)\n\n"
	i := strings.Index(p.Text, head)
	if i < 0 {
		t.Fatalf("no learnings part:\n%s", p.Text)
	}
	part := p.Text[i+len(head):]
	part = part[:strings.Index(part, "\n\n# ")]
	want := "- insight number 03 about the build (seen 3×)\n- insight number 11 about the build\n- insight number 10 about the build\n"
	if !strings.HasPrefix(part, want) {
		t.Errorf("learnings part starts\n%s\nwant\n%s", part, want)
	}
	if n := strings.Count(part, "\n- "); n+1 != learningsMax {
		t.Errorf("%d insights shown, want %d", n+1, learningsMax)
	}
	if strings.Contains(part, "number 00 ") || !strings.Contains(part, "[4 more insights in .learnings/LEARNINGS.md, not shown") {
		t.Errorf("cap or note wrong:\n%s", part)
	}
	if !strings.Contains(p.Text, "do not file them again)\n\n- A tool to diff two CSV files\n- A tool to render JavaScript pages") {
		t.Errorf("feature requests not shown newest first:\n%s", p.Text)
	}
	if len(part) > 2<<10 {
		t.Errorf("learnings part is %d bytes", len(part))
	}

	// The template's indented example is not a learning: a fresh workspace has no such part.
	fresh := open(t)
	if p, _ := fresh.SystemPrompt(PromptInput{Now: testNow}); strings.Contains(p.Text, "# Learnings") || strings.Contains(p.Text, "# Feature requests") {
		t.Error("empty learnings files produced a part")
	}
}

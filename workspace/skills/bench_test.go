package skills

import (
	"fmt"
	"path/filepath"
	"testing"
)

// Discovery runs once per start; 50 skills in two roots.
func BenchmarkDiscover50(b *testing.B) {
	project, home := b.TempDir(), b.TempDir()
	for i := range 50 {
		root := filepath.Join(project, ".agents/skills")
		if i%2 == 1 {
			root = filepath.Join(home, ".claude/skills")
		}
		write(b, filepath.Join(root, fmt.Sprintf("s%02d/SKILL.md", i)),
			fmt.Sprintf("---\nname: s%02d\ndescription: Skill number %d, for a benchmark.\n---\n# Body\nSteps.\n", i, i))
	}
	roots := Roots(project, home, "")
	b.ReportAllocs()
	for b.Loop() {
		if s, w := Discover(roots); s.Len() != 50 || len(w) != 0 {
			b.Fatal(s.Len(), w)
		}
	}
}

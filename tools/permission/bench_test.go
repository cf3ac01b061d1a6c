package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// benchLines are typical model command lines: plain reads, a pipeline, a
// bash -c script, and a long line with writes and links.
var benchLines = []string{
	"git status && git diff --stat",
	"grep -rn 'func main' --include='*.go' . | sort | uniq -c | head -20",
	"bash -c 'for f in src/*.go; do wc -l \"$f\"; done' 2>/dev/null",
	"go vet ./... && go build -o /dev/null ./... && git log --oneline -n 5 -- src",
	"ln -s ../shared lib && tar xf vendor.tar -C third_party && echo done > build.log; shopt -s dotglob; rm -rf tmp/*",
}

// BenchmarkDecideExec is the cost of judging one run_command call: parse,
// classify, place every write target on disk, apply the rules.
func BenchmarkDecideExec(b *testing.B) {
	root := b.TempDir()
	for _, d := range []string{".git", ".agent", "src", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p, err := New(Options{Mode: Yolo, Root: root, Rules: Rules{Deny: []Rule{{Tool: "run_command", Pattern: "git push *"}}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range benchLines {
		b.Run(line[:min(len(line), 24)], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide("run_command", execAccess(line))
			}
		})
	}
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ignoreTree is a project with a nested .gitignore that both excludes and
// re-includes, an ignored build directory and a .git directory.
func ignoreTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".gitignore":       "*.log\nbuild/\n# comment\n/top-only.txt\n",
		".git/HEAD":        "ref: refs/heads/main\nfunc inGit\n",
		"a.go":             "package a\n\nfunc A() {}\n",
		"app.log":          "func in a log\n",
		"top-only.txt":     "func anchored\n",
		"build/out.go":     "func Built() {}\n",
		"bin.dat":          "func\x00binary",
		"sub/.gitignore":   "secret.txt\n!keep.log\n",
		"sub/b.go":         "package sub\nfunc B() {}\n",
		"sub/secret.txt":   "func secret\n",
		"sub/keep.log":     "func kept\n",
		"sub/top-only.txt": "func not anchored here\n",
		"sub/deep/c.go":    "package deep\n\n\nfunc C() {}\n",
		"other/secret.txt": "func other secret\n",
	})
	// Fixed mtimes make "newest first" testable: c.go newest, a.go oldest.
	base := time.Now().Add(-time.Hour)
	for i, rel := range []string{"a.go", "sub/b.go", "sub/deep/c.go"} {
		ts := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(root, rel), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// searchCase is one call of a search tool and what it must answer.
type searchCase struct {
	name, args string
	wantErr    bool
	exact      string   // the whole output, when not ""
	want       []string // parts of the output
}

func runSearchCases(t *testing.T, r *Registry, tool string, cases []searchCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, r, tool, c.args)
			if res.IsError != c.wantErr {
				t.Fatalf("IsError = %v:\n%s", res.IsError, res.Output)
			}
			if c.exact != "" && res.Output != c.exact {
				t.Fatalf("output:\n%s\nwant:\n%s", res.Output, c.exact)
			}
			mustContain(t, res.Output, c.want...)
		})
	}
}

func TestListDir(t *testing.T) {
	root := ignoreTree(t)
	r := NewRegistry(FileTools(root)...)
	cases := []searchCase{
		{"root", `{}`, false,
			"./\n.gitignore\na.go\nbin.dat\nother/\nsub/\n(4 hidden: .git or .gitignored)\n", nil},
		{"nested gitignore with negation", `{"path":"sub"}`, false,
			"sub/\n.gitignore\nb.go\ndeep/\nkeep.log\ntop-only.txt\n(1 hidden: .git or .gitignored)\n", nil},
		{"ignored dir asked for by name", `{"path":"build"}`, false, "build/\nout.go\n", nil},
		{"other dir not affected by sub/.gitignore", `{"path":"other"}`, false, "other/\nsecret.txt\n", nil},
		{"file", `{"path":"a.go"}`, true, "", []string{"a.go is a file, not a directory; use read_file"}},
		{"missing", `{"path":"sbu"}`, true, "", []string{"directory sbu does not exist; did you mean: sub/?"}},
	}
	runSearchCases(t, r, "list_dir", cases)
}

func TestGlob(t *testing.T) {
	root := ignoreTree(t)
	r := NewRegistry(FileTools(root)...)
	cases := []searchCase{
		{"doublestar newest first, ignored skipped", `{"pattern":"**/*.go"}`, false, "sub/deep/c.go\nsub/b.go\na.go\n", nil},
		{"no doublestar stays in the directory", `{"pattern":"*.go"}`, false, "a.go\n", nil},
		{"negation re-includes", `{"pattern":"**/*.log"}`, false, "sub/keep.log\n", nil},
		{"anchored pattern", `{"pattern":"**/top-only.txt"}`, false, "sub/top-only.txt\n", nil},
		{"literal prefix", `{"pattern":"sub/**/*.go"}`, false, "sub/deep/c.go\nsub/b.go\n", nil},
		{"path argument", `{"pattern":"*.go","path":"sub"}`, false, "sub/b.go\n", nil},
		{"alternatives", `{"pattern":"**/{a,c}.go"}`, false, "sub/deep/c.go\na.go\n", nil},
		{"no match hint", `{"pattern":"*.txt"}`, false, "", []string{`no files match "*.txt"`, "try **/*.txt"}},
		{"bad pattern", `{"pattern":"[a"}`, true, "", []string{"invalid glob pattern"}},
		{"missing pattern", `{"path":"sub"}`, true, "", []string{`missing properties: ["pattern"]`}},
	}
	runSearchCases(t, r, "glob", cases)
}

func TestGrep(t *testing.T) {
	root := ignoreTree(t)
	long := strings.Repeat("a", 5000) + "NEEDLE" + strings.Repeat("b", 5000)
	writeTree(t, root, map[string]string{"long/min.js": long + "\n"})
	r := NewRegistry(FileTools(root)...)
	cases := []searchCase{
		{"honours nested gitignore, skips binary and .git", `{"pattern":"^func"}`, false,
			"a.go:3: func A() {}\nother/secret.txt:1: func other secret\nsub/b.go:2: func B() {}\n" +
				"sub/deep/c.go:4: func C() {}\nsub/keep.log:1: func kept\nsub/top-only.txt:1: func not anchored here\n", nil},
		{"glob on file name", `{"pattern":"func","glob":"*.go"}`, false,
			"a.go:3: func A() {}\nsub/b.go:2: func B() {}\nsub/deep/c.go:4: func C() {}\n", nil},
		{"glob with directories", `{"pattern":"func","glob":"sub/**/*.go"}`, false,
			"sub/b.go:2: func B() {}\nsub/deep/c.go:4: func C() {}\n", nil},
		{"path is a directory", `{"pattern":"func","path":"sub/deep"}`, false, "sub/deep/c.go:4: func C() {}\n", nil},
		{"path is a file", `{"pattern":"package","path":"sub/b.go"}`, false, "sub/b.go:1: package sub\n", nil},
		{"case-insensitive flag", `{"pattern":"(?i)FUNC B"}`, false, "sub/b.go:2: func B() {}\n", nil},
		{"long line excerpt", `{"pattern":"NEEDLE"}`, false, "",
			[]string{"long/min.js:1: …", "NEEDLE", "… [line is 10006 bytes]"}},
		{"no match", `{"pattern":"zzz"}`, false, `no matches for "zzz" in the project root`, nil},
		{"invalid regex", `{"pattern":"func("}`, true, "",
			[]string{`invalid regex "func(": missing closing ): ` + "`func(`", "RE2"}},
		{"binary file by path", `{"pattern":"func","path":"bin.dat"}`, true, "", []string{"bin.dat is a binary file"}},
		{"missing path", `{"pattern":"x","path":"nope"}`, true, "", []string{"path nope does not exist"}},
		{"missing pattern", `{}`, true, "", []string{`missing properties: ["pattern"]`}},
	}
	runSearchCases(t, r, "grep", cases)
	if res := call(t, r, "grep", `{"pattern":"NEEDLE"}`); len(res.Output) > grepLineWidth+100 {
		t.Fatalf("long line not cut: %d bytes", len(res.Output))
	}
}

func TestSearchCaps(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 600 {
		files[fmt.Sprintf("many/f%03d.txt", i)] = "hit\nhit\n"
	}
	writeTree(t, root, files)
	r := NewRegistry(FileTools(root)...)
	cases := []struct {
		tool, args string
		lines      int // output lines including the note
		note       string
	}{
		{"list_dir", `{"path":"many"}`, 1 + listDirCap + 1, "[500 of 600 entries shown; use glob"},
		{"glob", `{"pattern":"many/*.txt"}`, globCap + 1, "[600 files matched; showing the 200 newest."},
		{"grep", `{"pattern":"hit"}`, grepCap + 1, "[stopped at 200 matches; more exist."},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			res := call(t, r, c.tool, c.args)
			if res.IsError {
				t.Fatal(res.Output)
			}
			mustContain(t, res.Output, c.note)
			if n := strings.Count(res.Output, "\n"); n != c.lines {
				t.Fatalf("%d lines, want %d", n, c.lines)
			}
		})
	}
}

func TestGrepCancelled(t *testing.T) {
	root := ignoreTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fileTool(root, "grep").Run(ctx, json.RawMessage(`{"pattern":"func"}`))
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err = %v, want context canceled", err)
	}
}

func BenchmarkGrep(b *testing.B) {
	root := b.TempDir()
	files := map[string]string{".gitignore": "vendor/\n"}
	var src strings.Builder
	for i := range 200 {
		fmt.Fprintf(&src, "func helper%d(x int) int { return x * %d }\n", i, i)
	}
	for i := range 50 {
		files[fmt.Sprintf("pkg%d/file%d.go", i%5, i)] = src.String() + fmt.Sprintf("func ServeHandler%d() {}\n", i)
		files[fmt.Sprintf("vendor/v%d.go", i)] = src.String()
	}
	writeTree(b, root, files)
	tool := fileTool(root, "grep")
	args := json.RawMessage(`{"pattern":"func \\w+Handler\\d+","glob":"*.go"}`)
	b.ReportAllocs()
	for b.Loop() {
		res, err := tool.Run(context.Background(), args)
		if err != nil || strings.Count(res.Output, "\n") != 50 {
			b.Fatalf("%v %q", err, res.Output)
		}
	}
}

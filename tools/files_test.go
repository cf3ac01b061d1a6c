package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"polly/memory/chat"
)

// fileTool is the file tool name of FileTools(root).
func fileTool(root, name string) Tool {
	t, ok := NewRegistry(FileTools(root)...).Get(name)
	if !ok {
		panic("no file tool " + name)
	}
	return t
}

// writeTree creates files (relative path → content) under root.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// call runs one tool call through a registry, so argument validation and
// the Access step run exactly as in the agent loop.
func call(t testing.TB, r *Registry, tool string, args any) Result {
	t.Helper()
	return callCtx(context.Background(), t, r, tool, args, Exec{Gate: AllowAll{}})
}

func callCtx(ctx context.Context, t testing.TB, r *Registry, tool string, args any, ex Exec) Result {
	t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	return r.Execute(ctx, chat.ToolCall{ID: "t", Name: tool, Arguments: raw}, ex)
}

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Fatalf("output does not contain %q:\n%s", w, got)
		}
	}
}

func numbered(from int, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", from+i, l)
	}
	return b.String()
}

func linesFile(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestFileToolNames(t *testing.T) {
	got := NewRegistry(FileTools(t.TempDir())...).Names()
	want := "edit_file glob grep list_dir read_file write_file"
	if strings.Join(got, " ") != want {
		t.Fatalf("names = %v, want %s", got, want)
	}
}

func TestReadFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"abc.txt":    "a\nb\nc\n",
		"nonl.txt":   "a\r\nb",
		"ten.txt":    linesFile(10),
		"long.txt":   "short\n" + strings.Repeat("x", 5000) + "\nend\n",
		"utf8.txt":   strings.Repeat("é", 3000) + "\n",
		"empty.txt":  "",
		"main.go":    "package main\n",
		"bin.dat":    "ab\x00cd",
		"many.txt":   linesFile(5123),
		"wide.txt":   strings.Repeat(strings.Repeat("w", 1000)+"\n", 2000),
		"dir/x.txt":  "x",
		"blanks.txt": "\n\n",
	})
	r := NewRegistry(FileTools(root)...)
	cases := []struct {
		name    string
		args    string
		wantErr bool
		want    []string
		exact   string
	}{
		{"numbered", `{"path":"abc.txt"}`, false, nil, numbered(1, "a", "b", "c")},
		{"no trailing newline, CRLF", `{"path":"nonl.txt"}`, false, nil, numbered(1, "a", "b")},
		{"blank lines count", `{"path":"blanks.txt"}`, false, nil, numbered(1, "", "")},
		{"offset and limit", `{"path":"ten.txt","offset":3,"limit":2}`, false, nil,
			numbered(3, "line 3", "line 4") + "[lines 3-4 of 10 shown; call read_file with offset=5 to continue]\n"},
		{"offset to end", `{"path":"ten.txt","offset":9}`, false, nil, numbered(9, "line 9", "line 10")},
		{"absolute path", `{"path":"` + filepath.Join(root, "abc.txt") + `"}`, false, nil, numbered(1, "a", "b", "c")},
		{"default limit 2000", `{"path":"many.txt"}`, false,
			[]string{"  2000\tline 2000\n", "[lines 1-2000 of 5123 shown; call read_file with offset=2001 to continue]"}, ""},
		{"output byte cap", `{"path":"wide.txt"}`, false, []string{"output limit of 256 KB reached", "call read_file with offset="}, ""},
		{"long line cut", `{"path":"long.txt"}`, false, []string{"line cut at 2000 chars; 5000 bytes in total", "     3\tend\n"}, ""},
		{"utf8 line cut", `{"path":"utf8.txt"}`, false, []string{strings.Repeat("é", 2000) + "… [line cut at 2000 chars; 6000 bytes in total]"}, ""},
		{"empty", `{"path":"empty.txt"}`, false, []string{"empty.txt is empty"}, ""},
		{"offset past end", `{"path":"ten.txt","offset":20}`, true, []string{"offset 20 is past the end of ten.txt, which has 10 lines"}, ""},
		{"binary", `{"path":"bin.dat"}`, true, []string{"bin.dat looks like a binary file"}, ""},
		{"directory", `{"path":"dir"}`, true, []string{"dir is a directory; use list_dir"}, ""},
		{"missing with suggestion", `{"path":"mian.go"}`, true, []string{"file mian.go does not exist; did you mean: main.go?"}, ""},
		{"missing path arg", `{}`, true, []string{`missing properties: ["path"]`}, ""},
		{"negative offset", `{"path":"abc.txt","offset":-1}`, true, []string{"offset"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, r, "read_file", c.args)
			if res.IsError != c.wantErr {
				t.Fatalf("IsError = %v, want %v:\n%s", res.IsError, c.wantErr, res.Output)
			}
			if c.exact != "" && res.Output != c.exact {
				t.Fatalf("output:\n%q\nwant:\n%q", res.Output, c.exact)
			}
			mustContain(t, res.Output, c.want...)
		})
	}
}

// TestReadFileHuge reads the head of a 200 MB file: the first MiB is text,
// the rest a sparse hole. Scanning it all would take far longer than the
// limit, and counting its lines would find only the text ones.
func TestReadFileHuge(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "huge.log")
	var b strings.Builder
	for i := 1; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "%08d some log text\n", i)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 200<<20); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(FileTools(root)...)
	start := time.Now()
	res := call(t, r, "read_file", map[string]any{"path": "huge.log"})
	took := time.Since(start)
	if res.IsError {
		t.Fatal(res.Output)
	}
	mustContain(t, res.Output, "  2000\t00002000 some log text\n",
		"[lines 1-2000 shown; more lines follow (file is 200.0 MB); call read_file with offset=2001 to continue]")
	if strings.Count(res.Output, "\n") != 2001 {
		t.Fatalf("want 2000 lines and a note, got %d lines", strings.Count(res.Output, "\n"))
	}
	if took > 500*time.Millisecond {
		t.Fatalf("read_file took %v on a 200 MB file; it must not read it all", took)
	}
	t.Logf("200 MB file: first 2000 lines in %v", took)
}

func TestWriteFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"old.sh": "echo old\n", "d/keep": ""})
	if err := os.Chmod(filepath.Join(root, "old.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(FileTools(root)...)

	t.Run("create with parents", func(t *testing.T) {
		res := call(t, r, "write_file", map[string]string{"path": "a/b/new.txt", "content": "hello\n"})
		if res.IsError {
			t.Fatal(res.Output)
		}
		mustContain(t, res.Output, "created a/b/new.txt (6 bytes written)")
		mustContain(t, res.Diff, "--- /dev/null", "+++ b/a/b/new.txt", "+hello")
		if len(res.Files) != 1 || res.Files[0] != "a/b/new.txt" {
			t.Fatalf("Files = %v", res.Files)
		}
		got, _ := os.ReadFile(filepath.Join(root, "a/b/new.txt"))
		if string(got) != "hello\n" {
			t.Fatalf("content = %q", got)
		}
	})
	t.Run("overwrite keeps mode", func(t *testing.T) {
		res := call(t, r, "write_file", map[string]string{"path": "old.sh", "content": "echo new\n"})
		if res.IsError {
			t.Fatal(res.Output)
		}
		mustContain(t, res.Output, "overwrote old.sh (9 bytes written; was 9 bytes)")
		mustContain(t, res.Diff, "--- a/old.sh", "+++ b/old.sh", "-echo old", "+echo new")
		fi, err := os.Stat(filepath.Join(root, "old.sh"))
		if err != nil || fi.Mode().Perm() != 0o750 {
			t.Fatalf("mode = %v, %v; want 0750", fi.Mode().Perm(), err)
		}
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".polly-") {
				t.Fatalf("temporary file left behind: %s", e.Name())
			}
		}
	})
	t.Run("unchanged", func(t *testing.T) {
		res := call(t, r, "write_file", map[string]string{"path": "old.sh", "content": "echo new\n"})
		mustContain(t, res.Output, "already has this content")
	})
	t.Run("directory", func(t *testing.T) {
		res := call(t, r, "write_file", map[string]string{"path": "d", "content": "x"})
		if !res.IsError {
			t.Fatal("writing over a directory succeeded")
		}
		mustContain(t, res.Output, "d is a directory")
	})
	t.Run("missing content", func(t *testing.T) {
		res := call(t, r, "write_file", `{"path":"x"}`)
		mustContain(t, res.Output, `missing properties: ["content"]`)
	})
	t.Run("access", func(t *testing.T) {
		tool, _ := r.Get("write_file")
		acc, err := tool.Access(context.Background(), json.RawMessage(`{"path":"old.sh","content":"echo newer\n"}`))
		if err != nil {
			t.Fatal(err)
		}
		if acc.Kind != AccessWrite || len(acc.Paths) != 1 || acc.Paths[0] != filepath.Join(root, "old.sh") {
			t.Fatalf("access = %+v", acc)
		}
		mustContain(t, acc.Preview, "-echo new", "+echo newer")
		outside := filepath.Join(t.TempDir(), "x", "..", "new.txt")
		acc, err = tool.Access(context.Background(), json.RawMessage(`{"path":"`+outside+`","content":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		if acc.Paths[0] != filepath.Clean(outside) {
			t.Fatalf("outside path = %q, want %q", acc.Paths[0], filepath.Clean(outside))
		}
		mustContain(t, acc.Preview, "new file "+filepath.Clean(outside)+" (2 bytes):\nhi")
	})
}

// recordGate records what the permission gate was asked.
type recordGate struct{ asked []Access }

func (g *recordGate) Allow(_ context.Context, _ string, a Access) error {
	g.asked = append(g.asked, a)
	return nil
}

func TestEditFile(t *testing.T) {
	const goSrc = "package main\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n"
	cases := []struct {
		name    string
		file    string // content of f.go; "" means it does not exist
		args    map[string]any
		wantErr bool
		want    []string
		after   string // expected file content after a successful edit
	}{
		{"success gives unified diff", goSrc,
			map[string]any{"old_string": "fmt.Println(\"hi\")", "new_string": "fmt.Println(\"bye\")"}, false,
			[]string{"edited f.go: replaced 1 occurrence", "--- a/f.go\n+++ b/f.go\n@@ -1,5 +1,5 @@", "-\tfmt.Println(\"hi\")", "+\tfmt.Println(\"bye\")"},
			"package main\n\nfunc main() {\n\tfmt.Println(\"bye\")\n}\n"},
		{"missing file", "", map[string]any{"old_string": "a", "new_string": "b"}, true,
			[]string{"file f.go does not exist (use write_file to create it)"}, ""},
		{"empty old_string", goSrc, map[string]any{"old_string": "", "new_string": "b"}, true,
			[]string{"old_string is empty; to create a file or replace all of its content use write_file"}, ""},
		{"identical", goSrc, map[string]any{"old_string": "main", "new_string": "main"}, true,
			[]string{"identical"}, ""},
		{"not found", goSrc, map[string]any{"old_string": "nothing like it", "new_string": "b"}, true,
			[]string{"old_string not found in f.go; the file may have changed"}, ""},
		{"whitespace hint", goSrc, map[string]any{"old_string": "func main() {\n    fmt.Println(\"hi\")", "new_string": "x"}, true,
			[]string{"old_string not found in f.go, but lines 3-4 match when whitespace and indentation are ignored", "     4\t\tfmt.Println(\"hi\")"}, ""},
		{"first line hint", goSrc, map[string]any{"old_string": "func main() {\n\tfmt.Println(\"ho\")", "new_string": "x"}, true,
			[]string{"its first line occurs at line 3"}, ""},
		{"line number prefixes", goSrc, map[string]any{"old_string": "     3\tfunc main() {", "new_string": "x"}, true,
			[]string{"line-number prefixes"}, ""},
		{"not unique", "x = 1\ny\nx = 1\nz\nx = 1\n", map[string]any{"old_string": "x = 1", "new_string": "x = 2"}, true,
			[]string{"old_string occurs 3 times in f.go (lines 1, 3, 5); include more surrounding lines", "set replace_all"}, ""},
		{"replace_all", "x = 1\ny\nx = 1\nz\nx = 1\n", map[string]any{"old_string": "x = 1", "new_string": "x = 2", "replace_all": true}, false,
			[]string{"replaced 3 occurrences", "-x = 1", "+x = 2"}, "x = 2\ny\nx = 2\nz\nx = 2\n"},
		{"CRLF file", "a\r\nb\r\nc\r\n", map[string]any{"old_string": "a\nb", "new_string": "A\nB"}, false,
			[]string{"replaced 1 occurrence"}, "A\r\nB\r\nc\r\n"},
		{"missing new_string", goSrc, map[string]any{"old_string": "main"}, true,
			[]string{`missing properties: ["new_string"]`}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(root, "f.go")
			if c.file != "" {
				writeTree(t, root, map[string]string{"f.go": c.file})
				if err := os.Chmod(p, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c.args["path"] = "f.go"
			gate := &recordGate{}
			res := callCtx(context.Background(), t, NewRegistry(FileTools(root)...), "edit_file", c.args, Exec{Gate: gate})
			if res.IsError != c.wantErr {
				t.Fatalf("IsError = %v, want %v:\n%s", res.IsError, c.wantErr, res.Output)
			}
			mustContain(t, res.Output, c.want...)
			got, _ := os.ReadFile(p)
			if c.wantErr {
				if string(got) != c.file {
					t.Fatalf("failed edit changed the file to %q", got)
				}
				if len(gate.asked) != 0 {
					t.Fatalf("gate asked about an edit that cannot apply: %+v", gate.asked)
				}
				return
			}
			if string(got) != c.after {
				t.Fatalf("file = %q, want %q", got, c.after)
			}
			if res.Diff == "" || !strings.Contains(res.Output, res.Diff) {
				t.Fatalf("Diff %q not in output", res.Diff)
			}
			if len(gate.asked) != 1 || gate.asked[0].Kind != AccessWrite || gate.asked[0].Preview != res.Diff {
				t.Fatalf("gate asked %+v; want one write with the diff as preview", gate.asked)
			}
			if len(res.Files) != 1 || res.Files[0] != "f.go" {
				t.Fatalf("Files = %v", res.Files)
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}

func TestEditFileThroughSymlink(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"real.txt": "one\n"})
	if err := os.Symlink("real.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	res := call(t, NewRegistry(FileTools(root)...), "edit_file", map[string]any{"path": "link.txt", "old_string": "one", "new_string": "two"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	if fi, err := os.Lstat(filepath.Join(root, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if got, _ := os.ReadFile(filepath.Join(root, "real.txt")); string(got) != "two\n" {
		t.Fatalf("target = %q", got)
	}
}

func BenchmarkReadFile(b *testing.B) {
	root := b.TempDir()
	writeTree(b, root, map[string]string{"f.go": strings.Repeat("\tif err != nil { return fmt.Errorf(\"x: %w\", err) }\n", 2000)})
	tool := fileTool(root, "read_file")
	args := json.RawMessage(`{"path":"f.go"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Run(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSpecialFilesNeverOpened: opening a FIFO blocks until a writer comes,
// so no tool may open one.
func TestSpecialFilesNeverOpened(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "needle\n"})
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("pipe", filepath.Join(root, "pipe-link")); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(FileTools(root)...)
	cases := []struct {
		tool, args string
		want       string
	}{
		{"read_file", `{"path":"pipe"}`, "pipe is not a regular file"},
		{"edit_file", `{"path":"pipe","old_string":"a","new_string":"b"}`, "pipe is not a regular file"},
		{"write_file", `{"path":"pipe-link","content":"x"}`, "pipe is not a regular file"},
		{"grep", `{"pattern":"needle"}`, "a.txt:1: needle"},
		{"grep", `{"pattern":"needle","path":"pipe-link"}`, "pipe-link is not a regular file"},
	}
	for _, c := range cases {
		done := make(chan Result, 1)
		go func() { done <- call(t, r, c.tool, c.args) }()
		select {
		case res := <-done:
			mustContain(t, res.Output, c.want)
		case <-time.After(3 * time.Second):
			t.Fatalf("%s %s blocked on a FIFO", c.tool, c.args)
		}
	}
}

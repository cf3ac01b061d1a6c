package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"polly/memory/chat"
)

type denyGate struct{}

func (denyGate) Allow(context.Context, string, Access) error { return &Denied{Reason: "fuzz"} }

// FuzzToolArguments feeds arbitrary argument JSON to every file, search and
// shell tool. A gate that denies everything keeps Run from acting (the
// fuzzer must not run commands); decoding, schema validation and Access
// must never panic and must always answer with a result.
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"a.go"}`, `{"path":"a.go","old_string":"x","new_string":"y"}`, `{"command":"ls"}`,
		`{"pattern":"(","path":"."}`, `{"path":"../../etc/passwd"}`, `{"path":123}`, `[1,2]`, `null`, `{"path":"a","offset":-1,"limit":1e309}`,
		`{"pattern":"**/*.go","path":"/"}`, "{\"path\":\"\\u0000\"}", `{"content":"x","path":"dir/"}`} {
		for _, name := range []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "run_command"} {
			f.Add(name, s)
		}
	}
	root := f.TempDir()
	os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\nfunc x() {}\n"), 0o644)
	r := NewRegistry(FileTools(root)...)
	r.Add(ShellTool(root, ShellOptions{}))
	f.Fuzz(func(t *testing.T, name, args string) {
		res := r.Execute(context.Background(), chat.ToolCall{ID: "f", Name: name, Arguments: args}, Exec{Gate: denyGate{}})
		if res.Output == "" {
			t.Fatalf("%s(%q): empty result", name, args)
		}
		if !res.IsError && (name == "write_file" || name == "edit_file" || name == "run_command") {
			t.Fatalf("%s ran past a denying gate: %q", name, res.Output)
		}
	})
}

// FuzzEditFile: for any file content and strings, edit_file either refuses
// with an error and leaves the file alone, or makes exactly the replacement
// strings.Replace would.
func FuzzEditFile(f *testing.F) {
	f.Add("hello world\n", "world", "polly", false)
	f.Add("a\na\na\n", "a", "b", true)
	f.Add("a\na\n", "a", "b", false)
	f.Add("line\r\nline two\r\n", "two", "2", false)
	f.Add("tabs\tand  spaces\n", "and spaces", "x", false)
	f.Add("", "", "x", false)
	f.Add("ünïcödé ✓\n", "ï", "i", true)
	root := f.TempDir()
	r := NewRegistry(FileTools(root)...)
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		if !utf8.ValidString(old) || !utf8.ValidString(new) {
			return // tool arguments arrive as JSON strings, always valid UTF-8
		}
		path := filepath.Join(root, "f.txt")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		args := map[string]any{"path": "f.txt", "old_string": old, "new_string": new, "replace_all": all}
		res := r.Execute(context.Background(), chat.ToolCall{Name: "edit_file", Arguments: mustJSON(t, args)}, Exec{Gate: AllowAll{}})
		got, _ := os.ReadFile(path)
		if res.IsError {
			if string(got) != content {
				t.Fatalf("a refused edit changed the file: %q", res.Output)
			}
			return
		}
		n := strings.Count(content, old)
		if old == "" || old == new || n == 0 || (n > 1 && !all) {
			// Line-ending or whitespace-tolerant matches may apply; only
			// check the plain cases exactly.
			return
		}
		want := strings.Replace(content, old, new, -1)
		if !all {
			want = strings.Replace(content, old, new, 1)
		}
		if string(got) != want {
			t.Fatalf("edit of %q: %q → %q gave %q, want %q", content, old, new, got, want)
		}
	})
}

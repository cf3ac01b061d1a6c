package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 17: every tool's description is the text of its file
// descriptions/<tool>.md, read from disk here (not through the embed), and
// every file there describes a tool. The two templated files get the
// values the code passes in.
func TestEveryToolDescriptionIsItsFile(t *testing.T) {
	var all []Tool
	all = append(all, FileTools(t.TempDir())...)
	all = append(all, ShellTool(t.TempDir(), ShellOptions{DefaultTimeout: 7 * time.Second, MaxTimeout: 9 * time.Second}))
	all = append(all, WebTools(WebOptions{})...)
	all = append(all, LeadTools(nil, t.TempDir())...)
	all = append(all, WorkspaceTools(nil)...)
	all = append(all, OutputTools(nil)...)
	all = append(all, TaskPlanTool(nil), SkillTool(nil))
	values := strings.NewReplacer("{{.DefaultTimeout}}", "7", "{{.MaxTimeout}}", "9",
		"{{.Header}}", strings.Join(LeadsCSVHeader, ", "))

	described := map[string]bool{}
	for _, tool := range all {
		b, err := os.ReadFile(filepath.Join("descriptions", tool.Name()+".md"))
		if err != nil {
			t.Errorf("%s: %v", tool.Name(), err)
			continue
		}
		want := values.Replace(strings.TrimRight(string(b), "\n"))
		got := tool.Description()
		if strings.TrimSpace(got) == "" || got != want {
			t.Errorf("%s: description\n%q\nwant the file's text\n%q", tool.Name(), got, want)
		}
		if strings.Contains(got, "{{") {
			t.Errorf("%s: template action left in the description: %q", tool.Name(), got)
		}
		described[tool.Name()+".md"] = true
	}
	files, err := os.ReadDir("descriptions")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !described[f.Name()] {
			t.Errorf("descriptions/%s describes no tool", f.Name())
		}
	}
}

// A missing description is a programming error caught at start-up.
func TestMissingDescriptionPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "no_such_tool") {
			t.Fatalf("recovered %v, want a panic naming the tool", r)
		}
	}()
	description("no_such_tool")
}

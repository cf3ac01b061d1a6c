package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// Issue 17: the description of every tool in every persona's first request,
// as the fake server received it, is the text of the tool's file
// (tools/descriptions/<tool>.md, or agent/descriptions/ for the tools the
// agent binds); a file with template actions matches with any value in
// their place.
func TestToolDescriptionsOnTheWireAreTheFiles(t *testing.T) {
	srv := llmtest.NewServer(t)
	a, sess, _ := wired(t, srv, "ask")
	seen := map[string]bool{}
	for i, p := range a.Personas.All() {
		srv.Push(llmtest.Text("hi"))
		if _, err := sess.Send(context.Background(), p.ID, "hello"); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Tools []struct {
				Function struct {
					Name        string `json:"name"`
					Description string `json:"description"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(srv.Requests()[i].Raw, &body); err != nil {
			t.Fatal(err)
		}
		for _, tl := range body.Tools {
			name, got := tl.Function.Name, tl.Function.Description
			file := descriptionFile(t, name)
			if !descriptionMatches(file, got) {
				t.Errorf("%s (persona %s): description on the wire\n%q\nis not the file's text\n%q", name, p.ID, got, file)
			}
			seen[name] = true
		}
	}
	for _, name := range []string{"read_file", "run_command", "fetch_url", "leads_export", "task_plan", "delegate_task", "workspace_save_fact"} {
		if !seen[name] {
			t.Errorf("no request offered %s", name)
		}
	}
}

// descriptionFile reads the description file of a tool, from the tools
// package or the agent package.
func descriptionFile(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range []string{"../../tools/descriptions", "../descriptions"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".md"))
		if err == nil {
			return strings.TrimRight(string(b), "\n")
		}
	}
	t.Fatalf("tool %s has no description file", name)
	return ""
}

// descriptionMatches compares a description with its file, where each
// {{…}} action of the file stands for a non-empty value without a newline.
func descriptionMatches(file, got string) bool {
	action := regexp.MustCompile(`\{\{[^}]*\}\}`)
	literals := action.Split(file, -1)
	for i, l := range literals {
		literals[i] = regexp.QuoteMeta(l)
	}
	return regexp.MustCompile(`^` + strings.Join(literals, `[^\n{}]+`) + `$`).MatchString(got)
}

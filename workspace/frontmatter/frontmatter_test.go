package frontmatter

import (
	"strings"
	"testing"
)

type meta struct {
	Name  string `yaml:"name"`
	Hint  Text   `yaml:"argument-hint"`
	Tools List   `yaml:"tools"`
}

func TestSplitAndDecode(t *testing.T) {
	front, body, has, err := Split([]byte("\xef\xbb\xbf---\r\nname: x\r\n---\r\n\r\nbody\r\n"))
	if err != nil || !has || front != "name: x" || body != "body\n" {
		t.Fatalf("split: %q %q %v %v", front, body, has, err)
	}
	if _, body, has, _ := Split([]byte("# just Markdown\n")); has || body != "# just Markdown\n" {
		t.Fatalf("no front matter: %v %q", has, body)
	}
	if _, _, _, err := Split([]byte("---\nname: x\n")); err == nil || !strings.Contains(err.Error(), "not closed") {
		t.Fatalf("unclosed: %v", err)
	}
	for _, tt := range []struct {
		front, hint, tools, unknown string
	}{
		{"name: a\nargument-hint: [message]\ntools: [Read, Grep]\ncolor: red", "[message]", "Read|Grep", "color"},
		{"name: a\ntools: Read, Bash(git add *)", "", "Read|Bash(git add *)", ""},
		{"name: a\ntools: Read Bash(git add *)", "", "Read|Bash(git add *)", ""},
		{"name: a\nargument-hint: [pr] [priority]\ntools: Read", "[pr] [priority]", "Read", ""}, // not YAML: read line by line
	} {
		var m meta
		res, err := Decode(tt.front, &m)
		if err != nil || m.Name != "a" || string(m.Hint) != tt.hint || strings.Join(m.Tools, "|") != tt.tools || strings.Join(res.Unknown, ",") != tt.unknown {
			t.Errorf("%q: %+v %+v %v", tt.front, m, res, err)
		}
	}
	var m meta
	if _, err := Decode("name: a\n  bad: [", &m); err == nil || !strings.Contains(err.Error(), "not valid YAML") {
		t.Fatalf("broken: %v", err)
	}
	if res, _ := Decode("name: a\nretries: 2", &m); strings.Join(res.Warnings(), "") != `unknown front matter field "retries" ignored` {
		t.Fatalf("warnings: %q", res.Warnings())
	}
}

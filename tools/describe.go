package tools

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"text/template"
)

// descriptions holds what the model reads about each tool, one file a tool
// (descriptions/<tool>.md), so the text is reviewed as text, not as Go
// string literals.
//
//go:embed descriptions/*.md
var descriptions embed.FS

// description returns the text of descriptions/<name>.md.
func description(name string) string { return Describe(descriptions, name, nil) }

// Describe returns descriptions/<name>.md of fsys without its final
// newline. With data, the file is a text/template executed with data (for
// values the code owns, such as timeouts). A missing file or a broken
// template is a programming error: it panics at start-up, like a schema
// that cannot be inferred.
func Describe(fsys fs.FS, name string, data any) string {
	b, err := fs.ReadFile(fsys, "descriptions/"+name+".md")
	if err != nil {
		panic(fmt.Sprintf("tool %s: description: %v", name, err))
	}
	text := strings.TrimRight(string(b), "\n")
	if data == nil {
		return text
	}
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		panic(fmt.Sprintf("tool %s: description template: %v", name, err))
	}
	var out strings.Builder
	if err := t.Execute(&out, data); err != nil {
		panic(fmt.Sprintf("tool %s: description template: %v", name, err))
	}
	return out.String()
}

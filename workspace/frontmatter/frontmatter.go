// Package frontmatter reads the YAML front matter of the Markdown files
// other agents use for skills, commands and sub-agents. Those files are
// the user's ecosystem, so the reader is lenient: fields a caller does not
// know are returned for a warning instead of failing the file.
package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Split separates a Markdown file's front matter (between a first line
// "---" and the next "---") from its body. has is false when the file has
// none: the body is then the whole text.
func Split(data []byte) (front, body string, has bool, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return "", text, false, nil
	}
	front, body, ok = strings.Cut(rest, "\n---\n")
	if !ok {
		front, ok = strings.CutSuffix(strings.TrimRight(rest, "\n"), "\n---")
		if !ok {
			return "", "", true, errors.New("front matter is not closed by a line \"---\"")
		}
		body = ""
	}
	return front, strings.TrimLeft(body, "\n"), true, nil
}

// Result says how front matter was read.
type Result struct {
	Unknown []string // keys v has no field for, in file order
}

// Decode reads front into v (a pointer to a struct with yaml tags). Front
// matter that is not valid YAML but plain "key: value" lines
// (argument-hint: [pr] [priority], which other tools accept) is read line
// by line; anything else is an error.
func Decode(front string, v any) (Result, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		if unknown, ok := decodeLines(front, v); ok {
			return Result{Unknown: unknown}, nil
		}
		return Result{}, fmt.Errorf("front matter is not valid YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return Result{}, nil // empty front matter
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return Result{}, errors.New("front matter is not a list of key: value lines")
	}
	var res Result
	known := keys(reflect.TypeOf(v).Elem())
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; !slices.Contains(known, k) {
			res.Unknown = append(res.Unknown, k)
		}
	}
	if err := root.Decode(v); err != nil {
		return res, fmt.Errorf("front matter: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return res, nil
}

// Warnings are what a caller tells the user about a Result: one line per
// unknown field.
func (r Result) Warnings() []string {
	var out []string
	for _, k := range r.Unknown {
		out = append(out, fmt.Sprintf("unknown front matter field %q ignored", k))
	}
	return out
}

// decodeLines reads "key: value" lines into v's string and List fields.
// ok is false when a line is not of that form or a value would need a
// field of another type.
func decodeLines(front string, v any) (unknown []string, ok bool) {
	rv := reflect.ValueOf(v).Elem()
	fields := map[string]reflect.Value{}
	for i := range rv.NumField() {
		if k, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("yaml"), ","); k != "" {
			fields[k] = rv.Field(i)
		}
	}
	for _, line := range strings.Split(front, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		key, val, found := strings.Cut(line, ":")
		if !found || key != strings.TrimSpace(key) || key == "" {
			return nil, false
		}
		val = strings.Trim(strings.TrimSpace(val), `"'`)
		f, known := fields[key]
		switch {
		case !known:
			unknown = append(unknown, key)
		case f.Kind() == reflect.String:
			f.SetString(val)
		case f.Type() == reflect.TypeFor[List]():
			f.Set(reflect.ValueOf(List(clean(splitList(strings.Trim(val, "[]"))))))
		case f.Kind() == reflect.Interface:
			f.Set(reflect.ValueOf(val))
		default:
			return nil, false
		}
	}
	return unknown, true
}

func keys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			out = append(out, k)
		}
	}
	return out
}

// Text is a string field that tools also write as a YAML list
// (argument-hint: [message] is a list in YAML): a list comes back as
// "[a] [b]".
type Text string

// UnmarshalYAML accepts a scalar or a list of scalars.
func (t *Text) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*t = Text(n.Value)
	case yaml.SequenceNode:
		var items []string
		if err := n.Decode(&items); err != nil {
			return err
		}
		parts := make([]string, len(items))
		for i, s := range items {
			parts[i] = "[" + s + "]"
		}
		*t = Text(strings.Join(parts, " "))
	default:
		return fmt.Errorf("line %d: expected text", n.Line)
	}
	return nil
}

// List is a field that tools write either as a YAML list or as one string
// separated by commas or spaces ("Read, Grep" or "Read Grep").
type List []string

// UnmarshalYAML accepts both spellings.
func (l *List) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		var items []string
		if err := n.Decode(&items); err != nil {
			return err
		}
		*l = clean(items)
	case yaml.ScalarNode:
		*l = clean(splitList(n.Value))
	default:
		return fmt.Errorf("line %d: expected a list or a string", n.Line)
	}
	return nil
}

// splitList splits on commas, or on spaces outside parentheses when there
// is no comma ("Bash(git add *) Read").
func splitList(s string) []string {
	if strings.Contains(s, ",") {
		return strings.Split(s, ",")
	}
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ' ' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func clean(items []string) []string {
	out := []string{}
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

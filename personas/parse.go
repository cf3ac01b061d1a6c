package personas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
)

// fileJSON is the JSON form of a persona. Pointers tell a field that is
// missing (fall back to the built-in) from one set to its zero value.
type fileJSON struct {
	ID           *string   `json:"id"`
	Name         *string   `json:"name"`
	Role         *string   `json:"role"`
	Description  *string   `json:"description"`
	Temperature  *float64  `json:"temperature"`
	Model        *string   `json:"model"`
	Tools        *[]string `json:"tools"`
	Key          *string   `json:"key"`
	SystemPrompt *string   `json:"system_prompt"`
}

func knownFields() []string {
	return []string{"id", "name", "role", "description", "temperature", "model", "tools", "key", "system_prompt"}
}

// peekID returns the id a file declares, for matching it with a built-in.
func peekID(data []byte) (string, error) {
	var f fileJSON
	if err := decode(data, &f); err != nil {
		return "", err
	}
	if f.ID == nil || strings.TrimSpace(*f.ID) == "" {
		return "", errors.New(`"id" is missing`)
	}
	return strings.TrimSpace(*f.ID), nil
}

// parse builds a persona from a JSON file, on top of base when the file
// overrides a built-in. warns are problems the persona loads despite (an
// unknown tool is dropped, an unknown field ignored); err means skip it.
func parse(data []byte, base *Persona, source string) (p Persona, warns []error, err error) {
	var raw map[string]json.RawMessage
	if err := decode(data, &raw); err != nil {
		return p, nil, err
	}
	for k := range raw {
		if !slices.Contains(knownFields(), k) {
			warns = append(warns, fmt.Errorf("unknown field %q ignored (fields: %s)", k, strings.Join(knownFields(), ", ")))
		}
	}
	slices.SortFunc(warns, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	var f fileJSON
	if err := decode(data, &f); err != nil {
		return p, warns, err
	}

	if f.ID == nil {
		return p, warns, errors.New(`"id" is missing`)
	}
	id := strings.TrimSpace(*f.ID)
	if err := checkID(id); err != nil {
		return p, warns, err
	}
	if base != nil {
		p = base.clone()
	} else {
		p = Persona{ID: id, Name: id, Temperature: newTemperature, Tools: specialistTools()}
		if f.SystemPrompt == nil {
			return p, warns, errors.New(`"system_prompt" is missing (a new persona needs one)`)
		}
	}
	p.Source = source

	str := func(field string, v *string, dst *string, required bool) error {
		if v == nil {
			return nil
		}
		s := strings.TrimSpace(*v)
		if required && s == "" {
			return fmt.Errorf("%q is empty", field)
		}
		if field != "system_prompt" && field != "description" && strings.ContainsAny(s, "\n\r\t") {
			return fmt.Errorf("%q must be one line", field)
		}
		*dst = s
		return nil
	}
	for _, e := range []error{
		str("name", f.Name, &p.Name, true),
		str("role", f.Role, &p.Role, false),
		str("description", f.Description, &p.Description, false),
		str("model", f.Model, &p.Model, false),
		str("key", f.Key, &p.Key, false),
		str("system_prompt", f.SystemPrompt, &p.SystemPrompt, true),
	} {
		if e != nil {
			return p, warns, e
		}
	}
	if f.SystemPrompt != nil {
		p.SystemPrompt = *f.SystemPrompt // keep the author's layout, only checked above
	}
	if f.Temperature != nil {
		t := *f.Temperature
		if math.IsNaN(t) || t < 0 || t > 2 {
			return p, warns, fmt.Errorf(`"temperature" is %v; it must be between 0 and 2`, t)
		}
		p.Temperature = t
	}
	if f.Tools != nil {
		var unknown []string
		p.Tools, unknown = checkTools(*f.Tools)
		if len(unknown) > 0 {
			warns = append(warns, fmt.Errorf("unknown tools %s left out (known: %s)",
				strings.Join(unknown, ", "), strings.Join(KnownTools(), ", ")))
		}
	}
	return p, warns, nil
}

// decode unmarshals data and turns syntax and type errors into messages
// with a line and column.
func decode(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return fmt.Errorf("bad JSON at line %d, column %d: %v", line, col, syn)
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		if typ.Field == "" {
			return fmt.Errorf("bad JSON at line %d, column %d: want an object, got %s", line, col, typ.Value)
		}
		return fmt.Errorf("bad JSON at line %d, column %d: %q must be %s, got %s", line, col, typ.Field, kindName(typ.Type), typ.Value)
	}
	return fmt.Errorf("bad JSON: %w", err)
}

// kindName says what a JSON value of Go type t looks like.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(kindName(t.Elem()), "a ") + "s"
	}
	return t.String()
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

func checkID(id string) error {
	if id == "" {
		return errors.New(`"id" is empty`)
	}
	if len(id) > 64 {
		return fmt.Errorf("id %q is longer than 64 characters", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("id %q may hold only letters, digits, _ and -", id)
		}
	}
	return nil
}

// checkTools keeps the known tool names, in order and without repeats.
func checkTools(names []string) (ok, unknown []string) {
	known := KnownTools()
	ok = []string{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case slices.Contains(ok, n):
		case slices.Contains(known, n):
			ok = append(ok, n)
		case strings.HasPrefix(n, "mcp__"):
			// MCP tools by name or pattern ("mcp__github__*"): listing any
			// restricts the persona to the MCP tools they match.
			ok = append(ok, n)
		default:
			unknown = append(unknown, fmt.Sprintf("%q", n))
		}
	}
	return ok, unknown
}

// specialistTools is what an added persona gets when it lists none: every
// tool but delegate_task, since only the orchestrator delegates.
func specialistTools() []string {
	return slices.DeleteFunc(KnownTools(), func(n string) bool { return n == "delegate_task" })
}

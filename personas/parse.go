package personas

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"polly/workspace/jsonfile"
)

// fileJSON is a persona file's fields. Pointers tell a field that is
// missing (fall back to the built-in) from one set to its zero value.
type fileJSON struct {
	ID, Name, Role, Description, Model, Key, SystemPrompt *string
	Temperature                                           *float64
	Tools                                                 *[]string
}

// field is a key of a persona file and how its value is stored.
type field struct {
	key string
	set setter
}

// fields are the keys of a persona file, in the order the docs list them.
func fields(f *fileJSON) []field {
	return []field{
		{"id", setString(&f.ID)}, {"name", setString(&f.Name)}, {"role", setString(&f.Role)},
		{"description", setString(&f.Description)}, {"temperature", setNumber(&f.Temperature)},
		{"model", setString(&f.Model)}, {"tools", setStrings(&f.Tools)}, {"key", setString(&f.Key)},
		{"system_prompt", setString(&f.SystemPrompt)},
	}
}

// decode reads a persona file. Absent and null fields stay nil; unknown
// keys are warnings; every problem names its line and column.
func decode(data []byte) (f fileJSON, warns []error, err error) {
	doc, err := jsonfile.Parse(data)
	if err != nil {
		return f, nil, fmt.Errorf("bad JSON: %w", err)
	}
	if doc.Root == nil {
		return f, nil, errors.New("the file is empty")
	}
	known := fields(&f)
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = k.key
	}
	seen := map[string]bool{}
	for _, m := range doc.Root.Members {
		i := slices.Index(names, m.Key)
		switch {
		case i < 0:
			hint := "fields: " + strings.Join(names, ", ")
			if s := jsonfile.Closest(m.Key, names); s != "" {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			warns = append(warns, doc.ErrorAt(m.Off, fmt.Sprintf("unknown field %q ignored (%s)", m.Key, hint)))
		case seen[m.Key]:
			return f, warns, doc.ErrorAt(m.Off, fmt.Sprintf("%q is set twice", m.Key))
		case m.Val.Kind != jsonfile.Null:
			if want, bad := known[i].set(m.Val); bad != nil {
				return f, warns, doc.ErrorAt(bad.Off, fmt.Sprintf("%q must be %s, got %s", m.Key, want, bad.Describe()))
			}
		}
		seen[m.Key] = true
	}
	return f, warns, nil
}

// A setter stores a field's value, or returns what it should have been and
// the value at fault.
type setter func(*jsonfile.Node) (want string, bad *jsonfile.Node)

func setString(dst **string) setter {
	return func(n *jsonfile.Node) (string, *jsonfile.Node) {
		if n.Kind != jsonfile.String {
			return "a string", n
		}
		*dst = &n.Text
		return "", nil
	}
}

func setNumber(dst **float64) setter {
	return func(n *jsonfile.Node) (string, *jsonfile.Node) {
		v, err := strconv.ParseFloat(n.Text, 64)
		if n.Kind != jsonfile.Number || err != nil {
			return "a number", n
		}
		*dst = &v
		return "", nil
	}
}

func setStrings(dst **[]string) setter {
	return func(n *jsonfile.Node) (string, *jsonfile.Node) {
		if n.Kind != jsonfile.Array {
			return "a list of strings", n
		}
		list := make([]string, len(n.Elems))
		for i, e := range n.Elems {
			if e.Kind != jsonfile.String {
				return "a list of strings", e
			}
			list[i] = e.Text
		}
		*dst = &list
		return "", nil
	}
}

// id returns the id a file declares, for matching it with a built-in.
func (f fileJSON) id() (string, error) {
	if f.ID == nil {
		return "", errors.New(`"id" is missing`)
	}
	id := strings.TrimSpace(*f.ID)
	return id, checkID(id)
}

// parse builds a persona from a JSON file, on top of what base returns for
// its id (the built-in it overrides, or nil). warns are problems the
// persona loads despite (an unknown tool is dropped, an unknown field
// ignored); err means skip it.
func parse(data []byte, baseOf func(id string) *Persona, source string) (p Persona, warns []error, err error) {
	f, warns, err := decode(data)
	if err != nil {
		return p, warns, err
	}
	id, err := f.id()
	if err != nil {
		return p, warns, err
	}
	base := baseOf(id)
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

package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxToolName is the longest function name OpenAI-compatible providers accept.
const maxToolName = 64

// toolName is the name the model sees: mcp__<server>__<tool>, with
// characters providers reject replaced by "_".
func toolName(server, tool string) (string, error) {
	name := "mcp__" + clean(server) + "__" + clean(tool)
	if len(name) > maxToolName {
		return "", fmt.Errorf("the name %s is longer than %d characters, which providers reject", name, maxToolName)
	}
	return name, nil
}

func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// sanitize turns an MCP tool's input schema into one an OpenAI-compatible
// provider accepts: a plain object schema at the top, no $schema or $id
// (some providers reject unknown top-level keys), properties present. A
// schema that cannot be made acceptable is an error, and the tool is left
// out.
func sanitize(raw any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("schema cannot be encoded: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, errors.New("the input schema is not a JSON object")
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "enum", "if"} {
		if _, ok := m[k]; ok {
			return nil, fmt.Errorf("the input schema has %q at the top; providers require a plain object schema", k)
		}
	}
	switch t := m["type"].(type) {
	case nil:
		m["type"] = "object"
	case string:
		if t != "object" {
			return nil, fmt.Errorf("the input schema has type %q; providers require type \"object\"", t)
		}
	default:
		return nil, fmt.Errorf("the input schema's type is %v; providers require type \"object\"", t)
	}
	delete(m, "$schema")
	delete(m, "$id")
	if _, ok := m["properties"].(map[string]any); !ok {
		if _, present := m["properties"]; present {
			return nil, errors.New("the input schema's properties is not an object")
		}
		m["properties"] = map[string]any{}
	}
	b, _ = json.Marshal(m)
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("the input schema is not a valid JSON schema: %w", err)
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("the input schema cannot be used: %w", err)
	}
	return &s, nil
}

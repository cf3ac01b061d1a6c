package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Kind is the layer a value came from. The order is the precedence order.
type Kind int

const (
	KindDefault Kind = iota
	KindUserFile
	KindProjectFile
	KindEnv
	KindFlag
)

func (k Kind) String() string {
	switch k {
	case KindDefault:
		return "default"
	case KindUserFile:
		return "user-file"
	case KindProjectFile:
		return "project-file"
	case KindEnv:
		return "env"
	case KindFlag:
		return "flag"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText makes kinds readable in `polly config --json`.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Source says where an effective value came from.
type Source struct {
	Kind   Kind   `json:"kind"`
	Detail string `json:"detail,omitempty"` // file (~ abbreviated), variable name, or flag with dashes
	Line   int    `json:"line,omitempty"`   // 1-based, file sources only
	Col    int    `json:"col,omitempty"`
}

// String reads like "user ~/.config/polly/config.json:8", "env OPENAI_BASE_URL",
// "flag --mode" or "default".
func (s Source) String() string {
	switch s.Kind {
	case KindUserFile, KindProjectFile:
		prefix := "user "
		if s.Kind == KindProjectFile {
			prefix = "project "
		}
		if s.Line > 0 {
			return fmt.Sprintf("%s%s:%d", prefix, s.Detail, s.Line)
		}
		return prefix + s.Detail
	case KindEnv:
		return "env " + s.Detail
	case KindFlag:
		return "flag " + s.Detail
	}
	if s.Detail != "" {
		return "default (" + s.Detail + ")"
	}
	return "default"
}

// Source returns where the effective value of a field came from. Fields are
// JSON paths: "mode", "context.anchor_every",
// `providers.openai.models["gpt-4.1"].context_window` (keys that are not
// plain words are quoted), "permissions.allow[0]". "base_url" and "api_key"
// name the env or flag overrides of the active provider. A field no layer
// set reports KindDefault.
func (c *Config) Source(field string) Source {
	return c.sources[field]
}

// joinPath appends a key to a field path, quoting keys that would make the
// path ambiguous (model names like "gpt-4.1" contain dots).
func joinPath(base, key string) string {
	if !plainKey(key) {
		return base + "[" + strconv.Quote(key) + "]"
	}
	if base == "" {
		return key
	}
	return base + "." + key
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func indexPath(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

// displayPath abbreviates home to ~ so messages stay short and portable.
func displayPath(path, home string) string {
	if home != "" {
		sep := string(filepath.Separator)
		home = strings.TrimRight(home, sep)
		if path == home {
			return "~"
		}
		if rest, ok := strings.CutPrefix(path, home+sep); ok {
			return "~" + sep + rest
		}
	}
	return path
}

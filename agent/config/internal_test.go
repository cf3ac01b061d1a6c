package config

import (
	"errors"
	"io"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// ContextOverrides.apply copies fields by position, and both structs share
// check tags; a field added to one must be added to the other.
func TestOverridesMirrorSettings(t *testing.T) {
	s, o := reflect.TypeFor[ContextSettings](), reflect.TypeFor[ContextOverrides]()
	if s.NumField() != o.NumField() {
		t.Fatalf("%d settings, %d overrides", s.NumField(), o.NumField())
	}
	for i := range s.NumField() {
		sf, of := s.Field(i), o.Field(i)
		if sf.Name != of.Name || sf.Tag != of.Tag || reflect.PointerTo(sf.Type) != of.Type {
			t.Errorf("field %d: %s %s %q vs %s %s %q", i, sf.Name, sf.Type, sf.Tag, of.Name, of.Type, of.Tag)
		}
	}
}

// Every check tag must name a known rule, or a typo would silently disable it.
func TestCheckTagsAreKnown(t *testing.T) {
	known := map[string]bool{"min": true, "max": true, "gt": true, "oneof": true, "nonempty": true, "name": true,
		"url": true, "envname": true, "path": true, "regex": true, "secret": true, "keys": true}
	var walk func(reflect.Type, int)
	walk = func(ty reflect.Type, depth int) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || depth > 5 {
			return
		}
		for i := range ty.NumField() {
			f := ty.Field(i)
			for _, rule := range strings.Fields(f.Tag.Get("check")) {
				if op, _, _ := strings.Cut(rule, "="); !known[op] {
					t.Errorf("%s.%s: unknown check %q", ty.Name(), f.Name, rule)
				}
			}
			walk(f.Type, depth+1)
		}
	}
	walk(reflect.TypeFor[Config](), 0)
}

func TestMaskSecret(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sk-proj-abcdefghijklmnopabcd", "sk-…abcd"},
		{"gsk_0123456789wxyz", "…wxyz"},
		{"short", "…"},
		{"", "…"},
	}
	for _, tt := range tests {
		if got := maskSecret(tt.in); got != tt.want {
			t.Errorf("maskSecret(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExpandHome(t *testing.T) {
	tests := []struct{ in, home, want, err string }{
		{"~", "/h", "/h", ""},
		{"~/ws", "/h", "/h/ws", ""},
		{"/abs/~x", "/h", "/abs/~x", ""},
		{"rel", "/h", "rel", ""},
		{"~bob/ws", "/h", "", "only ~ and ~/"},
		{"~/ws", "", "", "home directory is unknown"},
	}
	for _, tt := range tests {
		got, err := expandHome(tt.in, tt.home)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("expandHome(%q, %q) = %q, %v; want %q, %q", tt.in, tt.home, got, err, tt.want, tt.err)
		}
	}
	if got := displayPath("/h/.config/polly/config.json", "/h/"); got != "~/.config/polly/config.json" {
		t.Errorf("displayPath = %q", got)
	}
	if got := displayPath("/hx/config.json", "/h"); got != "/hx/config.json" {
		t.Errorf("displayPath abbreviated a sibling of home: %q", got)
	}
}

func TestJoinPath(t *testing.T) {
	tests := []struct{ base, key, want string }{
		{"", "mode", "mode"},
		{"providers.openai.models", "gpt-4.1", `providers.openai.models["gpt-4.1"]`},
		{"providers.openai.models", "gpt-4o", "providers.openai.models.gpt-4o"},
		{"providers", "", `providers[""]`},
	}
	for _, tt := range tests {
		if got := joinPath(tt.base, tt.key); got != tt.want {
			t.Errorf("joinPath(%q, %q) = %q, want %q", tt.base, tt.key, got, tt.want)
		}
	}
}

// FuzzLoad feeds arbitrary bytes as both the user and the project file:
// Load must not panic and must return either a config or an *Error that
// points inside the file.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"mode": "ask", "context": {"anchor_every": 3}}`))
	f.Add([]byte(`{"providers": {"x": {"base_url": "http://x", "models": {"m.1": {"context": {"summarize_window_ratio": 0.5}}}}}, "model": "x/m.1"}`))
	const home = "/home/u"
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(path string) ([]byte, error) {
			switch path {
			case home + "/.config/polly/config.json", "/p/.agent/config.json":
				return data, nil
			}
			return nil, fs.ErrNotExist
		}
		c, err := load(LoadOptions{Home: home, ProjectDir: "/p", Getenv: func(string) string { return "" }}, read)
		if (c == nil) == (err == nil) {
			t.Fatalf("Load = %v, %v: want exactly one", c, err)
		}
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if ce.File != "~/.config/polly/config.json" && ce.File != ".agent/config.json" {
				t.Fatalf("error names file %q: %v", ce.File, err)
			}
			lines := 1 + strings.Count(string(data), "\n")
			if ce.Line < 1 || ce.Line > lines || ce.Col < 1 || ce.Col > utf8.RuneCount(data)+1 {
				t.Fatalf("position %d:%d outside the file (%d lines): %v", ce.Line, ce.Col, lines, err)
			}
			return
		}
		if err := c.Print(io.Discard); err != nil {
			t.Fatal(err)
		}
		_ = c.CheckModel()
		_ = c.ContextFor("anything")
	})
}

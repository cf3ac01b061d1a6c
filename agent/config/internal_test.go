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

// Every number of the settings structs has a lower bound: -1 breaks a
// rule of each, and the problem names the field's JSON path. A field added
// without a rule fails here.
func TestEveryNumberHasARule(t *testing.T) {
	c := Defaults("")
	spec := c.Providers["openai"].Models["gpt-4o"]
	spec.MaxOutputTokens, spec.SafetyMargin, spec.ContextWindow = -1, -1, -1
	spec.InputPrice, spec.OutputPrice, spec.CachedInputPrice = new(float64), new(float64), new(float64)
	*spec.InputPrice, *spec.OutputPrice, *spec.CachedInputPrice = -1, -1, -1
	c.Providers["openai"].Models["gpt-4o"] = spec
	var want []string
	for _, s := range []struct {
		prefix string
		v      reflect.Value
	}{
		{"", reflect.ValueOf(c).Elem()},
		{"context.", reflect.ValueOf(&c.Context).Elem()}, {"llm.", reflect.ValueOf(&c.LLM).Elem()},
		{"team.", reflect.ValueOf(&c.Team).Elem()}, {"web.", reflect.ValueOf(&c.Web).Elem()},
		{"retention.", reflect.ValueOf(&c.Retention).Elem()},
	} {
		for i := range s.v.NumField() {
			switch f := s.v.Field(i); f.Kind() {
			case reflect.Int, reflect.Int64:
				f.SetInt(-1)
			case reflect.Float64:
				f.SetFloat(-1)
			default:
				continue
			}
			want = append(want, s.prefix+jsonName(s.v.Type().Field(i)))
		}
	}
	for _, f := range []string{"context_window", "max_output_tokens", "safety_margin_tokens", "input_price", "output_price", "cached_input_price"} {
		want = append(want, "providers.openai.models.gpt-4o."+f)
	}
	got := map[string]bool{}
	for _, fe := range fieldErrors(c.Validate()) {
		got[fe.Path] = true
		if !strings.Contains(fe.Msg, "got -1") {
			t.Errorf("%s: %s", fe.Path, fe.Msg)
		}
	}
	for _, path := range want {
		if !got[path] {
			t.Errorf("-1 passes %s", path)
		}
	}
	if len(want) < 27 {
		t.Errorf("only %d numbers found", len(want))
	}
}

// A per-model context number is checked once a file sets it, and reported
// at the model's path; one it does not set is the (valid) global one.
func TestModelContextRules(t *testing.T) {
	c := Defaults("")
	spec := c.Providers["openai"].Models["gpt-4o"]
	spec.Context.SummaryShare = 1.5
	c.Providers["openai"].Models["gpt-4o"] = spec
	if err := c.Validate(); err != nil {
		t.Fatalf("a number no file set was checked: %v", err)
	}
	for _, written := range []string{"providers.openai", "providers.openai.models", "providers.openai.models.gpt-4o", "providers.openai.models.gpt-4o.context"} {
		c.sources[written] = Source{Kind: KindUserFile}
	}
	c.sources["providers.openai.models.gpt-4o.context.summary_share"] = Source{Kind: KindUserFile}
	want := "providers.openai.models.gpt-4o.context.summary_share: must be at most 1, got 1.5"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate = %v, want %s", err, want)
	}
	if got := c.ContextFor("gpt-4o"); got.SummaryShare != 1.5 || got.AnchorEvery != c.Context.AnchorEvery {
		t.Errorf("ContextFor = %+v", got)
	}
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

package config_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"polly/agent/config"
)

func TestFileErrors(t *testing.T) {
	tests := []struct {
		name      string
		project   bool // write to the project file instead of the user file
		content   string
		want      string // the whole Error()
		line, col int
		field     string
	}{
		{name: "syntax: trailing comma",
			content: "{\n  \"mode\": \"ask\",\n}",
			want:    userFile + `:3:1: invalid character '}' looking for beginning of object key string (JSON allows no trailing comma)`,
			line:    3, col: 1},
		{name: "syntax: missing brace",
			content: "{\n  \"context\": {\"anchor_every\": 5}\n",
			want:    userFile + `:3:1: unexpected end of file (a missing } or ] or "?)`,
			line:    3, col: 1},
		{name: "syntax: comment",
			content: "{\n  // my settings\n  \"mode\": \"ask\"\n}",
			want:    userFile + `:2:3: invalid character '/' looking for beginning of object key string (JSON has no comments)`,
			line:    2, col: 3},
		{name: "syntax: single quotes",
			content: "{'mode': 'ask'}",
			want:    userFile + `:1:2: invalid character '\'' looking for beginning of object key string (JSON strings use double quotes)`,
			line:    1, col: 2},
		{name: "syntax: missing comma",
			content: "{\n  \"mode\": \"ask\"\n  \"persona\": \"x\"\n}",
			want:    userFile + `:3:3: invalid character '"' after object key:value pair`,
			line:    3, col: 3},
		{name: "syntax: trailing data",
			content: "{}\n{}",
			want:    userFile + `:2:1: invalid character '{' after top-level value`,
			line:    2, col: 1},
		{name: "not an object",
			content: `["mode"]`,
			want:    userFile + `:1:1: expected a JSON object at the top level, got an array`,
			line:    1, col: 1},
		{name: "wrong type",
			content: "{\n  \"context\": {\n    \"summarize_at_tokens\": 30000,\n    \"anchor_every\": \"five\"\n  }\n}",
			want:    userFile + `:4:5: context.anchor_every: expected a number, got string "five"`,
			line:    4, col: 5, field: "context.anchor_every"},
		{name: "fraction for an integer",
			content: `{"max_turns": 5.5}`,
			want:    userFile + `:1:2: max_turns: expected a whole number, got 5.5`,
			line:    1, col: 2, field: "max_turns"},
		{name: "integral float accepted, out of range rejected",
			content: `{"max_turns": 1e30}`,
			want:    userFile + `:1:2: max_turns: number 1e30 is out of range`,
			line:    1, col: 2, field: "max_turns"},
		{name: "object expected",
			content: `{"context": 5}`,
			want:    userFile + `:1:2: context: expected an object, got number 5`,
			line:    1, col: 2, field: "context"},
		{name: "bool expected",
			content: `{"web": {"respect_robots": "yes"}}`,
			want:    userFile + `:1:10: web.respect_robots: expected true or false, got string "yes"`,
			line:    1, col: 10, field: "web.respect_robots"},
		{name: "unknown field, close spelling",
			content: "{\n  \"context\": {\n    \"anchor_evry\": 5\n  }\n}",
			want:    userFile + `:3:5: context: unknown field "anchor_evry" (did you mean "anchor_every"?)`,
			line:    3, col: 5, field: "context"},
		{name: "unknown field, transposed letters",
			content: `{"modle": "gpt-4o"}`,
			want:    userFile + `:1:2: unknown field "modle" (did you mean "model"?)`,
			line:    1, col: 2},
		{name: "unknown field, belongs elsewhere",
			content: `{"anchor_every": 5}`,
			want:    userFile + `:1:2: unknown field "anchor_every" (did you mean "context.anchor_every"?)`,
			line:    1, col: 2},
		{name: "unknown field, small object lists keys",
			content: `{"llm": {"retries": 2}}`,
			want:    userFile + `:1:10: llm: unknown field "retries" (known: max_retries, idle_timeout_seconds, call_timeout_seconds)`,
			line:    1, col: 10, field: "llm"},
		{name: "unknown field deep in a provider model",
			content: `{"providers": {"openai": {"models": {"gpt-4.1": {"context_windw": 5}}}}}`,
			want:    userFile + `:1:50: providers.openai.models["gpt-4.1"]: unknown field "context_windw" (did you mean "context_window"?)`,
			line:    1, col: 50, field: `providers.openai.models["gpt-4.1"]`},
		{name: "duplicate key",
			content: "{\n  \"mode\": \"ask\",\n  \"mode\": \"yolo\"\n}",
			want:    userFile + `:3:3: mode: duplicate key`,
			line:    3, col: 3, field: "mode"},
		{name: "bad mode",
			content: "{\n  \"mode\": \"yoloo\"\n}",
			want:    userFile + `:2:3: mode: expected one of ask, auto-edit, yolo, got "yoloo" (did you mean "yolo"?)`,
			line:    2, col: 3, field: "mode"},
		{name: "bad theme",
			content: `{"tui": {"theme": "solarized"}}`,
			want:    userFile + `:1:10: tui.theme: expected one of auto, dark, light, got "solarized"`,
			line:    1, col: 10, field: "tui.theme"},
		{name: "negative number",
			content: `{"team": {"max_parallel": -2}}`,
			want:    userFile + `:1:11: team.max_parallel: must be at least 1, got -2`,
			line:    1, col: 11, field: "team.max_parallel"},
		{name: "ratio above 1",
			content: `{"context": {"summarize_window_ratio": 1.5}}`,
			want:    userFile + `:1:14: context.summarize_window_ratio: must be at most 1, got 1.5`,
			line:    1, col: 14, field: "context.summarize_window_ratio"},
		{name: "ratio zero",
			content: `{"context": {"summarize_window_ratio": 0}}`,
			want:    userFile + `:1:14: context.summarize_window_ratio: must be greater than 0, got 0`,
			line:    1, col: 14, field: "context.summarize_window_ratio"},
		{name: "per-model override checked too",
			content: `{"providers": {"openai": {"models": {"gpt-4o": {"context": {"anchor_every": 0}}}}}}`,
			want:    userFile + `:1:61: providers.openai.models.gpt-4o.context.anchor_every: must be at least 1, got 0`,
			line:    1, col: 61, field: "providers.openai.models.gpt-4o.context.anchor_every"},
		{name: "malformed rule points at the element",
			content: "{\n  \"permissions\": {\n    \"allow\": [\n      \"fetch_url\",\n      \"run_command(go test\"\n    ]\n  }\n}",
			want:    userFile + `:5:7: permissions.allow[1]: invalid rule "run_command(go test": missing ")" at the end`,
			line:    5, col: 7, field: "permissions.allow[1]"},
		{name: "rule with empty pattern",
			content: `{"permissions": {"deny": ["fetch_url()"]}}`,
			want:    userFile + `:1:27: permissions.deny[0]: invalid rule "fetch_url()": empty pattern; write "fetch_url" to match every call`,
			line:    1, col: 27, field: "permissions.deny[0]"},
		{name: "rules must be strings",
			content: `{"permissions": {"ask": [3]}}`,
			want:    userFile + `:1:26: permissions.ask[0]: expected a string, got number 3`,
			line:    1, col: 26, field: "permissions.ask[0]"},
		{name: "unknown provider",
			content: "{\n  \"provider\": \"openrouterr\"\n}",
			want:    userFile + `:2:3: provider: unknown provider "openrouterr" (configured: openai)`,
			line:    2, col: 3, field: "provider"},
		{name: "unknown provider, close spelling",
			content: `{"provider": "opnai"}`,
			want:    userFile + `:1:2: provider: unknown provider "opnai" (did you mean "openai"?)`,
			line:    1, col: 2, field: "provider"},
		{name: "model prefix naming a misspelt provider",
			content: "{\n  \"providers\": {\"openrouter\": {\"base_url\": \"https://openrouter.ai/api/v1\"}},\n  \"model\": \"openruoter/anthropic/claude-sonnet-4\"\n}",
			want:    userFile + `:3:3: model: no provider named "openruoter" (did you mean "openrouter"?); to send the whole name to provider "openai", set "provider" explicitly`,
			line:    3, col: 3, field: "model"},
		{name: "provider without base_url",
			content: "{\n  \"providers\": {\n    \"local\": {\"models\": {\"qwen\": {}}}\n  }\n}",
			want:    userFile + `:3:5: providers.local: base_url is required`,
			line:    3, col: 5, field: "providers.local"},
		{name: "bad base_url",
			content: `{"providers": {"openai": {"base_url": "localhost:11434"}}}`,
			want:    userFile + `:1:27: providers.openai.base_url: expected an http or https URL, got "localhost:11434"`,
			line:    1, col: 27, field: "providers.openai.base_url"},
		{name: "bad provider name",
			content: `{"providers": {"my/provider": {"base_url": "http://x"}}}`,
			want:    userFile + `:1:16: providers["my/provider"]: key "my/provider" is not a valid name (letters, digits, '.', '_', '-')`,
			line:    1, col: 16, field: `providers["my/provider"]`},
		{name: "key pasted into api_key_env is not echoed",
			content: `{"providers": {"openai": {"api_key_env": "sk-proj-abcdefghijklmnop1234"}}}`,
			want:    userFile + `:1:27: providers.openai.api_key_env: expected the name of an environment variable (e.g. "OPENAI_API_KEY"), got what looks like an API key; put the key in that variable instead`,
			line:    1, col: 27, field: "providers.openai.api_key_env"},
		{name: "secret values are not echoed in type errors",
			content: `{"providers": {"openai": {"headers": {"Authorization": 123456789012}}}}`,
			want:    userFile + `:1:39: providers.openai.headers.Authorization: expected a string, got a value of another type`,
			line:    1, col: 39, field: "providers.openai.headers.Authorization"},
		{name: "columns count characters",
			content: `{"model": "é", "mode": "x"}`,
			want:    userFile + `:1:16: mode: expected one of ask, auto-edit, yolo, got "x"`,
			line:    1, col: 16, field: "mode"},
		{name: "project file",
			project: true,
			content: "{\n  \"tui\": {\"theme\": \"neon\"}\n}",
			want:    projectFile + `:2:11: tui.theme: expected one of auto, dark, light, got "neon"`,
			line:    2, col: 11, field: "tui.theme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, project := tt.content, ""
			wantFile := userFile
			if tt.project {
				user, project, wantFile = "", tt.content, projectFile
			}
			c, err := newFixture(t, user, project).load(nil, config.Flags{})
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Load = %v, %v; want a *config.Error", c, err)
			}
			if c != nil {
				t.Error("Load returned a config with an error")
			}
			if got := ce.Error(); got != tt.want {
				t.Errorf("Error()\n got %s\nwant %s", got, tt.want)
			}
			if ce.File != wantFile || ce.Line != tt.line || ce.Col != tt.col || ce.Field != tt.field {
				t.Errorf("got %s:%d:%d field %q, want %s:%d:%d field %q", ce.File, ce.Line, ce.Col, ce.Field, wantFile, tt.line, tt.col, tt.field)
			}
			if strings.Contains(ce.Error(), "sk-proj") {
				t.Error("the error echoes a key")
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	t.Run("POLLY_CONFIG must exist", func(t *testing.T) {
		f := newFixture(t, "", "")
		_, err := f.load(map[string]string{"POLLY_CONFIG": "~/nope.json"}, config.Flags{})
		var ce *config.Error
		if !errors.As(err, &ce) || ce.File != "~/nope.json" || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
		if want := "~/nope.json: cannot read: no such file or directory (named by POLLY_CONFIG)"; err.Error() != want {
			t.Errorf("got %q, want %q", err, want)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		f := newFixture(t, "", "")
		if err := os.MkdirAll(filepath.Join(f.project, ".agent", "config.json"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := f.load(nil, config.Flags{})
		var ce *config.Error
		if !errors.As(err, &ce) || ce.File != projectFile || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		if os.Getuid() == 0 {
			t.Skip("root reads anything")
		}
		f := newFixture(t, `{}`, "")
		if err := os.Chmod(filepath.Join(f.home, ".config", "polly", "config.json"), 0); err != nil {
			t.Fatal(err)
		}
		_, err := f.load(nil, config.Flags{})
		if want := userFile + ": cannot read: permission denied"; err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %s", err, want)
		}
	})
}

func TestEnvErrors(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"POLLY_MODE": "fast"}, `env POLLY_MODE: expected one of ask, auto-edit, yolo, got "fast"`},
		{map[string]string{"POLLY_MODE": "yolO"}, `env POLLY_MODE: expected one of ask, auto-edit, yolo, got "yolO" (did you mean "yolo"?)`},
		{map[string]string{"POLLY_PROVIDER": "anthropic"}, `env POLLY_PROVIDER: unknown provider "anthropic" (configured: openai)`},
		{map[string]string{"POLLY_MODEL": "opena/gpt-4o"}, `env POLLY_MODEL: no provider named "opena" (did you mean "openai"?); to send the whole name to provider "openai", set "provider" explicitly`},
		{map[string]string{"OPENAI_BASE_URL": "localhost:11434/v1"}, `env OPENAI_BASE_URL: expected an http or https URL, got "localhost:11434/v1"`},
		{map[string]string{"POLLY_WORKSPACE": "~bob/ws"}, `env POLLY_WORKSPACE: cannot expand "~bob/ws": only ~ and ~/ are supported`},
		{map[string]string{"POLLY_CONFIG": "~bob/c.json"}, `env POLLY_CONFIG: cannot expand "~bob/c.json": only ~ and ~/ are supported`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := newFixture(t, "", "").load(tt.env, config.Flags{})
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Env == "" {
				t.Fatalf("err = %v, want a *config.Error naming a variable", err)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		flags config.Flags
		want  string
	}{
		{config.Flags{Mode: ptr("fast")}, `flag --mode: expected one of ask, auto-edit, yolo, got "fast"`},
		{config.Flags{MaxTurns: ptr(-1)}, `flag --max-turns: must be at least 0, got -1`},
		{config.Flags{Mode: ptr("ask"), Yolo: true}, `flag --yolo: conflicts with --mode ask`},
		{config.Flags{BaseURL: ptr("ftp://example.com")}, `flag --base-url: expected an http or https URL, got "ftp://example.com"`},
		{config.Flags{Persona: ptr("a/b")}, `flag --persona: "a/b" is not a valid name (letters, digits, '.', '_', '-')`},
		{config.Flags{Persona: ptr("")}, `flag --persona: must not be empty`},
		{config.Flags{Model: ptr("")}, `flag --model: must not be empty`},
		{config.Flags{APIKey: ptr("")}, `flag --api-key: must not be empty`},
		{config.Flags{Workspace: ptr("~x")}, `flag --workspace: cannot expand "~x": only ~ and ~/ are supported`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := newFixture(t, "", "").load(nil, tt.flags)
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Flag == "" {
				t.Fatalf("err = %v, want a *config.Error naming a flag", err)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
		})
	}
	// --yolo with --mode yolo is redundant, not wrong.
	if _, err := newFixture(t, "", "").load(nil, config.Flags{Mode: ptr("yolo"), Yolo: true}); err != nil {
		t.Error(err)
	}
}

func TestCheckModel(t *testing.T) {
	openrouter := `{"provider": "openrouter", "providers": {"openrouter": {"base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY"}}}`
	local := `{"provider": "lm", "providers": {"lm": {"base_url": "http://127.0.0.1:1234/v1", "api_key_env": "LM_KEY"}}}`
	tests := []struct {
		name     string
		user     string
		env      map[string]string
		flags    config.Flags
		missing  bool
		contains []string
	}{
		{name: "nothing set", missing: true,
			contains: []string{`provider "openai" (https://api.openai.com/v1) needs an API key`, "export OPENAI_API_KEY=", "OPENAI_BASE_URL=http://localhost:11434/v1", userFile, `"api_key_env": "OPENROUTER_API_KEY"`}},
		{name: "OPENAI_API_KEY", env: map[string]string{"OPENAI_API_KEY": "sk-x"}},
		{name: "--api-key", flags: config.Flags{APIKey: ptr("sk-x")}},
		{name: "Ollama", env: map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}},
		{name: "remote server via OPENAI_BASE_URL", env: map[string]string{"OPENAI_BASE_URL": "http://gpu-box:8000/v1"}},
		{name: "--base-url to api.openai.com still needs a key", flags: config.Flags{BaseURL: ptr("https://api.openai.com/v1")}, missing: true},
		{name: "provider key unset", user: openrouter, env: map[string]string{"OPENAI_API_KEY": "sk-x"}, missing: true,
			contains: []string{"export OPENROUTER_API_KEY=...", `provider "openrouter"`}},
		{name: "provider key set", user: openrouter, env: map[string]string{"OPENROUTER_API_KEY": "sk-or"}},
		{name: "loopback provider needs none", user: local},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newFixture(t, tt.user, "").load(tt.env, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckModel()
			var me *config.MissingModelError
			if got := errors.As(err, &me); got != tt.missing || c.HasModel() == tt.missing {
				t.Fatalf("CheckModel = %v, HasModel = %v; want missing %v", err, c.HasModel(), tt.missing)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message lacks %q:\n%s", s, err)
				}
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  config.Error
		want string
	}{
		{config.Error{File: "a.json", Line: 1, Col: 2, Field: "mode", Msg: "m"}, "a.json:1:2: mode: m"},
		{config.Error{File: "a.json", Msg: "cannot read: x"}, "a.json: cannot read: x"},
		{config.Error{Env: "POLLY_MODE", Field: "mode", Msg: "m"}, "env POLLY_MODE: m"},
		{config.Error{Flag: "--mode", Field: "mode", Msg: "m"}, "flag --mode: m"},
		{config.Error{Field: "workspace", Msg: "m"}, "workspace: m"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// With a bad global number and a model that sets others, the error is the
// global one, at its place: not the model's copy of it.
func TestBadGlobalWithModelContext(t *testing.T) {
	user := `{"context": {"anchor_every": 0}, "providers": {"openai": {"models": {"gpt-4o": {"context": {"summary_share": 0.5}}}}}}`
	_, err := newFixture(t, user, "").load(nil, config.Flags{})
	if want := userFile + ":1:14: context.anchor_every: must be at least 1, got 0"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// The rules of every settings type, each at the place its value is written.
func TestValidateRulesInFiles(t *testing.T) {
	tests := []struct{ content, want string }{
		{`{"hooks": {"PreTooluse": []}}`,
			`:1:12: hooks.PreTooluse: unknown hook event "PreTooluse" (did you mean "PreToolUse"?)`},
		{`{"hooks": {"Stop": [{"matcher": "(", "hooks": []}]}}`,
			`:1:22: hooks.Stop[0].matcher: "(" is not a valid regular expression: missing closing ): ` + "`(`"},
		{`{"hooks": {"Stop": [{"hooks": [{"type": "", "command": "x"}]}]}}`,
			`:1:33: hooks.Stop[0].hooks[0].type: expected one of command, http, prompt, agent, mcp_tool, got ""`},
		{`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": ""}]}]}}`,
			`:1:52: hooks.Stop[0].hooks[0].command: must not be empty`},
		{`{"mcp_servers": {"a b": {"command": "x"}}}`,
			`:1:18: mcp_servers["a b"]: key "a b" is not a valid name (letters, digits, '.', '_', '-')`},
		{`{"mcp_servers": {"x": {"command": "x", "startup_timeout_seconds": 0}}}`,
			`:1:40: mcp_servers.x.startup_timeout_seconds: must be at least 1, got 0`},
		{`{"mcp_servers": {"x": {"command": "x", "type": ""}}}`,
			`:1:40: mcp_servers.x.type: expected one of stdio, http, streamable-http, sse, got ""`},
		{`{"mcp_servers": {"x": {"command": "x", "env": {"": "v"}}}}`,
			`:1:48: mcp_servers.x.env[""]: key must not be empty`},
		{`{"sandbox": {"writable_roots": ["/ok", "rel"]}}`,
			`:1:40: sandbox.writable_roots[1]: expected an absolute path (or one starting with ~/), got "rel"`},
		{`{"sandbox": {"pass_env": ["A B"]}}`,
			`:1:27: sandbox.pass_env[0]: "A B" is not an environment variable name`},
		{`{"providers": {"openai": {"headers": {"Bad Name": "v"}}}}`,
			`:1:39: providers.openai.headers["Bad Name"]: "Bad Name" is not a valid HTTP header name`},
		{`{"providers": {"openai": {"base_url": ""}}}`,
			`:1:27: providers.openai.base_url: expected an http or https URL, got ""`},
		{`{"providers": {"openai": {"models": {"m": {"context_window": 0}}}}}`,
			`:1:44: providers.openai.models.m.context_window: must be at least 1, got 0`},
		{`{"providers": {"openai": {"models": {"m": {"input_price": -1}}}}}`,
			`:1:44: providers.openai.models.m.input_price: must be at least 0, got -1`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := newFixture(t, tt.content, "").load(nil, config.Flags{})
			var ce *config.Error
			if !errors.As(err, &ce) || err.Error() != userFile+tt.want {
				t.Errorf("got  %v\nwant %s", err, userFile+tt.want)
			}
		})
	}
}

// Each layer is checked as it comes in: a bad value is an error even when
// a higher layer replaces it.
func TestEveryLayerChecked(t *testing.T) {
	tests := []struct {
		user  string
		env   map[string]string
		flags config.Flags
		want  string
	}{
		{user: `{"max_turns": -1}`, flags: config.Flags{MaxTurns: ptr(3)}, want: userFile + `:1:2: max_turns: must be at least 0, got -1`},
		{env: map[string]string{"POLLY_MODE": "fast"}, flags: config.Flags{Mode: ptr("ask")}, want: `env POLLY_MODE: expected one of ask, auto-edit, yolo, got "fast"`},
		{flags: config.Flags{Sandbox: ptr("offf")}, want: `flag --sandbox: expected one of auto, on, off, got "offf" (did you mean "off"?)`},
	}
	for _, tt := range tests {
		_, err := newFixture(t, tt.user, "").load(tt.env, tt.flags)
		if err == nil || err.Error() != tt.want {
			t.Errorf("got  %v\nwant %s", err, tt.want)
		}
	}
}

// A required value left out is reported where the object lacking it is.
func TestMissingValueAtItsObject(t *testing.T) {
	_, err := newFixture(t, "{\"hooks\": {\"Stop\": [\n  {\"hooks\": [{\"type\": \"command\"}]}]}}", "").load(nil, config.Flags{})
	if want := userFile + `:2:14: hooks.Stop[0].hooks[0].command: must not be empty`; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// The no-key message's config example is JSON a user can paste, and every
// command or example line fits an 80-column screen under the TUI's
// 4-column indent (prose may wrap; a wrapped command would mislead).
func TestMissingModelExampleIsJSONAndNarrow(t *testing.T) {
	msg := (&config.MissingModelError{Provider: "openai", BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY"}).Error()
	start, end := strings.Index(msg, "\n  {"), strings.Index(msg, "\nand export")
	if start < 0 || end < start {
		t.Fatalf("no example in:\n%s", msg)
	}
	if example := msg[start:end]; !json.Valid([]byte(example)) {
		t.Errorf("the example is not JSON:\n%s", example)
	}
	for _, line := range strings.Split(msg, "\n") {
		if w := utf8.RuneCountInString(line); strings.HasPrefix(line, "  ") && w > 76 {
			t.Errorf("%d columns (> 76): %q", w, line)
		}
	}
}

package config_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"polly/agent/config"
)

func TestPrint(t *testing.T) {
	user := `{
  "context": {"summarize_at_tokens": 30000},
  "providers": {"openai": {
    "api_key": "sk-file-0000000000wxyz",
    "headers": {"Authorization": "Bearer secret-token-9876", "X-Title": "Polly"},
    "models": {"gpt-4.1": {"context": {"anchor_every": 3}}}
  }}
}`
	project := "{\n  \"mode\": \"auto-edit\",\n  \"permissions\": {\"deny\": [\"run_command(rm *)\"]}\n}"
	env := map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "OPENAI_API_KEY": "sk-proj-1111111111111abcd"}
	c, err := newFixture(t, user, project).load(env, config.Flags{MaxTurns: ptr(12)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Print(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, secret := range []string{"sk-proj-1111", "sk-file-0000", "secret-token"} {
		if strings.Contains(out, secret) {
			t.Errorf("Print leaks %q:\n%s", secret, out)
		}
	}
	tests := []struct{ key, value, source string }{
		{"model", "gpt-4.1", "default"},
		{"base_url", "http://localhost:11434/v1", "env OPENAI_BASE_URL"},
		{"api_key", "sk-…abcd", "env OPENAI_API_KEY"},
		{"headers.Authorization", "…9876", "user " + userFile + ":5"},
		{"headers.X-Title", "Polly", "user " + userFile + ":5"},
		// gpt-4.1 on a local server: OpenAI's window and prices do not apply.
		{"context_window", "unknown", "default (unknown)"},
		{"summarize_threshold", "30000", "default (context.summarize_at_tokens)"},
		{"price", "unknown (no cost shown)", "default (unknown)"},
		{"workspace", "~/.agent/workspace", "default"},
		{"mode", "ask", "default"}, // the project is not trusted
		{"mode", `"auto-edit"`, "project " + projectFile + ":2 (ignored: project not trusted)"},
		{"max_turns", "12", "flag --max-turns"},
		{"context.summarize_at_tokens", "30000", "user " + userFile + ":2"},
		{"context.anchor_every", "3", "user " + userFile + ":6"}, // the model override
		{"context.checkpoint_every", "30", "default"},
		{"permissions.deny[0]", "run_command(rm *)", "project " + projectFile + ":3"},
		{"web.user_agent", "Polly/1.2.3 (+https://github.com/polly)", "default"},
	}
	for _, tt := range tests {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(tt.key) + ` +` + regexp.QuoteMeta(tt.value) + ` +` + regexp.QuoteMeta(tt.source) + `$`)
		if !re.MatchString(out) {
			t.Errorf("no line %q  %q  %q in\n%s", tt.key, tt.value, tt.source, out)
		}
	}
	// Aligned: every source column starts at the same place.
	col := -1
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.HasPrefix(line, "warning:") {
			continue
		}
		i := utf8.RuneCountInString(line[:strings.LastIndex(line, "  ")+2])
		if col == -1 {
			col = i
		} else if i != col {
			t.Errorf("source column at %d, want %d: %q", i, col, line)
		}
	}
	if !strings.Contains(out, "warning: providers.openai.api_key is set in user "+userFile+":4") {
		t.Errorf("no warning about the key in the file:\n%s", out)
	}
}

func TestValuesJSON(t *testing.T) {
	c, err := newFixture(t, "", "").load(map[string]string{"POLLY_MODE": "yolo", "OPENAI_API_KEY": "sk-abcdefghijklmnop"}, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(c.Values())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"key":"mode","value":"yolo","source":{"kind":"env","detail":"POLLY_MODE"}}`,
		`{"key":"api_key","value":"sk-…mnop","source":{"kind":"env","detail":"OPENAI_API_KEY"}}`,
		`{"key":"tui.theme","value":"auto","source":{"kind":"default"}}`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	if strings.Contains(string(data), "abcdefghijklmnop") {
		t.Error("JSON leaks the key")
	}
}

func TestPrintNoKey(t *testing.T) {
	c, err := newFixture(t, "", "").load(nil, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Print(&buf); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^api_key +\(none\) +default \(OPENAI_API_KEY is not set\)$`).MatchString(buf.String()) {
		t.Errorf("api_key line:\n%s", buf.String())
	}
}

func TestProjectWarnings(t *testing.T) {
	project := `{"mode": "yolo", "providers": {"openai": {"base_url": "https://evil.example/v1"}}}`
	f := newFixture(t, "", project)
	c, err := f.load(nil, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(c.Warnings(), "\n")
	if want := "ignored: mode, providers.openai.base_url; check them, then run `polly trust`"; !strings.Contains(w, want) {
		t.Errorf("untrusted: warnings lack %q:\n%s", want, w)
	}
	// Trusted, they apply and the warnings say what they do.
	c, err = f.trust(t).load(nil, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	w = strings.Join(c.Warnings(), "\n")
	for _, want := range []string{"the project file sets providers.openai.base_url", "the project file sets mode yolo"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
}

func TestParseRule(t *testing.T) {
	tests := []struct {
		in      string
		want    config.Rule
		wantErr string
	}{
		{in: "fetch_url", want: config.Rule{Tool: "fetch_url"}},
		{in: " run_command(go test *) ", want: config.Rule{Tool: "run_command", Pattern: "go test *"}},
		{in: "write_file(src/**)", want: config.Rule{Tool: "write_file", Pattern: "src/**"}},
		{in: "run_command(echo (hi))", want: config.Rule{Tool: "run_command", Pattern: "echo (hi)"}},
		{in: "", wantErr: "empty permission rule"},
		{in: "run_command(go test", wantErr: `missing ")" at the end`},
		{in: "fetch_url()", wantErr: "empty pattern"},
		{in: "(x)", wantErr: "missing tool name"},
		{in: "run command", wantErr: "is not a tool name"},
		{in: "run_command)", wantErr: "is not a tool name"},
		{in: "9tool", wantErr: "is not a tool name"},
	}
	for _, tt := range tests {
		got, err := config.ParseRule(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRule(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if again, err := config.ParseRule(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q: %+v, %v", got.String(), again, err)
		}
	}
}

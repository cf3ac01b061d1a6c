package config

import (
	"io/fs"
	"strings"
	"testing"
)

func readFrom(files map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}

// Claude Code's settings files are read leniently: their hooks are used,
// everything else in them is left alone, an unknown field or event is
// warned about once, a broken handler or file costs only itself, and
// Polly's own config stays strict.
func TestClaudeSettingsAreLenient(t *testing.T) {
	files := map[string]string{
		"/home/u/.claude/settings.json": `{
  "model": "opus", "permissions": {"allow": ["Bash(ls)"]},
  "hooks": {
    "PostToolUse": [{"matcher": "Write|Edit", "hooks": [
      {"type": "command", "command": "fmt.sh", "retries": 2},
      {"type": "command", "command": "lint.sh", "retries": 5},
      {"type": "command", "timeout": "soon", "command": "bad.sh"}
    ]}],
    "PreToolUze": [{"hooks": [{"type": "command", "command": "x"}]}],
    "Notification": [{"matcher": "idle_prompt", "hooks": [{"type": "http", "url": "http://127.0.0.1:9/n"}]}]
  }
}`,
		"/p/.claude/settings.json":       "{\n  \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"check.sh\"}]}]},\n  \"disableAllHooks\": false,\n}",
		"/p/.claude/settings.local.json": `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "bye.sh"}]}]}, "disableAllHooks": true}`,
	}
	c, err := load(LoadOptions{ProjectDir: "/p", Home: "/home/u"}, readFrom(files))
	if err != nil {
		t.Fatalf("a Claude Code file must never stop Polly: %v", err)
	}
	var got []string
	for _, e := range c.HookEntries() {
		for _, h := range e.Matcher.Hooks {
			got = append(got, e.Event+":"+h.Command+h.URL+"@"+e.Source.String())
		}
	}
	want := "PostToolUse:fmt.sh@user ~/.claude/settings.json:4 PostToolUse:lint.sh@user ~/.claude/settings.json:4 " +
		"Notification:http://127.0.0.1:9/n@user ~/.claude/settings.json:10 SessionEnd:bye.sh@project .claude/settings.local.json:1"
	if strings.Join(got, " ") != want {
		t.Fatalf("hooks:\n%s\nwant:\n%s", strings.Join(got, " "), want)
	}
	w := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{
		`~/.claude/settings.json:5:48: hooks.PostToolUse[0].hooks[0]: unknown field "retries" ignored`,
		`hooks.PostToolUse[0].hooks[2].timeout: expected a number`, "this hook is skipped",
		`unknown hook event "PreToolUze" ignored (did you mean "PreToolUse"?)`,
		".claude/settings.json:4:1:", "Polly uses no hooks from this file until it is fixed",
	} {
		if !strings.Contains(w, want) {
			t.Fatalf("warnings lack %q:\n%s", want, w)
		}
	}
	if strings.Count(w, `unknown field "retries"`) != 1 {
		t.Fatalf("an unknown field must be warned about once:\n%s", w)
	}
	// The project's hooks need trust; disableAllHooks of a project file
	// counts only when it is trusted.
	if held := c.Untrusted(); len(held) != 1 || held[0].Path != "hooks" || held[0].Source.Detail != ".claude/settings.local.json" {
		t.Fatalf("held = %+v", held)
	}
	if c.HooksDisabledBy(false) != "" || c.HooksDisabledBy(true) != ".claude/settings.local.json" {
		t.Fatalf("disableAllHooks: untrusted %q, trusted %q", c.HooksDisabledBy(false), c.HooksDisabledBy(true))
	}

	// Polly's own file stays strict: the same unknown field is an error.
	files["/home/u/.config/polly/config.json"] = `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "retries": 2}]}]}}`
	if _, err := load(LoadOptions{ProjectDir: "/p", Home: "/home/u"}, readFrom(files)); err == nil || !strings.Contains(err.Error(), `unknown field "retries"`) {
		t.Fatalf("Polly's config must stay strict: %v", err)
	}
}

// Whatever the other tools' files hold — .mcp.json, Claude Code's user and
// project settings — Polly loads: they cost warnings, never the start.
func FuzzLenientFiles(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"url": "http://x", "oauth": {}}}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}`))
	f.Add([]byte(`{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": [{"type": "http"}]}]}, "disableAllHooks": "yes"}`))
	f.Add([]byte("{\"mcpServers\": {\"a\": {\"command\": 1,}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(path string) ([]byte, error) {
			switch path {
			case "/p/.mcp.json", "/p/.claude/settings.json", "/p/.claude/settings.local.json", "/home/u/.claude/settings.json":
				return data, nil
			}
			return nil, fs.ErrNotExist
		}
		c, err := load(LoadOptions{Home: "/home/u", ProjectDir: "/p"}, read)
		if err != nil || c == nil {
			t.Fatalf("a file of another tool stopped Polly: %v", err)
		}
		c.HookEntries()
		c.MCPServerEntries()
	})
}

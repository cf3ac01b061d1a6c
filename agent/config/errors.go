package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Error is a configuration problem located in a file (with line and column),
// an environment variable or a command-line flag. Callers should exit 2
// before doing anything else.
type Error struct {
	File  string // the file, ~ abbreviated; "" for env and flags
	Line  int    // 1-based; 0 when unknown
	Col   int    // 1-based, in characters
	Env   string // the variable, when the value came from the environment
	Flag  string // the flag with dashes, when the value came from the command line
	Field string // path of the value, e.g. "context.anchor_every"; for an unknown key, the object holding it
	Msg   string
	Err   error // underlying cause (a read error), if any
}

// Error reads like
// "~/.config/polly/config.json:12:5: context.anchor_every: expected a number, got string \"five\"",
// "env POLLY_MODE: expected one of ask, auto-edit, yolo, got \"fast\"" or
// "flag --max-turns: must be at least 1, got 0".
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "":
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
		}
	case e.Env != "":
		b.WriteString("env " + e.Env)
	case e.Flag != "":
		b.WriteString("flag " + e.Flag)
	}
	// An env var or flag sets one field, so naming it again is noise.
	if e.Field != "" && e.Env == "" && e.Flag == "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Field)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// sourceError locates a problem with a value at the place it came from.
func sourceError(src Source, field, msg string) *Error {
	e := &Error{Field: field, Msg: msg}
	switch src.Kind {
	case KindUserFile, KindProjectFile:
		e.File, e.Line, e.Col = src.Detail, src.Line, src.Col
	case KindEnv:
		e.Env = src.Detail
	case KindFlag:
		e.Flag = src.Detail
	}
	return e
}

// MissingModelError says that no usable model is configured: the provider
// needs an API key and none is set. Its message tells the user what to set.
type MissingModelError struct {
	Provider string
	BaseURL  string
	KeyEnv   string // the variable the key is read from; "" if the provider names none
	UserFile string // the user config file (~ abbreviated), where a provider can be configured
}

func (e *MissingModelError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no model available: provider %q (%s) needs an API key and none is set.\n", e.Provider, e.BaseURL)
	b.WriteString("Do one of:\n")
	if e.KeyEnv != "" && e.KeyEnv != "OPENAI_API_KEY" {
		fmt.Fprintf(&b, "  export %s=...                          # the key for %s\n", e.KeyEnv, e.Provider)
	}
	b.WriteString("  export OPENAI_API_KEY=sk-...                     # OpenAI\n")
	b.WriteString("  export OPENAI_BASE_URL=http://localhost:11434/v1 # Ollama etc.: no key\n")
	b.WriteString("  polly --api-key KEY   or   polly --base-url URL  # for one run\n")
	file := e.UserFile
	if file == "" {
		file = "~/.config/polly/config.json"
	}
	fmt.Fprintf(&b, "or configure a provider in %s, for example:\n", file)
	// Compact, so the whole message fits an 80×24 screen under the TUI's
	// indent (the no-key screen).
	b.WriteString(`  {"provider": "openrouter", "model": "anthropic/claude-sonnet-4",
   "providers": {"openrouter": {"base_url": "https://openrouter.ai/api/v1",
                                "api_key_env": "OPENROUTER_API_KEY"}}}
and export OPENROUTER_API_KEY=...`)
	if e.KeyEnv == "" {
		fmt.Fprintf(&b, "\n(provider %q names no api_key_env; add one to its entry)", e.Provider)
	}
	return b.String()
}

// CheckModel returns a *MissingModelError when the active model cannot be
// called: there is no API key and the endpoint is the hosted OpenAI API, or
// a provider that names an api_key_env on a non-local host. Endpoints
// redirected by OPENAI_BASE_URL or --base-url need no key (Ollama, vLLM).
func (c *Config) CheckModel() error {
	m := c.ActiveModel()
	if m.APIKey != "" {
		return nil
	}
	host := ""
	if u, err := url.Parse(m.BaseURL); err == nil {
		host = u.Hostname()
	}
	_, _, redirected := c.baseURLFor(m.Provider)
	needsKey := host == "api.openai.com" || m.APIKeyEnv != "" && !redirected && !loopback(host)
	if !needsKey {
		return nil
	}
	return &MissingModelError{Provider: m.Provider, BaseURL: m.BaseURL, KeyEnv: m.APIKeyEnv, UserFile: c.userFile}
}

// HasModel reports whether the active model can be called (see CheckModel).
func (c *Config) HasModel() bool { return c.CheckModel() == nil }

func loopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

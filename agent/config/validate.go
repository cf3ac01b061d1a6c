package config

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"polly/agent/hooks"
	"polly/workspace/jsonfile"
)

// FieldError is a value that breaks a rule. Path is the value's JSON path
// from the type whose Validate found it ("context.anchor_every",
// `providers.openai.models["gpt-4.1"]`).
type FieldError struct {
	Path, Msg string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// problems collects the FieldErrors of a Validate method.
type problems []error

// add records msg for the value at path; "" means no problem.
func (p *problems) add(path, msg string) {
	if msg != "" {
		*p = append(*p, &FieldError{path, msg})
	}
}

// nest records the FieldErrors of a nested value's Validate under prefix.
func (p *problems) nest(prefix string, err error) {
	for _, e := range fieldErrors(err) {
		path := prefix
		switch {
		case e.Path == "":
		case prefix == "" || strings.HasPrefix(e.Path, "["):
			path += e.Path
		default:
			path += "." + e.Path
		}
		p.add(path, e.Msg)
	}
}

func (p problems) join() error { return errors.Join(p...) }

// fieldErrors flattens what Validate returned (errors.Join nests).
func fieldErrors(err error) []*FieldError {
	switch e := err.(type) {
	case nil:
		return nil
	case *FieldError:
		return []*FieldError{e}
	case interface{ Unwrap() []error }:
		var out []*FieldError
		for _, inner := range e.Unwrap() {
			out = append(out, fieldErrors(inner)...)
		}
		return out
	}
	return nil
}

// Validate checks every value against its own rules; Load runs it after
// each layer and also checks what needs several values (an unknown active
// provider, a provider without base_url, an MCP server without a command).
// The error joins one *FieldError per problem.
func (c *Config) Validate() error {
	var p problems
	p.add("model", nonEmpty(c.Model))
	p.add("provider", checkName(c.Provider))
	for name, pr := range c.Providers {
		path := joinPath("providers", name)
		p.add(path, keyRule(checkName(name)))
		p.nest(path, pr.Validate())
		if _, written := c.sources[path]; !written {
			continue // what follows checks values a layer wrote
		}
		c.writtenZero(&p, path+".base_url", pr.BaseURL == "", checkURL)
		models := path + ".models"
		if _, written := c.sources[models]; !written {
			continue
		}
		for model, spec := range pr.Models {
			specPath := joinPath(models, model)
			c.writtenZero(&p, specPath+".context_window", spec.ContextWindow == 0, func(string) string { return atLeast(0, 1) })
			ctxPath := specPath + ".context"
			if _, set := c.sources[ctxPath]; !set {
				continue // the global numbers, checked as "context"
			}
			// The numbers a file set for this model.
			for _, fe := range fieldErrors(validateContext(c.contextAt(ctxPath, spec.Context), func(key string) bool { return c.Source(ctxPath+"."+key).Kind != KindDefault })) {
				if path := ctxPath + "." + fe.Path; c.Source(path).Kind != KindDefault {
					p.add(path, fe.Msg)
				}
			}
		}
	}
	p.add("persona", checkName(c.Persona))
	p.add("workspace", nonEmpty(c.Workspace))
	p.add("mode", oneOf(string(c.Mode), "ask", "auto-edit", "yolo"))
	p.add("max_turns", atLeast(c.MaxTurns, 0))
	p.add("notify_after_seconds", atLeast(c.NotifyAfter, 0))
	p.nest("context", validateContext(c.Context, func(key string) bool { return c.Source("context."+key).Kind != KindDefault }))
	p.nest("llm", c.LLM.Validate())
	p.nest("team", c.Team.Validate())
	p.nest("web", c.Web.Validate())
	p.nest("tui", c.TUI.Validate())
	p.nest("sandbox", c.Sandbox.Validate())
	p.nest("retention", c.Retention.Validate())
	for event, matchers := range c.Hooks {
		path := joinPath("hooks", event)
		// Every event of Claude Code's reference is accepted (those Polly
		// never fires are reported as unused); anything else is a typo.
		if !hooks.Documented(event) {
			msg := fmt.Sprintf("unknown hook event %q", event)
			if s := jsonfile.Closest(event, hooks.Events()); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (Polly fires " + strings.Join(hooks.FiredEvents(), ", ") + ")"
			}
			p.add(path, msg)
		}
		for i, m := range matchers {
			p.nest(indexPath(path, i), m.Validate())
			for j, h := range m.Hooks {
				c.writtenZero(&p, indexPath(indexPath(path, i)+".hooks", j)+".type", h.Type == "", func(s string) string { return oneOf(s, hookTypes()...) })
			}
		}
	}
	c.validateServers(&p, "mcp_servers", c.MCPServers)
	return p.join()
}

// writtenZero flags a value a layer set to the zero that means "not set"
// (a window of 0, a type of ""): the typed rules accept the zero, since
// they cannot tell it from a field no file mentions.
func (c *Config) writtenZero(p *problems, path string, zero bool, rule func(string) string) {
	if zero && c.Source(path).Kind != KindDefault {
		p.add(path, rule(""))
	}
}

// Validate checks the endpoint; the models' context numbers are checked by
// Config.Validate, which knows which of them a file set.
func (pr Provider) Validate() error {
	var p problems
	if pr.BaseURL != "" { // required, unless --base-url replaces it: checked by Load
		p.add("base_url", checkURL(pr.BaseURL))
	}
	p.add("api_key_env", checkEnvName(pr.APIKeyEnv))
	p.nest("headers", validateHeaders(pr.Headers))
	for name, spec := range pr.Models {
		if name == "" {
			p.add(`models[""]`, "key must not be empty")
		}
		if err := spec.Validate(); err != nil {
			p.nest(joinPath("models", name), err)
		}
	}
	return p.join()
}

// Validate checks the window (0: unknown), output limit, margin and prices.
func (m ModelSpec) Validate() error {
	var p problems
	if m.ContextWindow != 0 { // 0: unknown
		p.add("context_window", atLeast(m.ContextWindow, 1))
	}
	p.add("max_output_tokens", atLeast(m.MaxOutputTokens, 0))
	p.add("safety_margin_tokens", atLeast(m.SafetyMargin, 0))
	for _, price := range []struct {
		key string
		v   *float64
	}{{"input_price", m.InputPrice}, {"output_price", m.OutputPrice}, {"cached_input_price", m.CachedInputPrice}} {
		if price.v != nil {
			p.add(price.key, atLeast(*price.v, 0))
		}
	}
	return p.join()
}

// validateContext checks the context engine's numbers: 0 is "not set"
// (the default applies), so only a number a layer wrote (or a negative
// one) is checked — a whole number at least 1, a share in (0, 1].
// written reports whether a layer wrote the field with this JSON name.
func validateContext(s ContextSettings, written func(key string) bool) error {
	var p problems
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		key, f := jsonName(v.Type().Field(i)), v.Field(i)
		switch f.Kind() {
		case reflect.Int:
			if n := int(f.Int()); n != 0 || written(key) {
				p.add(key, atLeast(n, 1))
			}
		case reflect.Float64:
			if x := f.Float(); x != 0 || written(key) {
				p.add(key, share(x))
			}
		}
	}
	return p.join()
}

// Validate checks retries and timeouts.
func (l LLMSettings) Validate() error {
	var p problems
	p.add("max_retries", atLeast(l.MaxRetries, 0))
	p.add("idle_timeout_seconds", atLeast(l.IdleTimeoutSeconds, 1))
	p.add("call_timeout_seconds", atLeast(l.CallTimeoutSeconds, 1))
	return p.join()
}

// Validate checks the delegation bounds.
func (t TeamSettings) Validate() error {
	var p problems
	p.add("max_parallel", atLeast(t.MaxParallel, 1))
	p.add("max_depth", atLeast(t.MaxDepth, 0))
	return p.join()
}

// Validate checks the user agent, timeout and size limit.
func (w WebSettings) Validate() error {
	var p problems
	p.add("user_agent", nonEmpty(w.UserAgent))
	p.add("timeout_seconds", atLeast(w.TimeoutSeconds, 1))
	p.add("max_bytes", atLeast(w.MaxBytes, 1))
	return p.join()
}

// Validate checks the theme.
func (t TUISettings) Validate() error {
	var p problems
	p.add("theme", oneOf(t.Theme, "auto", "dark", "light"))
	p.add("notify", oneOf(t.Notify, "bell", "osc9", "off"))
	return p.join()
}

// Validate checks the mode, the extra writable roots, the variables and the deny-read paths.
func (s SandboxSettings) Validate() error {
	var p problems
	p.add("mode", oneOf(s.Mode, "auto", "on", "off"))
	for i, root := range s.WritableRoots {
		if !strings.HasPrefix(root, "/") && root != "~" && !strings.HasPrefix(root, "~/") {
			p.add(indexPath("writable_roots", i), fmt.Sprintf("expected an absolute path (or one starting with ~/), got %q", root))
		}
	}
	for i, name := range s.PassEnv {
		p.add(indexPath("pass_env", i), checkEnvName(name))
	}
	for i, path := range s.DenyRead {
		if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "~/") {
			p.add(indexPath("deny_read", i), fmt.Sprintf("expected an absolute path (or one starting with ~/), got %q", path))
		}
	}
	return p.join()
}

// Validate checks the retention period.
func (r RetentionSettings) Validate() error {
	var p problems
	p.add("days", atLeast(r.Days, 1))
	return p.join()
}

// Validate checks the matcher and each hook.
func (m HookMatcher) Validate() error {
	var p problems
	if err := hooks.CheckMatcher(m.Matcher); err != nil {
		p.add("matcher", fmt.Sprintf("%q is not a valid regular expression: %v", m.Matcher, strings.TrimPrefix(err.Error(), "error parsing regexp: ")))
	}
	for i, h := range m.Hooks {
		p.nest(indexPath("hooks", i), h.Validate())
	}
	return p.join()
}

func hookTypes() []string { return []string{"command", "http", "prompt", "agent", "mcp_tool"} }

// Validate checks a handler: its type ("": command) and the fields that
// type needs.
func (h HookCommand) Validate() error {
	var p problems
	if h.Type != "" {
		p.add("type", oneOf(h.Type, hookTypes()...))
	}
	switch h.Type {
	case "", "command":
		p.add("command", nonEmpty(h.Command))
	case "http":
		if h.URL == "" {
			p.add("url", "an http hook needs a url")
		} else {
			p.add("url", checkURL(h.URL))
		}
		p.nest("headers", validateHeaders(h.Headers))
	case "prompt", "agent":
		p.add("prompt", nonEmpty(h.Prompt))
	case "mcp_tool":
		p.add("server", nonEmpty(h.Server))
		p.add("tool", nonEmpty(h.Tool))
	}
	if h.Shell != "" {
		p.add("shell", oneOf(h.Shell, "bash", "powershell"))
	}
	p.add("timeout", atLeast(h.Timeout, 0))
	return p.join()
}

// Validate checks each value on its own ("" type: stdio; 0 timeout: the
// default); whether the server has what its type needs is checked once
// every layer is in (checkExtensions).
func (s MCPServer) Validate() error {
	var p problems
	if s.Type != "" {
		p.add("type", oneOf(s.Type, mcpTypes()...))
	}
	if _, empty := s.Env[""]; empty {
		p.add(`env[""]`, "key must not be empty")
	}
	if s.URL != "" {
		p.add("url", checkURL(s.URL))
	}
	p.nest("headers", validateHeaders(s.Headers))
	if s.StartupTimeout != 0 {
		p.add("startup_timeout_seconds", atLeast(s.StartupTimeout, 1))
	}
	if s.ToolTimeout != 0 {
		p.add("tool_timeout_seconds", atLeast(s.ToolTimeout, 1))
	}
	return p.join()
}

func mcpTypes() []string { return []string{"stdio", "http", "streamable-http", "sse"} }

// validateServers checks MCP servers of the config files (prefix
// "mcp_servers") or of .mcp.json ("mcpServers").
func (c *Config) validateServers(p *problems, prefix string, servers map[string]MCPServer) {
	for name, s := range servers {
		path := joinPath(prefix, name)
		p.add(path, keyRule(checkName(name)))
		p.nest(path, s.Validate())
		c.writtenZero(p, path+".type", s.Type == "", func(s string) string { return oneOf(s, mcpTypes()...) })
		c.writtenZero(p, path+".startup_timeout_seconds", s.StartupTimeout == 0, func(string) string { return atLeast(0, 1) })
		c.writtenZero(p, path+".tool_timeout_seconds", s.ToolTimeout == 0, func(string) string { return atLeast(0, 1) })
	}
}

func validateHeaders(headers map[string]string) error {
	var p problems
	for name := range headers {
		if name == "" || strings.ContainsFunc(name, func(r rune) bool {
			return r <= ' ' || r >= 0x7f || strings.ContainsRune(`:()<>@,;\"/[]?={}`, r)
		}) {
			p.add(joinPath("", name), fmt.Sprintf("%q is not a valid HTTP header name", name))
		}
	}
	return p.join()
}

// The rules return what is wrong, or "".

func atLeast[T int | int64 | float64](v, lo T) string {
	if v < lo {
		return fmt.Sprintf("must be at least %v, got %v", lo, v)
	}
	return ""
}

// share is a fraction in (0, 1].
func share(f float64) string {
	switch {
	case f <= 0:
		return "must be greater than 0, got " + strconv.FormatFloat(f, 'g', -1, 64)
	case f > 1:
		return "must be at most 1, got " + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return ""
}

func oneOf(s string, opts ...string) string {
	if slices.Contains(opts, s) {
		return ""
	}
	msg := fmt.Sprintf("expected one of %s, got %q", strings.Join(opts, ", "), s)
	if c := jsonfile.Closest(s, opts); c != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", c)
	}
	return msg
}

func nonEmpty(s string) string {
	if s == "" {
		return "must not be empty"
	}
	return ""
}

// keyRule words a rule's message for a map key.
func keyRule(msg string) string {
	if msg == "" {
		return ""
	}
	return "key " + msg
}

// checkName guards names that appear in paths and in "provider/model":
// no slashes, no spaces.
func checkName(s string) string {
	if s == "" {
		return "must not be empty"
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && (r == '.' || r == '_' || r == '-')
		if !ok {
			return fmt.Sprintf("%q is not a valid name (letters, digits, '.', '_', '-')", s)
		}
	}
	return ""
}

func checkURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("expected an http or https URL, got %q", s)
	}
	return ""
}

func checkEnvName(s string) string {
	// A common slip is pasting the key itself here; never echo it.
	const keyLike = "expected the name of an environment variable (e.g. \"OPENAI_API_KEY\"), got what looks like an API key; put the key in that variable instead"
	lower, digit := false, false
	for i, r := range s {
		lower = lower || r >= 'a' && r <= 'z'
		digit = digit || r >= '0' && r <= '9'
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			if strings.HasPrefix(s, "sk-") || len(s) >= 20 {
				return keyLike
			}
			return fmt.Sprintf("%q is not an environment variable name", s)
		}
	}
	if len(s) >= 32 && lower && digit {
		return keyLike
	}
	return ""
}

// locate turns the first of Validate's problems, in the order of the
// layers and of the files (Validate walks maps in no order), into an
// *Error at the place its value came from.
func (c *Config) locate(err error) error {
	var first *FieldError
	var firstSrc Source
	for _, fe := range fieldErrors(err) {
		src := c.nearestSource(fe.Path)
		if first == nil || cmp.Or(cmp.Compare(src.Kind, firstSrc.Kind), cmp.Compare(src.Line, firstSrc.Line),
			cmp.Compare(src.Col, firstSrc.Col), cmp.Compare(fe.Path, first.Path)) < 0 {
			first, firstSrc = fe, src
		}
	}
	if first == nil {
		return nil
	}
	return sourceError(firstSrc, first.Path, first.Msg)
}

// nearestSource is where path's value came from or, for a value no layer
// wrote (a required field left out), where the object holding it did.
func (c *Config) nearestSource(path string) Source {
	for {
		if src, ok := c.sources[path]; ok || path == "" {
			return src
		}
		if i := strings.LastIndexAny(path, ".["); i >= 0 {
			path = path[:i]
		} else {
			path = ""
		}
	}
}

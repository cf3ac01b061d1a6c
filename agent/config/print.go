package config

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"polly/memory/window"
)

// Value is one effective setting as `polly config` shows it. Secrets are
// already masked.
type Value struct {
	Key     string `json:"key"`
	Value   string `json:"value"`
	Source  Source `json:"source"`
	Ignored bool   `json:"ignored,omitempty"` // a project setting not applied: the project is not trusted
}

// Values lists the effective settings, grouped as Print shows them: the
// active model and its provider, general settings, the context numbers
// (with the active model's overrides), llm, team, permissions, web, tui,
// and the configured providers. Suited to `polly config --json`.
func (c *Config) Values() []Value {
	return slices.Concat(c.groups()...)
}

// Print writes the effective settings, one per line with its source, in
// aligned groups, followed by any warnings.
func (c *Config) Print(w io.Writer) error {
	groups := c.groups()
	kw, vw := 0, 0
	for _, g := range groups {
		for _, v := range g {
			kw = max(kw, utf8.RuneCountInString(v.Key))
			vw = max(vw, utf8.RuneCountInString(v.Value))
		}
	}
	vw = min(vw, 48) // a long user agent should not push every source off screen
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteByte('\n')
		}
		for _, v := range g {
			src := v.Source.String()
			if v.Ignored {
				src += " (ignored: project not trusted)"
			}
			fmt.Fprintf(&b, "%s  %s  %s\n", pad(v.Key, kw), pad(v.Value, vw), src)
		}
	}
	for _, warning := range c.warnings {
		b.WriteString("\nwarning: " + warning)
	}
	if len(c.warnings) > 0 {
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("print config: %w", err)
	}
	return nil
}

func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

func (c *Config) groups() [][]Value {
	prov, name := c.activeProviderAndName()
	m := c.resolve(prov, name)
	provPath := joinPath("providers", prov)
	specPath := joinPath(provPath+".models", name)

	var model []Value
	add := func(g *[]Value, key, val string, src Source) {
		*g = append(*g, Value{Key: key, Value: val, Source: src})
	}
	add(&model, "model", name, c.Source("model"))
	provSrc := c.Source("provider")
	if prov != c.Provider {
		provSrc = c.Source("model") // chosen by the "provider/" prefix
	}
	add(&model, "provider", prov, provSrc)
	baseSrc := c.Source(provPath + ".base_url")
	if _, src, ok := c.baseURLFor(prov); ok {
		baseSrc = src
	}
	add(&model, "base_url", m.BaseURL, baseSrc)
	switch {
	case c.apiKey != "":
		add(&model, "api_key", maskSecret(m.APIKey), c.Source("api_key"))
	case c.envKeys[prov] != "":
		add(&model, "api_key", maskSecret(m.APIKey), Source{Kind: KindEnv, Detail: m.APIKeyEnv})
	case m.APIKey != "":
		add(&model, "api_key", maskSecret(m.APIKey), c.Source(provPath+".api_key"))
	case m.APIKeyEnv != "":
		add(&model, "api_key", "(none)", Source{Detail: m.APIKeyEnv + " is not set"})
	default:
		add(&model, "api_key", "(none)", Source{})
	}
	for _, h := range slices.Sorted(maps.Keys(m.Headers)) {
		val := m.Headers[h]
		if sensitiveHeader(h) {
			val = maskSecret(val)
		}
		add(&model, "headers."+h, val, c.Source(joinPath(provPath+".headers", h)))
	}
	window, windowSrc := "unknown", Source{Detail: SourceUnknown}
	if m.ContextWindow > 0 {
		window = strconv.Itoa(m.ContextWindow)
		windowSrc = c.Source(specPath + ".context_window")
		if m.WindowSource != SourceConfig {
			windowSrc = Source{Detail: m.WindowSource}
		}
	}
	add(&model, "context_window", window, windowSrc)
	fixed := 0
	if c.fixed.Tokens > 0 && c.fixed.Model == m.Name {
		fixed = c.fixed.Tokens
	}
	if m.Tools != nil {
		src := c.Source(specPath + ".tools")
		if src.Kind == KindDefault && len(m.Tools) > 0 {
			src = c.Source(indexPath(specPath+".tools", 0)) // a list's source is its items'
		}
		add(&model, "tools", strings.Join(m.Tools, ", "), src)
	}
	add(&model, "summarize_threshold", strconv.Itoa(m.Threshold(fixed)), Source{Detail: c.thresholdWhy(m, fixed)})
	if m.Price == nil {
		add(&model, "price", "unknown (no cost shown)", Source{Detail: SourceUnknown})
	}
	if m.Price != nil {
		for _, p := range []struct {
			key string
			v   float64
		}{{"input_price", m.Price.Input}, {"output_price", m.Price.Output}, {"cached_input_price", m.Price.CachedInput}} {
			src := c.Source(specPath + "." + p.key)
			if m.PriceSource != SourceConfig {
				src = Source{Detail: m.PriceSource}
			}
			add(&model, p.key, strconv.FormatFloat(p.v, 'g', -1, 64), src)
		}
	}

	var general []Value
	add(&general, "persona", c.Persona, c.Source("persona"))
	add(&general, "workspace", displayPath(c.Workspace, c.home), c.Source("workspace"))
	add(&general, "mode", string(c.Mode), c.Source("mode"))
	add(&general, "max_turns", strconv.Itoa(c.MaxTurns), c.Source("max_turns"))
	add(&general, "notify_after_seconds", strconv.Itoa(c.NotifyAfter), c.Source("notify_after_seconds"))

	// Context numbers: a model override shows the override's source.
	var ctx []Value
	eff := reflect.ValueOf(m.Context.WithDefaults())
	for i := range eff.NumField() {
		key := jsonName(eff.Type().Field(i))
		src := c.Source("context." + key)
		if over, set := c.sources[specPath+".context."+key]; set {
			src = over
		}
		add(&ctx, "context."+key, formatValue(eff.Field(i)), src)
	}

	groups := [][]Value{model, general, ctx}
	for _, s := range []struct {
		prefix string
		v      any
	}{{"llm", c.LLM}, {"team", c.Team}} {
		groups = append(groups, c.structValues(s.prefix, s.v))
	}
	var perms []Value
	for _, l := range []struct {
		key   string
		rules []Rule
	}{{"permissions.allow", c.Permissions.Allow}, {"permissions.ask", c.Permissions.Ask}, {"permissions.deny", c.Permissions.Deny}} {
		for i, r := range l.rules {
			key := indexPath(l.key, i)
			add(&perms, key, r.String(), c.Source(key))
		}
	}
	if len(perms) > 0 {
		groups = append(groups, perms)
	}
	var ignored []Value
	for _, k := range c.Untrusted() {
		ignored = append(ignored, Value{Key: k.Path, Value: k.Value, Source: k.Source, Ignored: true})
	}
	if len(ignored) > 0 {
		groups = append(groups, ignored)
	}
	groups = append(groups, c.structValues("web", c.Web), c.structValues("tui", c.TUI), c.structValues("memory", c.Memory), c.structValues("retention", c.Retention))
	sb := []Value{{Key: "sandbox.mode", Value: c.Sandbox.Mode, Source: c.Source("sandbox.mode")},
		{Key: "sandbox.network", Value: strconv.FormatBool(c.Sandbox.Network), Source: c.Source("sandbox.network")}}
	for _, l := range []struct {
		key  string
		list []string
	}{{"sandbox.writable_roots", c.Sandbox.WritableRoots}, {"sandbox.pass_env", c.Sandbox.PassEnv}, {"sandbox.deny_read", c.Sandbox.DenyRead}} {
		for i, v := range l.list {
			key := indexPath(l.key, i)
			sb = append(sb, Value{Key: key, Value: v, Source: c.Source(key)})
		}
	}
	groups = append(groups, sb)
	if ext := c.extensionValues(); len(ext) > 0 {
		groups = append(groups, ext)
	}

	var provs []Value
	for _, p := range slices.Sorted(maps.Keys(c.Providers)) {
		path := joinPath("providers", p)
		add(&provs, path, fmt.Sprintf("%s (%d models)", c.Providers[p].BaseURL, len(c.Providers[p].Models)), c.Source(path))
	}
	return append(groups, provs)
}

// thresholdWhy says what the summarization threshold was derived from:
// the agent's formula with this model's numbers.
func (c *Config) thresholdWhy(m ModelInfo, fixed int) string {
	s := m.Context.WithDefaults()
	if m.Threshold(fixed) == s.SummarizeAt {
		return "context.summarize_at_tokens"
	}
	w := m.ContextWindow
	if w <= 0 {
		w = window.UnknownWindow
	}
	why := fmt.Sprintf("fixed cost + %g × the rest of the %d-token budget of the %d-token window", s.SummarizeRatio, m.Budget(), w)
	if fixed > 0 {
		return fmt.Sprintf("%s; fixed cost %d tokens (%s)", why, fixed, c.fixed.From)
	}
	return why + "; fixed cost not measured yet (no call in this project): the threshold rises by a quarter of it"
}

// structValues flattens a settings struct of scalars.
func (c *Config) structValues(prefix string, s any) []Value {
	v := reflect.ValueOf(s)
	var out []Value
	for i := range v.NumField() {
		key := prefix + "." + jsonName(v.Type().Field(i))
		out = append(out, Value{Key: key, Value: formatValue(v.Field(i)), Source: c.Source(key)})
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func formatValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return v.String()
}

// maskSecret keeps a recognisable prefix and the last four characters, as
// provider dashboards do: "sk-…abcd". Short secrets are hidden entirely.
func maskSecret(s string) string {
	if len(s) < 12 {
		return "…"
	}
	prefix := ""
	if strings.HasPrefix(s, "sk-") {
		prefix = "sk-"
	}
	return prefix + "…" + s[len(s)-4:]
}

func sensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "cookie", "password"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

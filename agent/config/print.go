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
)

// Value is one effective setting as `polly config` shows it. Secrets are
// already masked.
type Value struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source Source `json:"source"`
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
			fmt.Fprintf(&b, "%s  %s  %s\n", pad(v.Key, kw), pad(v.Value, vw), v.Source)
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
	spec := c.Providers[prov].Models[name]

	var model []Value
	add := func(g *[]Value, key, val string, src Source) { *g = append(*g, Value{key, val, src}) }
	add(&model, "model", name, c.Source("model"))
	provSrc := c.Source("provider")
	if prov != c.Provider {
		provSrc = c.Source("model") // chosen by the "provider/" prefix
	}
	add(&model, "provider", prov, provSrc)
	baseSrc := c.Source(provPath + ".base_url")
	if c.baseURL != "" {
		baseSrc = c.Source("base_url")
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
	windowSrc := c.Source(specPath + ".context_window")
	if !m.Known {
		windowSrc = Source{Detail: "model not listed"}
	}
	add(&model, "context_window", strconv.Itoa(m.ContextWindow), windowSrc)
	for _, p := range []struct {
		key string
		v   *float64
	}{{"input_price", spec.InputPrice}, {"output_price", spec.OutputPrice}, {"cached_input_price", spec.CachedInputPrice}} {
		if p.v != nil {
			add(&model, p.key, strconv.FormatFloat(*p.v, 'g', -1, 64), c.Source(specPath+"."+p.key))
		}
	}

	var general []Value
	add(&general, "persona", c.Persona, c.Source("persona"))
	add(&general, "workspace", displayPath(c.Workspace, c.home), c.Source("workspace"))
	add(&general, "mode", string(c.Mode), c.Source("mode"))
	add(&general, "max_turns", strconv.Itoa(c.MaxTurns), c.Source("max_turns"))

	// Context numbers: a model override shows the override's source.
	var ctx []Value
	over := reflect.ValueOf(spec.Context)
	eff := reflect.ValueOf(m.Context)
	for i := range eff.NumField() {
		key := jsonName(eff.Type().Field(i))
		src := c.Source("context." + key)
		if !over.Field(i).IsNil() {
			src = c.Source(specPath + ".context." + key)
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
	groups = append(groups, c.structValues("web", c.Web), c.structValues("tui", c.TUI))
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

// structValues flattens a settings struct of scalars.
func (c *Config) structValues(prefix string, s any) []Value {
	v := reflect.ValueOf(s)
	var out []Value
	for i := range v.NumField() {
		key := prefix + "." + jsonName(v.Type().Field(i))
		out = append(out, Value{key, formatValue(v.Field(i)), c.Source(key)})
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

package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"polly/workspace/jsonfile"
)

// LoadOptions are the inputs of Load; nothing is read from the process
// except the files they name.
type LoadOptions struct {
	ProjectDir string              // project root holding .agent/config.json; "" skips the project file
	Home       string              // home directory: ~ expansion and the default user config dir
	Getenv     func(string) string // os.Getenv in production; nil reads nothing; "" counts as unset
	Flags      Flags               // only the flags the user gave
	Version    string              // Polly's version, for the web user agent
}

// Flags are the command-line flags that feed the config. The CLI sets a
// pointer only when the user gave the flag.
type Flags struct {
	Model     *string // --model
	BaseURL   *string // --base-url
	APIKey    *string // --api-key
	Persona   *string // --persona
	Workspace *string // --workspace
	Mode      *string // --mode ask|auto-edit|yolo
	Yolo      bool    // --yolo, the same as --mode yolo
	MaxTurns  *int    // --max-turns
	Sandbox   *string // --sandbox auto|on|off
}

// maxFileSize bounds what is read, so POLLY_CONFIG=/dev/zero fails fast.
const maxFileSize = 1 << 20

// projectFile is the project config path relative to the project root, as shown.
const projectFile = ".agent/config.json"

// Load builds the effective configuration: defaults, then the user file
// ($POLLY_CONFIG, else $XDG_CONFIG_HOME/polly/config.json, else
// ~/.config/polly/config.json), then <ProjectDir>/.agent/config.json, then
// the environment, then flags. Missing files are skipped, except a file
// named by POLLY_CONFIG. Any problem is returned as an *Error naming the
// file, line, column and field, or the variable or flag.
//
// Objects merge key by key (a project file may add one model to a provider
// the user file defines), permission rules from all layers accumulate, and
// everything else is replaced by the higher layer.
func Load(opts LoadOptions) (*Config, error) {
	return load(opts, readFile)
}

func load(opts LoadOptions, read func(string) ([]byte, error)) (*Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	c := Defaults(opts.Version)
	c.home = opts.Home
	c.opts = opts
	if dir := xdgDir(opts.Home, getenv, "XDG_CONFIG_HOME", ".config"); dir != "" {
		c.trust.Store = filepath.Join(dir, TrustFile)
	}
	c.cacheDir = xdgDir(opts.Home, getenv, "XDG_CACHE_HOME", ".cache")
	c.stateDir = xdgDir(opts.Home, getenv, "XDG_STATE_HOME", filepath.Join(".local", "state"))

	userPath, explicit, err := userConfigPath(opts.Home, getenv)
	if err != nil {
		return nil, err
	}
	if userPath != "" {
		c.userFile = displayPath(userPath, opts.Home)
		if err := c.mergeFile(read, userPath, c.userFile, KindUserFile, explicit, nil); err != nil {
			return nil, err
		}
	}
	if opts.ProjectDir == "" {
		c.readClaudeFiles(read, opts.Home, "")
	}
	if opts.ProjectDir != "" {
		path := filepath.Join(opts.ProjectDir, filepath.FromSlash(projectFile))
		if n, data := mcpTrustNode(read, opts.ProjectDir); n != nil {
			c.extraTrust = append(c.extraTrust, trustedDoc{key: "mcpServers", file: MCPFile, node: n, data: data})
		}
		c.readClaudeFiles(read, opts.Home, opts.ProjectDir)
		if err := c.mergeFile(read, path, projectFile, KindProjectFile, false, c.holdUntrusted(read)); err != nil {
			return nil, err
		}
		if c.trust.Dir == "" && len(c.extraTrust) > 0 {
			// No project config.json: .mcp.json or .claude/ hooks alone still need trust.
			c.judgeTrust(read, nil)
		}
		c.mergeMCPFile(read, opts.ProjectDir)
	}
	// Every layer is checked as it comes in, so a bad value is reported
	// where it is written even when a higher layer replaces it.
	if err := c.mergeEnv(getenv); err != nil {
		return nil, err
	}
	if err := c.mergeFlags(opts.Flags); err != nil {
		return nil, err
	}
	for name, p := range c.Providers {
		if p.APIKeyEnv != "" {
			c.envKeys[name] = getenv(p.APIKeyEnv)
		}
	}
	if err := c.resolveWorkspace(opts.Home, opts.ProjectDir); err != nil {
		return nil, err
	}
	if err := c.checkProviders(); err != nil {
		return nil, err
	}
	if err := c.checkExtensions(); err != nil {
		return nil, err
	}
	c.warnings = append(c.warnings, c.collectWarnings()...)
	return c, nil
}

// userConfigPath finds the user file; explicit is true when POLLY_CONFIG
// names it (then it must exist).
func userConfigPath(home string, getenv func(string) string) (path string, explicit bool, err error) {
	if p := getenv("POLLY_CONFIG"); p != "" {
		p, err := expandHome(p, home)
		if err != nil {
			return "", false, &Error{Env: "POLLY_CONFIG", Msg: err.Error()}
		}
		return p, true, nil
	}
	if dir := xdgDir(home, getenv, "XDG_CONFIG_HOME", ".config"); dir != "" {
		return filepath.Join(dir, "config.json"), false, nil
	}
	return "", false, nil
}

// xdgDir is Polly's directory in an XDG base directory: $variable/polly,
// else ~/fallback/polly (the spec says relative values are to be ignored);
// "" when neither is known. The config dir holds config.json and the trust
// store; the cache dir what Polly learns about models; the state dir the
// install id.
func xdgDir(home string, getenv func(string) string, variable, fallback string) string {
	if x := getenv(variable); filepath.IsAbs(x) {
		return filepath.Join(x, "polly")
	}
	if home != "" {
		return filepath.Join(home, fallback, "polly")
	}
	return ""
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes; is it the right file?", path, maxFileSize)
	}
	return data, nil
}

// holdUntrusted returns the filter for the project file: the settings that
// need trust stay out unless the user trusts exactly these values.
func (c *Config) holdUntrusted(read func(string) ([]byte, error)) func([]byte, *jsonfile.Node) *jsonfile.Node {
	return func(data []byte, root *jsonfile.Node) *jsonfile.Node {
		c.projectData = data
		free, held := c.splitProject(root)
		if c.judgeTrust(read, held) {
			return root
		}
		c.warnings = append(c.warnings, c.untrustedWarning())
		return free
	}
}

// mergeFile merges one file; filter, when set, chooses what of it applies.
func (c *Config) mergeFile(read func(string) ([]byte, error), path, display string, kind Kind, mustExist bool, filter func([]byte, *jsonfile.Node) *jsonfile.Node) error {
	doc, err := readDocument(read, path, display, mustExist)
	if err != nil || doc == nil || doc.Root == nil {
		return err // a missing or empty file sets nothing
	}
	root := doc.Root
	if filter != nil {
		root = filter(doc.Data, root)
	}
	d := decoder{c: c, l: layer{kind: kind, detail: display, data: doc.Data}}
	if err := d.mergeFile(root); err != nil {
		return err
	}
	return c.locate(c.Validate())
}

// readDocument reads and parses one JSON file; nil when it does not exist
// (and need not). Problems are an *Error naming the file, line and column.
func readDocument(read func(string) ([]byte, error), path, display string, mustExist bool) (*jsonfile.Document, error) {
	data, err := read(path)
	if errors.Is(err, fs.ErrNotExist) && !mustExist {
		return nil, nil
	}
	if err != nil {
		msg := "cannot read: " + err.Error()
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			msg = "cannot read: " + pe.Err.Error()
		}
		if mustExist {
			msg += " (named by POLLY_CONFIG)"
		}
		return nil, &Error{File: display, Msg: msg, Err: err}
	}
	doc, err := jsonfile.Parse(data)
	if pe := (*jsonfile.Error)(nil); errors.As(err, &pe) {
		return nil, &Error{File: display, Line: pe.Line, Col: pe.Col, Msg: pe.Msg}
	}
	if err != nil {
		return nil, &Error{File: display, Msg: err.Error(), Err: err}
	}
	return doc, nil
}

func (c *Config) mergeEnv(getenv func(string) string) error {
	set := false
	for _, e := range []struct {
		name, field string
		dst         *string
	}{
		{"POLLY_PROVIDER", "provider", &c.Provider},
		{"POLLY_MODEL", "model", &c.Model},
		{"POLLY_WORKSPACE", "workspace", &c.Workspace},
		{"POLLY_MODE", "mode", (*string)(&c.Mode)},
	} {
		if v := getenv(e.name); v != "" {
			*e.dst, c.sources[e.field] = v, Source{Kind: KindEnv, Detail: e.name}
			set = true
		}
	}
	if v := getenv("OPENAI_BASE_URL"); v != "" {
		src := Source{Kind: KindEnv, Detail: "OPENAI_BASE_URL"}
		if msg := checkURL(v); msg != "" {
			return sourceError(src, "base_url", msg)
		}
		c.envBaseURL, c.sources["base_url"] = v, src
	}
	if set {
		return c.locate(c.Validate())
	}
	return nil
}

func (c *Config) mergeFlags(f Flags) error {
	set := f.Yolo || f.MaxTurns != nil
	for _, s := range []struct {
		v           *string
		flag, field string
		dst         *string
	}{
		{f.Model, "--model", "model", &c.Model},
		{f.Persona, "--persona", "persona", &c.Persona},
		{f.Workspace, "--workspace", "workspace", &c.Workspace},
		{f.Mode, "--mode", "mode", (*string)(&c.Mode)},
		{f.Sandbox, "--sandbox", "sandbox.mode", &c.Sandbox.Mode},
	} {
		if s.v != nil {
			*s.dst, c.sources[s.field] = *s.v, Source{Kind: KindFlag, Detail: s.flag}
			set = true
		}
	}
	if f.Yolo {
		if f.Mode != nil && Mode(*f.Mode) != ModeYolo {
			return &Error{Flag: "--yolo", Field: "mode", Msg: fmt.Sprintf("conflicts with --mode %s", *f.Mode)}
		}
		c.Mode, c.sources["mode"] = ModeYolo, Source{Kind: KindFlag, Detail: "--yolo"}
	}
	if f.MaxTurns != nil {
		c.MaxTurns, c.sources["max_turns"] = *f.MaxTurns, Source{Kind: KindFlag, Detail: "--max-turns"}
	}
	if f.BaseURL != nil {
		src := Source{Kind: KindFlag, Detail: "--base-url"}
		if msg := checkURL(*f.BaseURL); msg != "" {
			return sourceError(src, "base_url", msg)
		}
		c.flagBaseURL, c.sources["base_url"] = *f.BaseURL, src
	}
	if f.APIKey != nil {
		src := Source{Kind: KindFlag, Detail: "--api-key"}
		if *f.APIKey == "" {
			return sourceError(src, "api_key", "must not be empty")
		}
		c.apiKey, c.sources["api_key"] = *f.APIKey, src
	}
	if set {
		return c.locate(c.Validate())
	}
	return nil
}

// resolveWorkspace expands ~ and makes relative paths relative to the
// project root, whichever layer they came from.
func (c *Config) resolveWorkspace(home, projectDir string) error {
	ws, err := expandHome(c.Workspace, home)
	if err != nil {
		return sourceError(c.Source("workspace"), "workspace", err.Error())
	}
	if !filepath.IsAbs(ws) && projectDir != "" {
		ws = filepath.Join(projectDir, ws)
	}
	c.Workspace = filepath.Clean(ws)
	return nil
}

// expandHome expands a leading "~" or "~/". "~user" is not supported.
func expandHome(path, home string) (string, error) {
	if !strings.HasPrefix(path, "~") {
		return path, nil
	}
	rest := path[1:]
	if rest != "" && rest[0] != '/' && rest[0] != filepath.Separator {
		return "", fmt.Errorf("cannot expand %q: only ~ and ~/ are supported", path)
	}
	if home == "" {
		return "", fmt.Errorf("cannot expand %q: the home directory is unknown", path)
	}
	return filepath.Join(home, rest), nil
}

// checkProviders checks what needs several values and their sources: the
// active provider exists, a "provider/" prefix names one, every provider
// has a base URL.
func (c *Config) checkProviders() error {
	names := slices.Sorted(maps.Keys(c.Providers))
	if _, ok := c.Providers[c.Provider]; !ok {
		msg := fmt.Sprintf("unknown provider %q", c.Provider)
		if s := jsonfile.Closest(c.Provider, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else {
			msg += " (configured: " + strings.Join(names, ", ") + ")"
		}
		return sourceError(c.Source("provider"), "provider", msg)
	}
	// A typo in a "provider/model" prefix would otherwise send the whole
	// name to the active provider and fail later with a vaguer error.
	_, listed := c.Providers[c.Provider].Models[c.Model]
	if p, _, ok := strings.Cut(c.Model, "/"); ok && !listed && c.Source("model").Kind > c.Source("provider").Kind {
		if _, known := c.Providers[p]; !known {
			if s := jsonfile.Closest(p, names); s != "" {
				return sourceError(c.Source("model"), "model", fmt.Sprintf(
					"no provider named %q (did you mean %q?); to send the whole name to provider %q, set \"provider\" explicitly",
					p, s, c.Provider))
			}
		}
	}
	for _, name := range names {
		if _, _, set := c.baseURLFor(name); c.Providers[name].BaseURL == "" && !set {
			path := joinPath("providers", name)
			return sourceError(c.Source(path), path, "base_url is required")
		}
	}
	return nil
}

// collectWarnings lists settings that work but deserve a second look.
func (c *Config) collectWarnings() []string {
	var w []string
	for _, name := range slices.Sorted(maps.Keys(c.Providers)) {
		base := joinPath("providers", name)
		if src := c.Source(base + ".api_key"); src.Kind != KindDefault {
			w = append(w, fmt.Sprintf("%s.api_key is set in %s; keep keys out of config files and name a variable with api_key_env", base, src))
		}
		// A cloned repository could redirect your key to its own server.
		for _, f := range []string{".base_url", ".api_key_env"} {
			if src := c.Source(base + f); src.Kind == KindProjectFile {
				w = append(w, fmt.Sprintf("the project file sets %s%s (%s): your API key goes where it says; check it if you did not write it", base, f, src))
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(c.sources)) {
		if src := c.sources[f]; strings.HasPrefix(f, "sandbox.") && src.Kind == KindProjectFile {
			w = append(w, fmt.Sprintf("the project file sets %s (%s): it changes what commands may do; check it if you did not write it", f, src))
		}
	}
	if active, _ := c.activeProviderAndName(); c.envBaseURL != "" && active != DefaultProvider {
		w = append(w, fmt.Sprintf("OPENAI_BASE_URL is set, but the active provider is %q: the variable applies only to the %s provider, so %s's key goes to its own base URL (%s), not to %s",
			active, DefaultProvider, active, c.ProviderEndpoint(active).BaseURL, c.envBaseURL))
	}
	if src := c.Source("mode"); src.Kind == KindProjectFile && c.Mode == ModeYolo {
		w = append(w, fmt.Sprintf("the project file sets mode yolo (%s): commands run without asking", src))
	}
	return w
}

// Warnings are settings that work but deserve a second look (a key in a
// file, a project file redirecting the API). Print shows them.
func (c *Config) Warnings() []string { return slices.Clone(c.warnings) }

package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"time"

	"polly/workspace/atomicfile"
	"polly/workspace/jsonfile"
)

// A cloned repository's .agent/config.json is written by whoever wrote the
// repository. Every setting in it but presentation takes effect only once
// the user trusts that project; until then it is ignored with a warning.
// That covers where the API key goes and what runs without asking, and
// also the model, its window and the limits: a window of 100 tokens makes
// Polly refuse to run, a limit can stall it.
//
// The list is an allowlist of what a project may set freely, so settings
// added later and unknown keys need trust without anyone remembering to
// add them here.
var (
	// freeTop are the top-level keys a project file may set without trust:
	// presentation, and when the user's own hooks are told a turn ended.
	freeTop = map[string]bool{"tui": true, "notify_after_seconds": true}
	// freePermissions are the permission lists a project may extend freely:
	// they only make Polly ask or refuse more.
	freePermissions = map[string]bool{"ask": true, "deny": true}
)

// TrustFile is the trust store's name in the user's config directory.
const TrustFile = "trusted_projects.json"

// TrustKey is one project setting that needs the user's trust.
type TrustKey struct {
	Path   string       `json:"key"`   // field path, e.g. "providers.openai.base_url"
	Value  string       `json:"value"` // compact JSON, whole, secrets masked
	Fields []TrustField `json:"fields"`
	Source Source       `json:"source"`
}

// TrustField is one value inside a setting, as the user must see it: every
// server, hook, command, argument, env and header name. Values are whole;
// only credentials (api_key, and env or header entries whose name or value
// looks like one) are masked.
type TrustField struct {
	Path   string `json:"path"`  // e.g. mcp_servers.x.env.NODE_OPTIONS
	Value  string `json:"value"` // JSON
	Masked bool   `json:"masked,omitempty"`
}

// RunFile is a project file that trusted settings run (a script named in
// an MCP server's command or arguments, a hook's command…): its content is
// part of what the user trusts, so an edit to it asks again.
type RunFile struct {
	Path    string `json:"path"`   // project-relative, slashes
	Hash    string `json:"sha256"` // of its content
	Changed bool   `json:"changed,omitempty"`
}

// ProjectTrust is the state of the project file's settings that need trust.
type ProjectTrust struct {
	Dir     string     // the project, absolute and resolved: the trust store's key
	Hash    string     // of the keys' values and the files they run: a change asks again
	Keys    []TrustKey // empty: the project sets nothing that needs trust
	Files   []RunFile  // project files the keys run
	Trusted bool       // the user trusts exactly these values and files
	Store   string     // the trust store's path; "" when there is no config directory
}

// ProjectTrust reports which project settings need trust and whether they
// have it. With Trusted false, Keys were ignored.
func (c *Config) ProjectTrust() ProjectTrust {
	t := c.trust
	t.Keys = slices.Clone(t.Keys)
	t.Files = slices.Clone(t.Files)
	return t
}

// Untrusted lists the project settings ignored because the project is not
// trusted (nil when there are none).
func (c *Config) Untrusted() []TrustKey {
	if c.trust.Trusted || len(c.trust.Keys) == 0 {
		return nil
	}
	return slices.Clone(c.trust.Keys)
}

// restricted is a project setting that needs trust, as parsed.
type restricted struct {
	path string
	off  int
	val  *jsonfile.Node
}

// splitProject separates the project file's settings that need trust from
// those it may set freely; free is root without the restricted members.
func (c *Config) splitProject(root *jsonfile.Node) (free *jsonfile.Node, held []restricted) {
	if root.Kind != jsonfile.Object {
		return root, nil // jsonfile.Parse rejects this
	}
	free = &jsonfile.Node{Kind: jsonfile.Object, Off: root.Off}
	for _, m := range root.Members {
		switch {
		case freeTop[m.Key] || m.Val.Kind == jsonfile.Null: // null sets nothing
			free.Members = append(free.Members, m)
		case m.Key == "permissions" && m.Val.Kind == jsonfile.Object:
			sub := &jsonfile.Node{Kind: jsonfile.Object, Off: m.Val.Off}
			for _, pm := range m.Val.Members {
				if freePermissions[pm.Key] || pm.Val.Kind == jsonfile.Null {
					sub.Members = append(sub.Members, pm)
				} else {
					held = append(held, restricted{joinPath("permissions", pm.Key), pm.Off, pm.Val})
				}
			}
			free.Members = append(free.Members, jsonfile.Member{Key: m.Key, Off: m.Off, Val: sub})
		case m.Key == "providers" && m.Val.Kind == jsonfile.Object:
			sub := &jsonfile.Node{Kind: jsonfile.Object, Off: m.Val.Off}
			for _, pm := range m.Val.Members {
				base := joinPath("providers", pm.Key)
				_, known := c.Providers[pm.Key]
				if pm.Val.Kind == jsonfile.Null {
					continue
				}
				if pm.Val.Kind != jsonfile.Object || !known {
					// A new provider is a new place to send code and keys.
					held = append(held, restricted{base, pm.Off, pm.Val})
					continue
				}
				// Every field of a provider the user set up needs trust:
				// the URL and key decide where code goes, a model's window
				// and prices what Polly does.
				psub := &jsonfile.Node{Kind: jsonfile.Object, Off: pm.Val.Off}
				for _, f := range pm.Val.Members {
					if f.Val.Kind == jsonfile.Null {
						psub.Members = append(psub.Members, f)
					} else {
						held = append(held, restricted{joinPath(base, f.Key), f.Off, f.Val})
					}
				}
				if len(psub.Members) > 0 {
					sub.Members = append(sub.Members, jsonfile.Member{Key: pm.Key, Off: pm.Off, Val: psub})
				}
			}
			free.Members = append(free.Members, jsonfile.Member{Key: m.Key, Off: m.Off, Val: sub})
		default:
			held = append(held, restricted{m.Key, m.Off, m.Val})
		}
	}
	return free, held
}

// trustHash fingerprints the held settings — their paths and values, with
// object keys sorted so reformatting the file does not ask again — and the
// content of the project files they run.
func trustHash(held []restricted, files []RunFile) string {
	h := sha256.New()
	held = slices.Clone(held)
	slices.SortStableFunc(held, func(a, b restricted) int { return strings.Compare(a.path, b.path) })
	for _, r := range held {
		fmt.Fprintf(h, "%s\x00%s\n", r.path, canonical(r.val))
	}
	for _, f := range files {
		fmt.Fprintf(h, "file\x00%s\x00%s\n", f.Path, f.Hash)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// canonical renders a node as compact JSON with sorted object keys.
func canonical(n *jsonfile.Node) string {
	var b strings.Builder
	writeCanonical(&b, n)
	return b.String()
}

// quote is s as a JSON string, with & < > left as they are: a shown
// command must read as written ("a && b", not "a \u0026\u0026 b").
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// writeCanonical writes n as compact JSON with sorted object keys.
func writeCanonical(b *strings.Builder, n *jsonfile.Node) {
	switch n.Kind {
	case jsonfile.Object:
		ms := slices.Clone(n.Members)
		slices.SortStableFunc(ms, func(x, y jsonfile.Member) int { return strings.Compare(x.Key, y.Key) })
		b.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(m.Key))
			b.WriteByte(':')
			writeCanonical(b, m.Val)
		}
		b.WriteByte('}')
	case jsonfile.Array:
		b.WriteByte('[')
		for i, e := range n.Elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case jsonfile.String:
		b.WriteString(quote(n.Text))
	case jsonfile.Number:
		b.WriteString(n.Text)
	case jsonfile.Bool:
		b.WriteString(strconv.FormatBool(n.Bool))
	default:
		b.WriteString("null")
	}
}

// secretWords mark a variable or header name whose value is a credential.
var secretWords = []string{"key", "token", "secret", "passw", "auth", "credential", "cookie", "session", "bearer", "private", "signature"}

// SecretName reports whether a variable or header called name likely
// holds a credential (API_KEY, Authorization, X-Auth-Token…): its value is
// masked wherever Polly shows it and redacted wherever Polly stores it.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secretKey names the fields whose whole value is a credential.
func secretKey(k string) bool { return k == "api_key" }

// namedMaps are the objects whose member names are shown and whose values
// are masked when the name or the value looks like a credential.
func namedMap(k string) bool { return k == "env" || k == "headers" }

// secretValue reports whether a value looks like a credential whatever its
// name: an OpenAI-style key or an Authorization value.
func secretValue(v string) bool {
	l := strings.ToLower(strings.TrimSpace(v))
	return strings.HasPrefix(l, "sk-") || strings.HasPrefix(l, "bearer ") || strings.HasPrefix(l, "basic ")
}

// maskedValue is what a credential is shown as: its length, never content.
func maskedValue(v string) string { // v: the raw value
	return fmt.Sprintf(`"…" (masked: %d characters)`, len([]rune(v)))
}

// fieldsOf flattens a held setting into the fields the user sees: every
// scalar under it with its path; arrays of scalars stay one value (an
// argument list reads as one). Nothing is cut.
func fieldsOf(path string, n *jsonfile.Node) []TrustField {
	var out []TrustField
	var walk func(path, key string, n *jsonfile.Node, inNamed bool)
	walk = func(path, key string, n *jsonfile.Node, inNamed bool) {
		switch {
		case secretKey(key) && n.Kind != jsonfile.Null:
			out = append(out, TrustField{Path: path, Value: maskedValue(canonical(n)), Masked: true})
		case inNamed && n.Kind == jsonfile.String && (SecretName(key) || secretValue(n.Text)):
			out = append(out, TrustField{Path: path, Value: maskedValue(n.Text), Masked: true})
		case n.Kind == jsonfile.String && secretValue(n.Text):
			out = append(out, TrustField{Path: path, Value: maskedValue(n.Text), Masked: true})
		case n.Kind == jsonfile.Object && len(n.Members) > 0:
			for _, m := range n.Members {
				walk(joinPath(path, m.Key), m.Key, m.Val, namedMap(key))
			}
		case n.Kind == jsonfile.Array && slices.ContainsFunc(n.Elems, func(e *jsonfile.Node) bool {
			return e.Kind == jsonfile.Object || e.Kind == jsonfile.Array || e.Kind == jsonfile.String && secretValue(e.Text)
		}):
			for i, e := range n.Elems {
				walk(indexPath(path, i), key, e, false)
			}
		default:
			out = append(out, TrustField{Path: path, Value: canonical(n)})
		}
	}
	walk(path, path[strings.LastIndexAny(path, ".[")+1:], n, false)
	return out
}

// shownValue is a held setting as one line: its fields, masked as in
// fieldsOf, whole.
func shownValue(fields []TrustField, path string) string {
	if len(fields) == 1 && fields[0].Path == path {
		return fields[0].Value
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = strings.TrimPrefix(f.Path, path+".") + "=" + f.Value
	}
	return strings.Join(parts, " ")
}

// trustStore is the file of trusted projects.
type trustStore struct {
	Version  int                     `json:"version"`
	Projects map[string]trustedEntry `json:"projects"`
}

type trustedEntry struct {
	Hash      string            `json:"hash"`
	Keys      []string          `json:"keys"`
	Files     map[string]string `json:"files,omitempty"` // project file → sha256 of the content trusted
	TrustedAt time.Time         `json:"trusted_at"`
}

// ProjectKey is how a project is recorded (trust store, session stamps):
// its absolute path with links resolved, so one directory reached two
// ways is one project.
func ProjectKey(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// readTrustStore reads the store; a missing file is an empty store.
func readTrustStore(read func(string) ([]byte, error), path string) (trustStore, error) {
	st := trustStore{Version: 1, Projects: map[string]trustedEntry{}}
	data, err := read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return trustStore{Version: 1, Projects: map[string]trustedEntry{}}, fmt.Errorf("not valid JSON: %w", err)
	}
	if st.Version != 1 {
		return trustStore{Version: 1, Projects: map[string]trustedEntry{}}, fmt.Errorf("unknown version %d", st.Version)
	}
	if st.Projects == nil {
		st.Projects = map[string]trustedEntry{}
	}
	return st, nil
}

// judgeTrust fills c.trust for the project's held settings and says
// whether they may be applied.
func (c *Config) judgeTrust(read func(string) ([]byte, error), held []restricted) bool {
	c.trust.Dir = ProjectKey(c.opts.ProjectDir)
	c.trust.Keys = nil
	key := func(r restricted, file string, data []byte) TrustKey {
		line, col := jsonfile.LineCol(data, r.off)
		fields := fieldsOf(r.path, r.val)
		return TrustKey{Path: r.path, Value: shownValue(fields, r.path), Fields: fields,
			Source: Source{Kind: KindProjectFile, Detail: file, Line: line, Col: col}}
	}
	for _, r := range held {
		c.trust.Keys = append(c.trust.Keys, key(r, projectFile, c.projectData))
	}
	// A project's .mcp.json starts programs just like mcp_servers does, and
	// .claude/settings*.json hooks just like hooks do: they are part of what
	// the user trusts (and of the hash).
	held = slices.Clone(held)
	for _, d := range c.extraTrust {
		r := restricted{path: d.key, off: d.node.Off, val: d.node}
		c.trust.Keys = append(c.trust.Keys, key(r, d.file, d.data))
		if d.key != "mcpServers" {
			r.path = d.key + "@" + d.file // two files' hooks hash apart
		}
		held = append(held, r)
	}
	c.trust.Files = projectFilesRun(c.opts.ProjectDir, held)
	c.trust.Hash = trustHash(held, c.trust.Files)
	if len(held) == 0 {
		c.trust.Trusted = true
		return true
	}
	if c.trust.Store == "" {
		return false
	}
	st, err := readTrustStore(read, c.trust.Store)
	if err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("the trust store %s is unreadable (%v); every project is treated as untrusted until `polly trust` rewrites it",
			displayPath(c.trust.Store, c.home), err))
		return false
	}
	e, ok := st.Projects[c.trust.Dir]
	c.trust.Trusted = ok && e.Hash == c.trust.Hash
	if ok && !c.trust.Trusted {
		for i, f := range c.trust.Files {
			c.trust.Files[i].Changed = e.Files[f.Path] != f.Hash
		}
	}
	return c.trust.Trusted
}

// mcpTrustNode is the "mcpServers" object of the project's .mcp.json, or
// nil when there is none or it does not parse (mergeMCPFile reports that).
func mcpTrustNode(read func(string) ([]byte, error), projectDir string) (*jsonfile.Node, []byte) {
	data, err := read(filepath.Join(projectDir, MCPFile))
	if err != nil {
		return nil, nil
	}
	doc, err := jsonfile.Parse(data)
	if err != nil || doc.Root == nil {
		return nil, nil
	}
	for _, m := range doc.Root.Members {
		if m.Key == "mcpServers" {
			return m.Val, doc.Data
		}
	}
	return nil, nil
}

// untrustedWarning names the ignored settings and how to use them.
func (c *Config) untrustedWarning() string {
	paths := make([]string, len(c.trust.Keys))
	for i, k := range c.trust.Keys {
		paths[i] = k.Path
		if k.Source.Detail != projectFile {
			paths[i] += " (" + k.Source.Detail + ")"
		}
	}
	var changed []string
	for _, f := range c.trust.Files {
		if f.Changed {
			changed = append(changed, f.Path)
		}
	}
	msg := fmt.Sprintf("this project is not trusted, so these settings in %s are ignored: %s; check them, then run `polly trust` (or pass --trust) to use them",
		projectFile, strings.Join(paths, ", "))
	if len(changed) > 0 {
		msg += fmt.Sprintf(" (changed since you trusted them: %s)", strings.Join(changed, ", "))
	}
	return msg
}

// TrustProject records that the user trusts the project settings this
// config was loaded with (exactly those values: a changed file asks
// again). Load again (Reload) to apply them. A corrupt store is moved
// aside to <store>.bad and replaced.
func (c *Config) TrustProject() error {
	if len(c.trust.Keys) == 0 {
		return nil
	}
	if c.trust.Store == "" {
		return errors.New("cannot record trust: neither $XDG_CONFIG_HOME nor the home directory is known")
	}
	st, err := readTrustStore(readFile, c.trust.Store)
	if err != nil {
		if err := os.Rename(c.trust.Store, c.trust.Store+".bad"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("move the unreadable trust store aside: %w", err)
		}
	}
	keys := make([]string, len(c.trust.Keys))
	for i, k := range c.trust.Keys {
		keys[i] = k.Path
	}
	var files map[string]string
	for _, f := range c.trust.Files {
		if files == nil {
			files = map[string]string{}
		}
		files[f.Path] = f.Hash
	}
	st.Projects[c.trust.Dir] = trustedEntry{Hash: c.trust.Hash, Keys: keys, Files: files, TrustedAt: time.Now().UTC().Truncate(time.Second)}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode trust store: %w", err)
	}
	if err := writeFileAtomic(c.trust.Store, append(data, '\n')); err != nil {
		return fmt.Errorf("record trust: %w", err)
	}
	c.trust.Trusted = true
	return nil
}

// writeFileAtomic replaces path with data (atomicfile: temp file, sync,
// rename), so a crash never leaves half a store; only the user reads it.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// Reload loads the configuration again with the same options, e.g. after
// TrustProject.
func (c *Config) Reload() (*Config, error) {
	return Load(c.opts)
}

package config

import (
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
// repository. Settings that decide where the API key goes, what runs without
// asking, or what Polly starts take effect only once the user trusts that
// project; until then they are ignored with a warning.
//
// The list is an allowlist of what a project may set freely, so settings
// added later (sandbox, hooks, mcp_servers…) and unknown keys need trust
// without anyone remembering to add them here.
var (
	// freeTop are the top-level keys a project file may set without trust.
	freeTop = map[string]bool{
		"model": true, "persona": true, "max_turns": true, "context": true,
		"llm": true, "team": true, "web": true, "tui": true,
		// memory.learn_facts and retention.days touch only what Polly keeps
		// for this project and the user's own notes; neither runs anything.
		"memory": true, "retention": true,
	}
	// freePermissions are the permission lists a project may extend freely:
	// they only make Polly ask or refuse more.
	freePermissions = map[string]bool{"ask": true, "deny": true}
)

// TrustFile is the trust store's name in the user's config directory.
const TrustFile = "trusted_projects.json"

// TrustKey is one project setting that needs the user's trust.
type TrustKey struct {
	Path   string `json:"key"`   // field path, e.g. "providers.openai.base_url"
	Value  string `json:"value"` // compact JSON, secrets masked, long values cut
	Source Source `json:"source"`
}

// ProjectTrust is the state of the project file's settings that need trust.
type ProjectTrust struct {
	Dir     string     // the project, absolute and resolved: the trust store's key
	Hash    string     // of the keys' values: a changed file asks again
	Keys    []TrustKey // empty: the project sets nothing that needs trust
	Trusted bool       // the user trusts exactly these values
	Store   string     // the trust store's path; "" when there is no config directory
}

// ProjectTrust reports which project settings need trust and whether they
// have it. With Trusted false, Keys were ignored.
func (c *Config) ProjectTrust() ProjectTrust {
	t := c.trust
	t.Keys = slices.Clone(t.Keys)
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
				// Model windows and prices of a provider the user set up
				// change no destination; everything else does.
				psub := &jsonfile.Node{Kind: jsonfile.Object, Off: pm.Val.Off}
				for _, f := range pm.Val.Members {
					if f.Key == "models" || f.Val.Kind == jsonfile.Null {
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

// trustHash fingerprints the held settings: their paths and values, with
// object keys sorted so reformatting the file does not ask again.
func trustHash(held []restricted) string {
	h := sha256.New()
	held = slices.Clone(held)
	slices.SortStableFunc(held, func(a, b restricted) int { return strings.Compare(a.path, b.path) })
	for _, r := range held {
		fmt.Fprintf(h, "%s\x00%s\n", r.path, canonical(r.val))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// canonical renders a node as compact JSON with sorted object keys.
func canonical(n *jsonfile.Node) string {
	var b strings.Builder
	writeCanonical(&b, n, false)
	return b.String()
}

// writeCanonical writes n; with mask, the values of api_key and headers
// members are replaced by "…".
func writeCanonical(b *strings.Builder, n *jsonfile.Node, mask bool) {
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
			if mask && secretKey(m.Key) {
				b.WriteString(`"…"`)
				continue
			}
			writeCanonical(b, m.Val, mask)
		}
		b.WriteByte('}')
	case jsonfile.Array:
		b.WriteByte('[')
		for i, e := range n.Elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e, mask)
		}
		b.WriteByte(']')
	case jsonfile.String:
		q, _ := json.Marshal(n.Text)
		b.Write(q)
	case jsonfile.Number:
		b.WriteString(n.Text)
	case jsonfile.Bool:
		b.WriteString(strconv.FormatBool(n.Bool))
	default:
		b.WriteString("null")
	}
}

// secretKey names the fields whose values may be credentials: never shown,
// never echoed in an error (an MCP server's env passes keys too).
func secretKey(k string) bool { return k == "api_key" || k == "headers" || k == "env" }

// shownValue is what the user sees of a held setting: never a secret.
func shownValue(r restricted) string {
	if secretKey(r.path[strings.LastIndexAny(r.path, ".[")+1:]) {
		return `"…"`
	}
	var b strings.Builder
	writeCanonical(&b, r.val, true)
	s := b.String()
	if rs := []rune(s); len(rs) > 160 {
		s = string(rs[:157]) + "..."
	}
	return s
}

// trustStore is the file of trusted projects.
type trustStore struct {
	Version  int                     `json:"version"`
	Projects map[string]trustedEntry `json:"projects"`
}

type trustedEntry struct {
	Hash      string    `json:"hash"`
	Keys      []string  `json:"keys"`
	TrustedAt time.Time `json:"trusted_at"`
}

// projectKey is the project's absolute, symlink-free path.
func projectKey(dir string) string {
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
	c.trust.Dir = projectKey(c.opts.ProjectDir)
	c.trust.Keys = nil
	for _, r := range held {
		line, col := jsonfile.LineCol(c.projectData, r.off)
		c.trust.Keys = append(c.trust.Keys, TrustKey{Path: r.path, Value: shownValue(r),
			Source: Source{Kind: KindProjectFile, Detail: projectFile, Line: line, Col: col}})
	}
	// A project's .mcp.json starts programs just like mcp_servers does: its
	// servers are part of what the user trusts (and of the hash).
	if c.mcpTrust != nil {
		r := restricted{path: "mcpServers", off: c.mcpTrust.Off, val: c.mcpTrust}
		line, col := jsonfile.LineCol(c.mcpData, r.off)
		c.trust.Keys = append(c.trust.Keys, TrustKey{Path: "mcpServers", Value: shownValue(r),
			Source: Source{Kind: KindProjectFile, Detail: MCPFile, Line: line, Col: col}})
		held = append(slices.Clone(held), r)
	}
	c.trust.Hash = trustHash(held)
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
	}
	return fmt.Sprintf("this project is not trusted, so these settings in %s are ignored: %s; check them, then run `polly trust` (or pass --trust) to use them",
		projectFile, strings.Join(paths, ", "))
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
	st.Projects[c.trust.Dir] = trustedEntry{Hash: c.trust.Hash, Keys: keys, TrustedAt: time.Now().UTC().Truncate(time.Second)}
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

package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"

	"polly/agent/hooks"
	"polly/workspace/jsonfile"
)

// Claude Code's settings files are the user's ecosystem, not Polly's: their
// hooks are read as Claude Code reads them, and everything else in them
// (permissions, env, model…) is left to Claude Code. Being someone else's
// format, they are read leniently: an unknown field is warned about once and
// ignored, a handler Polly cannot use is skipped with a warning, and a file
// that does not parse costs only its own hooks — Polly always starts.

// Claude Code's settings files, as shown.
const (
	ClaudeUserSettings         = "~/.claude/settings.json"
	ClaudeProjectSettings      = ".claude/settings.json"
	ClaudeProjectLocalSettings = ".claude/settings.local.json"
)

// hookSwitch is one file's "disableAllHooks".
type hookSwitch struct {
	off  bool
	file string
	kind Kind
}

// trustedDoc is a part of a project file outside .agent/config.json that
// needs the user's trust (.mcp.json's servers, .claude/settings*.json's
// hooks); it is shown and hashed with the other held settings.
type trustedDoc struct {
	key  string         // the TrustKey path: "mcpServers", "hooks"
	file string         // as shown
	node *jsonfile.Node // what is trusted
	data []byte         // the file, for positions
}

// readClaudeSettings reads one Claude Code settings file's hooks.
func (c *Config) readClaudeSettings(read func(string) ([]byte, error), path, display string, kind Kind) {
	doc, err := readDocument(read, path, display, false)
	if err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("%v — Polly uses no hooks from this file until it is fixed", err))
		return
	}
	if doc == nil || doc.Root == nil {
		return
	}
	held := &jsonfile.Node{Kind: jsonfile.Object, Off: doc.Root.Off}
	for _, m := range doc.Root.Members {
		switch m.Key {
		case "hooks":
			c.claudeHooks = append(c.claudeHooks, c.claudeHookEntries(doc, m, display, kind)...)
			held.Members = append(held.Members, m)
		case "disableAllHooks":
			if m.Val.Kind != jsonfile.Bool {
				c.warnOnce(display, m.Key, c.at(doc, display, m.Off, "disableAllHooks", "expected true or false, got "+m.Val.Describe()+"; ignored"))
				continue
			}
			c.hookSwitches = append(c.hookSwitches, hookSwitch{off: m.Val.Bool, file: display, kind: kind})
			held.Members = append(held.Members, m)
		}
	}
	if kind == KindProjectFile && len(held.Members) > 0 {
		c.extraTrust = append(c.extraTrust, trustedDoc{key: "hooks", file: display, node: held, data: doc.Data})
	}
}

// claudeHookEntries reads a "hooks" object: every documented event, each
// matcher group, each handler that passes Polly's rules.
func (c *Config) claudeHookEntries(doc *jsonfile.Document, hm jsonfile.Member, display string, kind Kind) []HookEntry {
	if hm.Val.Kind != jsonfile.Object {
		c.warnOnce(display, "hooks", c.at(doc, display, hm.Off, "hooks", "expected an object, got "+hm.Val.Describe()+"; no hooks used from this file"))
		return nil
	}
	var out []HookEntry
	for _, ev := range hm.Val.Members {
		path := joinPath("hooks", ev.Key)
		if !hooks.Documented(ev.Key) {
			msg := fmt.Sprintf("unknown hook event %q ignored", ev.Key)
			if s := jsonfile.Closest(ev.Key, hooks.Events()); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			c.warnOnce(display, path, c.at(doc, display, ev.Off, path, msg))
			continue
		}
		if ev.Val.Kind != jsonfile.Array {
			c.warnOnce(display, path, c.at(doc, display, ev.Off, path, "expected a list of matcher groups, got "+ev.Val.Describe()+"; ignored"))
			continue
		}
		for i, g := range ev.Val.Elems {
			gpath := indexPath(path, i)
			if entry, ok := c.claudeGroup(doc, g, gpath, display, kind); ok {
				entry.Event = ev.Key
				out = append(out, entry)
			}
		}
	}
	return out
}

// claudeGroup reads one matcher group.
func (c *Config) claudeGroup(doc *jsonfile.Document, g *jsonfile.Node, path, display string, kind Kind) (HookEntry, bool) {
	line, col := jsonfile.LineCol(doc.Data, g.Off)
	entry := HookEntry{Source: Source{Kind: kind, Detail: display, Line: line, Col: col}}
	if g.Kind != jsonfile.Object {
		c.warnOnce(display, path, c.at(doc, display, g.Off, path, "expected a matcher group object, got "+g.Describe()+"; ignored"))
		return entry, false
	}
	for _, m := range g.Members {
		switch m.Key {
		case "matcher":
			if m.Val.Kind != jsonfile.String {
				c.warnOnce(display, path+".matcher", c.at(doc, display, m.Off, path+".matcher", "expected a string, got "+m.Val.Describe()+"; group ignored"))
				return entry, false
			}
			if err := hooks.CheckMatcher(m.Val.Text); err != nil {
				c.warnOnce(display, path+".matcher", c.at(doc, display, m.Off, path+".matcher",
					fmt.Sprintf("%q is not a valid regular expression (%v); group ignored", m.Val.Text, err)))
				return entry, false
			}
			entry.Matcher.Matcher = m.Val.Text
		case "hooks":
			if m.Val.Kind != jsonfile.Array {
				c.warnOnce(display, path+".hooks", c.at(doc, display, m.Off, path+".hooks", "expected a list of handlers, got "+m.Val.Describe()+"; group ignored"))
				return entry, false
			}
			for j, h := range m.Val.Elems {
				if hc, ok := c.claudeHandler(doc, h, indexPath(path+".hooks", j), display, kind); ok {
					entry.Matcher.Hooks = append(entry.Matcher.Hooks, hc)
				}
			}
		default:
			c.warnOnce(display, "group."+m.Key, c.at(doc, display, m.Off, path, fmt.Sprintf("unknown field %q ignored", m.Key)))
		}
	}
	return entry, len(entry.Matcher.Hooks) > 0
}

// claudeHandler reads one handler with the config's decoder, after
// dropping (and warning about) the fields Claude Code's reference does not
// list; a handler that still does not fit is skipped.
func (c *Config) claudeHandler(doc *jsonfile.Document, h *jsonfile.Node, path, display string, kind Kind) (HookCommand, bool) {
	var hc HookCommand
	if h.Kind != jsonfile.Object {
		c.warnOnce(display, path, c.at(doc, display, h.Off, path, "expected a handler object, got "+h.Describe()+"; ignored"))
		return hc, false
	}
	scratch, err := c.decodeLenient(doc, h, path, display, kind, "handler.", &hc)
	if err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("%v — this hook is skipped", err))
		return hc, false
	}
	if err := scratch.locate(prefixed(path, hc.Validate())); err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("%v — this hook is skipped", err))
		return hc, false
	}
	return hc, true
}

// decodeLenient decodes the object n (at path in a file of another tool)
// into v, a pointer to a config struct, after dropping, with one warning
// per file and key, the members v has no field for. The scratch config it
// returns holds where each value came from.
func (c *Config) decodeLenient(doc *jsonfile.Document, n *jsonfile.Node, path, display string, kind Kind, warnKey string, v any) (*Config, error) {
	rv := reflect.ValueOf(v).Elem()
	known := fieldNames(rv.Type())
	kept := &jsonfile.Node{Kind: jsonfile.Object, Off: n.Off}
	for _, m := range n.Members {
		if !slices.Contains(known, m.Key) {
			c.warnOnce(display, warnKey+m.Key, c.at(doc, display, m.Off, path, fmt.Sprintf("unknown field %q ignored", m.Key)))
			continue
		}
		kept.Members = append(kept.Members, m)
	}
	scratch := &Config{sources: map[string]Source{}}
	d := decoder{c: scratch, l: layer{kind: kind, detail: display, data: doc.Data}}
	return scratch, d.merge(rv, kept, path, n.Off, false)
}

// prefixed puts a nested Validate's field errors under path.
func prefixed(path string, err error) error {
	var p problems
	p.nest(path, err)
	return p.join()
}

// at locates a problem in a Claude Code file.
func (c *Config) at(doc *jsonfile.Document, display string, off int, field, msg string) string {
	line, col := jsonfile.LineCol(doc.Data, off)
	return (&Error{File: display, Line: line, Col: col, Field: field, Msg: msg}).Error()
}

// warnOnce adds a warning once per file and key.
func (c *Config) warnOnce(file, key, text string) {
	if c.warnedKeys == nil {
		c.warnedKeys = map[string]bool{}
	}
	if k := file + "\x00" + key; !c.warnedKeys[k] {
		c.warnedKeys[k] = true
		c.warnings = append(c.warnings, text)
	}
}

// readClaudeFiles reads the user's ~/.claude/settings.json and the
// project's .claude/settings.json and .claude/settings.local.json.
func (c *Config) readClaudeFiles(read func(string) ([]byte, error), home, projectDir string) {
	if home != "" {
		c.readClaudeSettings(read, filepath.Join(home, ".claude", "settings.json"), ClaudeUserSettings, KindUserFile)
	}
	if projectDir != "" {
		for _, f := range []string{ClaudeProjectSettings, ClaudeProjectLocalSettings} {
			c.readClaudeSettings(read, filepath.Join(projectDir, filepath.FromSlash(f)), f, KindProjectFile)
		}
	}
}

// HooksDisabledBy names the Claude Code settings file whose
// "disableAllHooks": true turns every hook off ("" when hooks are on).
// The most specific file that sets it decides (local, project, user);
// the project's files count only when the project is trusted.
func (c *Config) HooksDisabledBy(trusted bool) string {
	decided := ""
	for _, s := range c.hookSwitches { // in reading order: user, project, local
		if s.kind == KindProjectFile && !trusted {
			continue
		}
		decided = ""
		if s.off {
			decided = s.file
		}
	}
	return decided
}

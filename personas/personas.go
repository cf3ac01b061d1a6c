// Package personas holds the team: four built-in personas embedded as JSON
// (builtin/*.json) and the user's overrides and additions from
// <workspace>/personas/*.json.
//
// An override file with a built-in's id replaces the fields it sets; fields
// it leaves out keep the built-in's values. A file with a new id adds a
// persona (it needs a system_prompt). A broken file is reported by name and
// skipped; the built-ins always load.
package personas

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed builtin/*.json
var builtinFS embed.FS

// BuiltinSource is Persona.Source of an embedded persona.
const BuiltinSource = "builtin"

// DefaultID is the id of Polly, the orchestrator.
const DefaultID = "default"

const (
	maxFileSize = 1 << 20
	// newTemperature is used by an added persona that sets none.
	newTemperature = 0.5
)

// Persona is one member of the team.
type Persona struct {
	ID           string
	Name         string
	Role         string
	Description  string
	Temperature  float64
	Model        string   // "" means the configured default model
	Tools        []string // tool names it may call
	Key          string   // suggested hotkey, e.g. "alt+3"; may be ""
	SystemPrompt string
	Source       string // BuiltinSource or the override file's path
}

// Allows reports whether the persona may call tool.
func (p Persona) Allows(tool string) bool { return slices.Contains(p.Tools, tool) }

func (p Persona) clone() Persona {
	p.Tools = slices.Clone(p.Tools)
	return p
}

// KnownTools lists every tool name a persona may be given (PRODUCT §6).
func KnownTools() []string {
	return []string{
		"read_file", "write_file", "edit_file", "list_dir", "glob", "grep",
		"run_command", "fetch_url", "extract", "leads_save", "leads_export",
		"read_tool_output", "grep_tool_output", "task_plan", "delegate_task",
		"workspace_save_fact", "workspace_log_error", "workspace_log_learning",
		"workspace_request_feature", "workspace_daily_log", "workspace_read",
	}
}

// builtinIDs is the order of the built-ins (and of their tabs).
func builtinIDs() []string { return []string{DefaultID, "web_scraper", "coder", "b2b_leadgen"} }

// Set is an ordered, read-only collection of personas: the built-ins in
// their fixed order, then added ones sorted by id. It is safe for concurrent
// use.
type Set struct {
	list []Persona
}

// All returns every persona in order. The result is a copy.
func (s *Set) All() []Persona {
	out := make([]Persona, len(s.list))
	for i, p := range s.list {
		out[i] = p.clone()
	}
	return out
}

// IDs returns the persona ids in order.
func (s *Set) IDs() []string {
	ids := make([]string, len(s.list))
	for i, p := range s.list {
		ids[i] = p.ID
	}
	return ids
}

// Find looks a persona up by id, then by name, ignoring case.
func (s *Set) Find(idOrName string) (Persona, bool) {
	q := strings.TrimSpace(idOrName)
	for _, p := range s.list {
		if strings.EqualFold(p.ID, q) {
			return p.clone(), true
		}
	}
	for _, p := range s.list {
		if strings.EqualFold(p.Name, q) {
			return p.clone(), true
		}
	}
	return Persona{}, false
}

// Default returns Polly, the orchestrator.
func (s *Set) Default() Persona {
	p, _ := s.Find(DefaultID)
	return p
}

// FileError is a problem with one persona file. Skipped tells whether the
// file was left out or loaded without the offending part.
type FileError struct {
	File    string
	Err     error
	Skipped bool
}

func (e *FileError) Error() string {
	if e.Skipped {
		return fmt.Sprintf("persona file %s: %v (file skipped)", e.File, e.Err)
	}
	return fmt.Sprintf("persona file %s: %v", e.File, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Load returns the built-ins plus the overrides and additions found in dir
// (*.json, not recursive) and, after them, the Markdown agents of md
// (.claude/agents/*.md…). dir "" or a missing dir gives the built-ins (and
// the Markdown agents) only. The errors name the file each one is about.
func Load(dir string, md ...MarkdownDir) (*Set, []error) {
	var errs []error
	set := &Set{}
	for _, id := range builtinIDs() {
		name := "builtin/" + id + ".json"
		data, err := builtinFS.ReadFile(name)
		if err != nil {
			errs = append(errs, &FileError{File: name, Err: err, Skipped: true})
			continue
		}
		p, warns, err := parse(data, func(string) *Persona { return nil }, BuiltinSource)
		errs = append(errs, fileErrors(name, warns)...)
		if err != nil {
			errs = append(errs, &FileError{File: name, Err: err, Skipped: true})
			continue
		}
		set.list = append(set.list, p)
	}
	var added []Persona
	fromFile := map[string]string{} // lower-case id → file that set it
	var entries []os.DirEntry
	if dir != "" {
		var err error
		entries, err = os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, &FileError{File: dir, Err: err})
		}
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.EqualFold(filepath.Ext(e.Name()), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		skip := func(err error) { errs = append(errs, &FileError{File: path, Err: err, Skipped: true}) }
		data, err := readFile(path)
		if err != nil {
			skip(err)
			continue
		}
		p, warns, err := parse(data, func(id string) *Persona {
			if i := indexOf(set.list, id); i >= 0 {
				return &set.list[i]
			}
			return nil
		}, path)
		errs = append(errs, fileErrors(path, warns)...)
		if err != nil {
			skip(err)
			continue
		}
		if err := set.place(p, path, fromFile, &added); err != nil {
			skip(err)
		}
	}
	mdAdded, mdErrs := loadMarkdown(set, md, fromFile)
	added, errs = append(added, mdAdded...), append(errs, mdErrs...)
	slices.SortFunc(added, func(a, b Persona) int { return strings.Compare(a.ID, b.ID) })
	set.list = append(set.list, added...)
	errs = append(errs, nameClashes(set.list)...)
	return set, errs
}

// place puts a persona read from path into the set (over the built-in of
// its id) or the added list; an id another file defined is an error.
func (s *Set) place(p Persona, path string, fromFile map[string]string, added *[]Persona) error {
	key := strings.ToLower(p.ID)
	if other, dup := fromFile[key]; dup {
		return fmt.Errorf("id %q is already defined by %s", p.ID, other)
	}
	fromFile[key] = path
	if i := indexOf(s.list, p.ID); i >= 0 {
		s.list[i] = p
	} else {
		*added = append(*added, p)
	}
	return nil
}

func indexOf(list []Persona, id string) int {
	return slices.IndexFunc(list, func(p Persona) bool { return strings.EqualFold(p.ID, id) })
}

func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("file is %d bytes; a persona file may be at most 1 MB", fi.Size())
	}
	return os.ReadFile(path)
}

func fileErrors(file string, warns []error) []error {
	out := make([]error, len(warns))
	for i, w := range warns {
		out[i] = &FileError{File: file, Err: w}
	}
	return out
}

// nameClashes reports a persona whose name is another persona's id or name:
// Find would never reach it by that name.
func nameClashes(list []Persona) []error {
	var errs []error
	for i, p := range list {
		for _, q := range list[:i] {
			if strings.EqualFold(p.Name, q.Name) || strings.EqualFold(p.Name, q.ID) {
				errs = append(errs, &FileError{File: p.Source,
					Err: fmt.Errorf("name %q is already used by persona %q; find this one by its id %q", p.Name, q.ID, p.ID)})
				break
			}
		}
	}
	return errs
}

package personas

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"polly/workspace/frontmatter"
)

// Sub-agents written for Claude Code (.claude/agents/*.md) or the agents
// convention (.agents/agents/*.md) are personas too: the front matter gives
// name, description, tools, model and temperature, the body is the system
// prompt. Tools may be named as Claude Code names them.

// MarkdownDir is a folder of Markdown agent files.
type MarkdownDir struct {
	Path  string
	Label string
}

// MarkdownDirs lists the agent folders, project first (its agents win over
// the user's of the same name).
func MarkdownDirs(project, home string) []MarkdownDir {
	var out []MarkdownDir
	if project != "" {
		for _, d := range []string{".claude/agents", ".agents/agents"} {
			out = append(out, MarkdownDir{filepath.Join(project, filepath.FromSlash(d)), "project " + d})
		}
	}
	if home != "" {
		for _, d := range []string{".claude/agents", ".agents/agents", ".config/agents/agents"} {
			out = append(out, MarkdownDir{filepath.Join(home, filepath.FromSlash(d)), "~/" + d})
		}
	}
	return out
}

// agentMeta is an agent file's front matter: the fields Polly uses, and
// color, which changes nothing. Claude Code's fields that change behaviour
// (permissionMode, hooks, mcpServers…) are warned about as ignored.
type agentMeta struct {
	Name            string           `yaml:"name"`
	Description     string           `yaml:"description"`
	Tools           frontmatter.List `yaml:"tools"`
	DisallowedTools frontmatter.List `yaml:"disallowedTools"`
	Model           string           `yaml:"model"`
	Temperature     *float64         `yaml:"temperature"`
	Color           any              `yaml:"color"`
}

// claudeTools maps Claude Code's tool names to Polly's.
var claudeTools = map[string]string{
	"Read": "read_file", "Write": "write_file", "Edit": "edit_file", "MultiEdit": "edit_file",
	"Glob": "glob", "Grep": "grep", "LS": "list_dir", "Bash": "run_command", "WebFetch": "fetch_url",
	"TodoWrite": "task_plan", "Task": "delegate_task", "Agent": "delegate_task",
}

// parseMarkdown builds a persona from an agent file, on top of the
// built-in of the same id (nil: a new persona). warns are problems it
// loads despite; err means skip the file.
func parseMarkdown(data []byte, file string, base *Persona) (p Persona, warns []error, err error) {
	front, body, has, err := frontmatter.Split(data)
	if err != nil {
		return p, nil, err
	}
	var m agentMeta
	if has {
		res, err := frontmatter.Decode(front, &m)
		for _, w := range res.Warnings() {
			warns = append(warns, errors.New(w))
		}
		if err != nil {
			return p, warns, err
		}
	}
	id := strings.TrimSpace(m.Name)
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if err := checkID(id); err != nil {
		return p, warns, fmt.Errorf("name: %w", err)
	}
	if strings.TrimSpace(body) == "" {
		return p, warns, errors.New("the body (the agent's prompt) is empty")
	}
	if base != nil {
		p = base.clone()
	} else {
		p = Persona{ID: id, Name: id, Temperature: newTemperature, Tools: specialistTools()}
	}
	p.Source, p.SystemPrompt = file, strings.TrimRight(body, "\n")+"\n"
	if d := strings.Join(strings.Fields(m.Description), " "); d != "" {
		p.Description = d
		p.Role = clipRole(d)
	}
	switch model := strings.TrimSpace(m.Model); {
	case model == "" || model == "inherit":
	case slices.Contains([]string{"sonnet", "opus", "haiku", "opusplan"}, model):
		warns = append(warns, fmt.Errorf("model %q is a Claude Code alias; the persona uses the default model (set a model name your provider knows to choose one)", model))
	default:
		p.Model = model
	}
	if t := m.Temperature; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 2 {
			return p, warns, fmt.Errorf("temperature is %v; it must be between 0 and 2", *t)
		}
		p.Temperature = *t
	}
	if m.Tools != nil {
		names := make([]string, 0, len(m.Tools))
		for _, n := range m.Tools {
			if polly, ok := claudeTools[n]; ok {
				n = polly
			}
			names = append(names, n)
		}
		var unknown []string
		p.Tools, unknown = checkTools(names)
		if len(unknown) > 0 {
			warns = append(warns, fmt.Errorf("tools %s have no Polly twin and are left out", strings.Join(unknown, ", ")))
		}
	}
	for _, n := range m.DisallowedTools {
		if polly, ok := claudeTools[n]; ok {
			n = polly
		}
		p.Tools = slices.DeleteFunc(p.Tools, func(t string) bool { return t == n })
	}
	return p, warns, nil
}

// clipRole is a description's first sentence, short enough for a tab.
func clipRole(d string) string {
	if i := strings.IndexAny(d, ".\n"); i > 0 {
		d = d[:i]
	}
	if r := []rune(d); len(r) > 80 {
		d = string(r[:79]) + "…"
	}
	return d
}

// loadMarkdown adds the agents of dirs to set: a new id is added, a
// built-in's id replaces the fields the file sets; an id a persona file of
// the workspace (JSON) already defines, or an earlier folder's agent, is
// skipped with a warning.
func loadMarkdown(set *Set, dirs []MarkdownDir, fromFile map[string]string) (added []Persona, errs []error) {
	for _, d := range dirs {
		entries, err := os.ReadDir(d.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, &FileError{File: d.Path, Err: err})
			continue
		}
		for _, e := range entries {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.EqualFold(filepath.Ext(e.Name()), ".md") {
				continue
			}
			path := filepath.Join(d.Path, e.Name())
			data, err := readFile(path)
			if err != nil {
				errs = append(errs, &FileError{File: path, Err: err, Skipped: true})
				continue
			}
			id := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
			var base *Persona
			peek, _, _ := parseMarkdown(data, path, nil)
			if peek.ID != "" {
				id = peek.ID
			}
			if i := indexOf(set.list, id); i >= 0 && set.list[i].Source == BuiltinSource {
				base = &set.list[i]
			}
			p, warns, err := parseMarkdown(data, path, base)
			errs = append(errs, fileErrors(path, warns)...)
			if err != nil {
				errs = append(errs, &FileError{File: path, Err: err, Skipped: true})
				continue
			}
			if err := set.place(p, path, fromFile, &added); err != nil {
				errs = append(errs, &FileError{File: path, Err: err, Skipped: true})
			}
		}
	}
	return added, errs
}

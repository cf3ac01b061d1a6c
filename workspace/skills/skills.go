// Package skills finds Agent Skills — folders holding a SKILL.md with YAML
// front matter (name, description) and instructions — in the places the
// peers use, so a user's existing skills work unchanged. Only names and
// descriptions go into the system prompt (progressive disclosure); the body
// is loaded when the model asks for it.
package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"polly/workspace/frontmatter"
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Limits: a SKILL.md larger than maxFile is not a skill; descriptions are
// capped in the prompt as the Agent Skills spec caps them.
const (
	maxFile        = 1 << 20
	maxDescription = 1024
	maxName        = 64
	maxListed      = 200 // files listed with a loaded skill
)

// Skill is one discovered skill.
type Skill struct {
	Name        string
	Description string
	Dir         string // absolute folder of the skill
	File        string // absolute path of its SKILL.md
	Root        string // where it was found, for people: "project .agents/skills"
}

// Root is a folder whose subfolders may be skills.
type Root struct {
	Dir   string
	Label string
}

// Roots lists the places skills are looked for, most specific first: the
// project's folders (.agents/skills, .claude/skills, .opencode/skills,
// .codex/skills), the user's (~/.agents/skills, ~/.config/agents/skills,
// ~/.claude/skills, ~/.config/opencode/skills, $CODEX_HOME/skills or
// ~/.codex/skills) — the places Claude Code, Codex and opencode read — then
// the workspace's skills/. Empty inputs skip their places.
func Roots(projectDir, home, workspaceDir string) []Root {
	var out []Root
	if projectDir != "" {
		for _, d := range []string{".agents", ".claude", ".opencode", ".codex"} {
			out = append(out, Root{filepath.Join(projectDir, d, "skills"), "project " + d + "/skills"})
		}
	}
	if home != "" {
		for _, d := range []string{".agents/skills", ".config/agents/skills", ".claude/skills", ".config/opencode/skills"} {
			out = append(out, Root{filepath.Join(home, filepath.FromSlash(d)), "~/" + d})
		}
		codex := filepath.Join(home, ".codex")
		if c := os.Getenv("CODEX_HOME"); c != "" && filepath.IsAbs(c) {
			codex = c
		}
		out = append(out, Root{filepath.Join(codex, "skills"), "Codex skills (" + filepath.Join(codex, "skills") + ")"})
	}
	if workspaceDir != "" {
		out = append(out, Root{filepath.Join(workspaceDir, "skills"), "workspace skills/"})
	}
	return out
}

// Set is the discovered skills in discovery order. It is read-only after
// Discover and safe for concurrent use.
type Set struct {
	list []Skill
}

// Discover reads every <root>/<folder>/SKILL.md. A missing root is
// skipped; a SKILL.md that cannot be used is skipped with a warning naming
// the file. When two roots hold a skill of the same name, the first (more
// specific) one wins and the other is reported.
func Discover(roots []Root) (*Set, []string) {
	s := &Set{}
	var warnings []string
	seen := map[string]string{}
	warnedKey := map[string]bool{} // an unknown field is warned about once
	for _, r := range roots {
		entries, err := os.ReadDir(r.Dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				warnings = append(warnings, fmt.Sprintf("skills in %s: %v", r.Dir, err))
			}
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(r.Dir, e.Name())
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				continue // a stray file, or a broken link
			}
			file := filepath.Join(dir, FileName)
			data, err := readLimited(file)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("skill skipped: %s: %v", file, err))
				continue
			}
			m, _, notes, err := parse(data)
			for _, n := range notes {
				if !warnedKey[n] {
					warnedKey[n] = true
					warnings = append(warnings, fmt.Sprintf("skill %s: %s", file, n))
				}
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("skill skipped: %s: %v", file, err))
				continue
			}
			for _, v := range m.violations(e.Name()) {
				warnings = append(warnings, fmt.Sprintf("skill %s (%s) breaks the Agent Skills spec: %s; it is used anyway", m.Name, file, v))
			}
			if first, dup := seen[m.Name]; dup {
				warnings = append(warnings, fmt.Sprintf("skill skipped: %s: the name %q is taken by %s", file, m.Name, first))
				continue
			}
			seen[m.Name] = file
			s.list = append(s.list, Skill{Name: m.Name, Description: m.Description, Dir: dir, File: file, Root: r.Label})
		}
	}
	return s, warnings
}

// Meta is a SKILL.md's front matter: the fields Polly uses, then the
// others of the Agent Skills spec and of Claude Code's skills, accepted
// without a warning (Polly does not act on them).
type Meta struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`

	License                string `yaml:"license"`
	Compatibility          any    `yaml:"compatibility"`
	Metadata               any    `yaml:"metadata"`
	AllowedTools           any    `yaml:"allowed-tools"`
	DisallowedTools        any    `yaml:"disallowed-tools"`
	WhenToUse              any    `yaml:"when_to_use"`
	ArgumentHint           any    `yaml:"argument-hint"`
	Arguments              any    `yaml:"arguments"`
	DisableModelInvocation any    `yaml:"disable-model-invocation"`
	UserInvocable          any    `yaml:"user-invocable"`
	Model                  any    `yaml:"model"`
	Effort                 any    `yaml:"effort"`
	Context                any    `yaml:"context"`
	Agent                  any    `yaml:"agent"`
	Version                any    `yaml:"version"`
}

// violations are what the front matter does against the Agent Skills spec
// that still lets the skill be used: peers are lenient, so Polly warns.
// (Fields no skill format defines are warned about by parse.)
func (m Meta) violations(dirName string) []string {
	var out []string
	if !specName(m.Name) {
		out = append(out, fmt.Sprintf("the name %q should be lowercase letters, digits and single hyphens", m.Name))
	}
	if m.Name != dirName {
		out = append(out, fmt.Sprintf("the name %q should match its folder %q", m.Name, dirName))
	}
	if n := len([]rune(m.Description)); n > maxDescription {
		out = append(out, fmt.Sprintf("the description is %d characters (at most %d; the prompt shows the first %d)", n, maxDescription, maxDescription))
	}
	return out
}

// specName: the spec's names are lowercase letters and digits joined by
// single hyphens.
func specName(n string) bool {
	if n == "" || strings.HasPrefix(n, "-") || strings.HasSuffix(n, "-") || strings.Contains(n, "--") {
		return false
	}
	return !strings.ContainsFunc(n, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') })
}

// validName is what a skill's name may hold.
var validName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Parse splits a SKILL.md into its front matter and body and checks the
// two required fields.
func Parse(data []byte) (Meta, string, error) {
	m, body, _, err := parse(data)
	return m, body, err
}

// parse is Parse that also returns what to warn about the front matter
// (fields no skill format defines, a loose reading): the skill loads.
func parse(data []byte) (Meta, string, []string, error) {
	front, body, has, err := frontmatter.Split(data)
	if err != nil {
		return Meta{}, "", nil, err
	}
	if !has {
		return Meta{}, "", nil, errors.New("no front matter: the file must start with a line \"---\", then name: and description:, then \"---\"")
	}
	var m Meta
	res, err := frontmatter.Decode(front, &m)
	if err != nil {
		return Meta{}, "", res.Warnings(), err
	}
	unknown := res.Warnings()
	m.Name, m.Description = strings.TrimSpace(m.Name), strings.TrimSpace(m.Description)
	switch {
	case m.Name == "":
		return Meta{}, "", unknown, errors.New("front matter has no name")
	case len(m.Name) > maxName || !validName.MatchString(m.Name):
		return Meta{}, "", unknown, fmt.Errorf("name %q must be at most %d characters: letters, digits, '.', '_' and '-', without spaces or slashes", m.Name, maxName)
	case m.Description == "":
		return Meta{}, "", unknown, errors.New("front matter has no description")
	}
	return m, body, unknown, nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("larger than %d bytes", maxFile)
	}
	return data, nil
}

// All returns the skills in discovery order (a copy).
func (s *Set) All() []Skill {
	if s == nil {
		return nil
	}
	return slices.Clone(s.list)
}

// Len is the number of skills.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.list)
}

// Find returns the skill with that name.
func (s *Set) Find(name string) (Skill, bool) {
	if s == nil {
		return Skill{}, false
	}
	for _, k := range s.list {
		if k.Name == name {
			return k, true
		}
	}
	return Skill{}, false
}

// Dirs are the skill folders, for the read permission and the UI.
func (s *Set) Dirs() []string {
	var out []string
	for _, k := range s.All() {
		out = append(out, k.Dir)
	}
	return out
}

// Prompt is the system prompt section: each skill's name, description and
// SKILL.md path, and how to load one. "" when there are no skills.
func (s *Set) Prompt() string {
	if s.Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Skills\n\n")
	b.WriteString("Skills are folders of instructions for particular kinds of work. Only their names and descriptions are listed here. " +
		"Before you start work that a skill covers, load it: call the skill tool with its name, or read its SKILL.md with read_file " +
		"(the path is given). Then follow its instructions; paths it mentions are relative to its folder.\n")
	for _, k := range s.list {
		desc := k.Description
		if r := []rune(desc); len(r) > maxDescription {
			desc = string(r[:maxDescription]) + "…"
		}
		desc = strings.Join(strings.Fields(desc), " ")
		fmt.Fprintf(&b, "\n- %s: %s (%s)", k.Name, desc, k.File)
	}
	return b.String()
}

// Load returns a skill's instructions (SKILL.md without its front matter)
// and the files of its folder, relative to it.
func (s *Set) Load(name string) (Skill, string, []string, error) {
	k, ok := s.Find(name)
	if !ok {
		var names []string
		for _, x := range s.All() {
			names = append(names, x.Name)
		}
		return Skill{}, "", nil, fmt.Errorf("no skill named %q (skills: %s)", name, strings.Join(names, ", "))
	}
	data, err := readLimited(k.File)
	if err != nil {
		return k, "", nil, fmt.Errorf("read %s: %w", k.File, err)
	}
	_, body, err := Parse(data)
	if err != nil {
		return k, "", nil, fmt.Errorf("%s: %w", k.File, err)
	}
	var files []string
	walkErr := filepath.WalkDir(k.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable subfolder is left out
		}
		if d.IsDir() {
			if p != k.Dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if len(files) >= maxListed {
			return fs.SkipAll
		}
		rel, _ := filepath.Rel(k.Dir, p)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if walkErr != nil {
		return k, body, files, fmt.Errorf("list %s: %w", k.Dir, walkErr)
	}
	return k, body, files, nil
}

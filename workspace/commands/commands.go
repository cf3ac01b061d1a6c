// Package commands finds custom slash commands: Markdown files with
// optional front matter (description, argument-hint, model, allowed-tools,
// agent) in the folders Claude Code, the agents convention, opencode and
// Codex use, so `/review 42` works as it does there. A file's body is the
// prompt; $ARGUMENTS is everything typed after the name, $1…$9 the
// arguments one by one (quotes group words), $ARGUMENTS[N] the same from 0.
package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"polly/workspace/frontmatter"
)

// maxFile bounds a command file.
const maxFile = 256 << 10

// Command is one custom slash command.
type Command struct {
	Name         string // without the slash; "frontend:component" for a file in a subfolder
	Description  string
	ArgumentHint string
	Model        string
	Agent        string   // the persona to send it to (opencode's "agent"); "": the current one
	AllowedTools []string // as written; shown, not granted
	Body         string
	File         string // absolute path of the file
	Source       string // where it was found, for people: "project .claude/commands"
}

// Dir is a folder of command files.
type Dir struct {
	Path  string
	Label string
}

// Dirs lists the command folders, project first (its commands win over the
// user's of the same name).
func Dirs(project, home string) []Dir {
	var out []Dir
	if project != "" {
		for _, d := range []string{".claude/commands", ".agents/commands", ".opencode/command", ".opencode/commands"} {
			out = append(out, Dir{filepath.Join(project, filepath.FromSlash(d)), "project " + d})
		}
	}
	if home != "" {
		for _, d := range []string{".claude/commands", ".agents/commands", ".config/agents/commands", ".config/opencode/command",
			".config/opencode/commands", ".codex/prompts"} {
			out = append(out, Dir{filepath.Join(home, filepath.FromSlash(d)), "~/" + d})
		}
	}
	return out
}

// meta is a command file's front matter.
type meta struct {
	Description  string           `yaml:"description"`
	ArgumentHint frontmatter.Text `yaml:"argument-hint"`
	Model        string           `yaml:"model"`
	AllowedTools frontmatter.List `yaml:"allowed-tools"`
	Agent        string           `yaml:"agent"`
	// Known elsewhere, accepted without a warning.
	Name                   string           `yaml:"name"`
	DisallowedTools        frontmatter.List `yaml:"disallowed-tools"`
	DisableModelInvocation any              `yaml:"disable-model-invocation"`
	Subtask                any              `yaml:"subtask"`
}

// Set is the discovered commands, sorted by name. Read-only after Discover.
type Set struct {
	list []Command
}

// Discover reads every *.md under the folders (subfolders name
// namespaces: frontend/component.md is /frontend:component). A file that
// cannot be used is skipped with a warning naming it; an unknown front
// matter field is warned about once and ignored; of two commands with one
// name the first folder's wins.
func Discover(dirs []Dir) (*Set, []string) {
	s := &Set{}
	var warnings []string
	seen := map[string]string{}
	warnedKey := map[string]bool{}
	for _, d := range dirs {
		_ = filepath.WalkDir(d.Path, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if p != d.Path && !errors.Is(err, fs.ErrPermission) {
					warnings = append(warnings, fmt.Sprintf("commands in %s: %v", p, err))
				}
				return nil
			}
			if e.IsDir() {
				if p != d.Path && strings.HasPrefix(e.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.EqualFold(filepath.Ext(p), ".md") {
				return nil
			}
			rel, _ := filepath.Rel(d.Path, p)
			name := strings.ReplaceAll(strings.TrimSuffix(filepath.ToSlash(rel), filepath.Ext(rel)), "/", ":")
			c, unknown, err := load(p, name)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("command /%s skipped: %s: %v", name, p, err))
				return nil
			}
			for _, n := range unknown {
				if !warnedKey[n] {
					warnedKey[n] = true
					warnings = append(warnings, fmt.Sprintf("command /%s (%s): %s", name, p, n))
				}
			}
			if first, dup := seen[name]; dup {
				warnings = append(warnings, fmt.Sprintf("command /%s in %s is not used: %s has the same name", name, p, first))
				return nil
			}
			seen[name] = p
			c.Source = d.Label
			s.list = append(s.list, c)
			return nil
		})
	}
	slices.SortFunc(s.list, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return s, warnings
}

// validName is what may follow the slash.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

func load(path, name string) (Command, []string, error) {
	c := Command{Name: name, File: path}
	if !validName.MatchString(name) {
		return c, nil, fmt.Errorf("%q cannot be typed as a command name (letters, digits, . _ - :)", name)
	}
	f, err := os.Open(path)
	if err != nil {
		return c, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return c, nil, err
	}
	if len(data) > maxFile {
		return c, nil, fmt.Errorf("larger than %d KB", maxFile>>10)
	}
	front, body, has, err := frontmatter.Split(data)
	if err != nil {
		return c, nil, err
	}
	var m meta
	var unknown []string
	if has {
		res, err := frontmatter.Decode(front, &m)
		if unknown = res.Warnings(); err != nil {
			return c, unknown, err
		}
	}
	if strings.TrimSpace(body) == "" {
		return c, unknown, errors.New("the file has no prompt (its body is empty)")
	}
	c.Description, c.ArgumentHint, c.Model, c.Agent = strings.TrimSpace(m.Description), strings.TrimSpace(string(m.ArgumentHint)), m.Model, m.Agent
	c.AllowedTools, c.Body = m.AllowedTools, body
	if c.Description == "" {
		c.Description = firstLine(body)
	}
	return c, unknown, nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(strings.TrimLeft(l, "# ")); l != "" {
			if r := []rune(l); len(r) > 80 {
				return string(r[:79]) + "…"
			}
			return l
		}
	}
	return ""
}

// All returns the commands sorted by name (a copy).
func (s *Set) All() []Command {
	if s == nil {
		return nil
	}
	return slices.Clone(s.list)
}

// Len is the number of commands.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.list)
}

// Find returns the command with that name (without the slash).
func (s *Set) Find(name string) (Command, bool) {
	if s == nil {
		return Command{}, false
	}
	for _, c := range s.list {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// Lookup splits typed text ("/review 42 high") into a command and the
// text after its name; ok is false when the text names no command.
func (s *Set) Lookup(text string) (c Command, args string, ok bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return Command{}, "", false
	}
	name, rest, _ := strings.Cut(t[1:], " ")
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		name, rest = name[:i], name[i+1:]+" "+rest
	}
	c, ok = s.Find(name)
	return c, strings.TrimSpace(rest), ok
}

// MissingArgsError is a command used with fewer arguments than its prompt
// needs: nothing is sent.
type MissingArgsError struct {
	Command string
	Need    int // the highest $N the prompt uses
	Got     int
	Hint    string
}

func (e *MissingArgsError) Error() string {
	msg := fmt.Sprintf("/%s needs %d argument%s, got %d", e.Command, e.Need, plural(e.Need), e.Got)
	if e.Hint != "" {
		msg += fmt.Sprintf(" (usage: /%s %s)", e.Command, e.Hint)
	}
	return msg + "; nothing was sent"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// placeholder matches $ARGUMENTS, $ARGUMENTS[N] and $1…$9, with an
// optional backslash that keeps it literal.
var placeholder = regexp.MustCompile(`\\?\$(ARGUMENTS(?:\[(\d+)\])?|[1-9])`)

// Expand is the prompt the command sends with args (the text typed after
// its name). A prompt without $ARGUMENTS gets the arguments appended, as
// Claude Code does. Arguments the prompt numbers but that were not typed
// are a MissingArgsError.
func (c Command) Expand(args string) (string, error) {
	fields := splitArgs(args)
	need := 0
	usesAll := false
	for _, m := range placeholder.FindAllStringSubmatch(c.Body, -1) {
		if strings.HasPrefix(m[0], `\`) {
			continue
		}
		switch {
		case m[1] == "ARGUMENTS":
			usesAll = true
		case m[2] != "":
			n, _ := strconv.Atoi(m[2])
			need = max(need, n+1)
		default:
			n, _ := strconv.Atoi(m[1])
			need = max(need, n)
		}
	}
	if len(fields) < need {
		return "", &MissingArgsError{Command: c.Name, Need: need, Got: len(fields), Hint: c.ArgumentHint}
	}
	out := placeholder.ReplaceAllStringFunc(c.Body, func(tok string) string {
		if strings.HasPrefix(tok, `\`) {
			return tok[1:]
		}
		m := placeholder.FindStringSubmatch(tok)
		switch {
		case m[1] == "ARGUMENTS":
			return args
		case m[2] != "":
			n, _ := strconv.Atoi(m[2])
			return fields[n]
		}
		n, _ := strconv.Atoi(m[1])
		return fields[n-1]
	})
	out = strings.TrimRight(out, "\n")
	if !usesAll && need == 0 && strings.TrimSpace(args) != "" {
		out += "\n\nARGUMENTS: " + args
	}
	return out, nil
}

// splitArgs splits like a shell: spaces separate, quotes group.
// SplitArgs splits what follows a command's name into arguments, as $1…$9
// see them: by spaces, quotes grouping words.
func SplitArgs(s string) []string { return splitArgs(s) }

func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote, has := false, rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, has = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in || has {
				out = append(out, cur.String())
				cur.Reset()
			}
			in, has = false, false
			continue
		default:
			cur.WriteRune(r)
		}
		in = true
	}
	if in || has {
		out = append(out, cur.String())
	}
	return out
}

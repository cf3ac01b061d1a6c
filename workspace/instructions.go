package workspace

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The project is where a repository begins, not wherever Polly was
// started: a run in src/ uses the root's .agent/, .mcp.json, skills and
// settings, and reads the instruction files from the root down to src/.

// ProjectRoot finds the project that holds dir: the root of its git
// repository, else the nearest directory up holding .agent/, AGENTS.md or
// .mcp.json, else dir itself. The home directory, the temp directory and /
// count only when Polly is started right there, so a dotfiles repository
// in ~, the workspace in ~/.agent or a run in /tmp never swallows the
// projects below them.
func ProjectRoot(dir, home string) string {
	dir = filepath.Clean(dir)
	stops := []string{string(filepath.Separator), filepath.Clean(os.TempDir())}
	if home != "" {
		stops = append(stops, filepath.Clean(home))
	}
	var up []string // dir, then its parents that may be a project root
	for d := dir; ; {
		up = append(up, d)
		parent := filepath.Dir(d)
		if parent == d || slices.Contains(stops, parent) {
			break
		}
		d = parent
	}
	for _, d := range up {
		if exists(filepath.Join(d, ".git")) {
			return d
		}
	}
	for _, d := range up {
		if isDir(filepath.Join(d, ".agent")) || exists(filepath.Join(d, "AGENTS.md")) || exists(filepath.Join(d, ".mcp.json")) {
			return d
		}
	}
	return dir
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// InstructionFiles lists the instruction files that exist from root down to
// dir (AGENTS.md, CLAUDE.md or .claude/CLAUDE.md, CLAUDE.local.md in each
// directory), without their imports: what the memory inspector offers.
func InstructionFiles(root, dir string) []string {
	if dir == "" {
		dir = root
	}
	var out []string
	for _, d := range instructionDirs(root, dir) {
		claude := filepath.Join(d, "CLAUDE.md")
		if !exists(claude) {
			claude = filepath.Join(d, ".claude", "CLAUDE.md")
		}
		for _, f := range []string{filepath.Join(d, "AGENTS.md"), claude, filepath.Join(d, "CLAUDE.local.md")} {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
				out = append(out, f)
			}
		}
	}
	return out
}

// maxImportHops bounds how deep @path imports are followed.
const maxImportHops = 5

// instructionDirs lists root, then each directory down to dir (dir when
// it is not inside root: then only root).
func instructionDirs(root, dir string) []string {
	out := []string{root}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		return out
	}
	d := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		out = append(out, d)
	}
	return out
}

// importRef finds @path imports: an @ at the start of a line or after a
// space, then a path.
var importRef = regexp.MustCompile(`(?m)(?:^|[\s(])@([^\s` + "`" + `()<>\[\]]+)`)

// imports lists the files a Markdown text imports with @path, resolved
// against dir; code spans and fenced code blocks are skipped, as Claude
// Code does.
func imports(text, dir string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced || strings.IndexByte(line, '@') < 0 {
			continue // most lines: no regexp run for them
		}
		for _, m := range importRef.FindAllStringSubmatchIndex(withoutCodeSpans(line), -1) {
			p := strings.TrimRight(line[m[2]:m[3]], ".,;:!?")
			if p == "" {
				continue
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// withoutCodeSpans blanks `code spans` (keeping offsets), so a path
// mentioned in backticks is not imported.
func withoutCodeSpans(line string) string {
	b := []byte(line)
	in := false
	for i, c := range b {
		if c == '`' {
			in = !in
			continue
		}
		if in {
			b[i] = ' '
		}
	}
	return string(b)
}

// inside reports whether p is root or below it.
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

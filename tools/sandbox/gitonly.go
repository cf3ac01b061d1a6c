package sandbox

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// gitRunsPrograms are git subcommands that run programs named on the line
// or in files the command could have written: a line using them is not
// "git only".
var gitRunsPrograms = map[string]bool{
	"bisect": true, "submodule": true, "filter-branch": true, "difftool": true, "mergetool": true,
	"daemon": true, "instaweb": true, "send-email": true, "credential": true, "config": true, "hook": true,
	"upload-pack": true, "receive-pack": true, "shell": true, "archimport": true, "cvsimport": true,
	"cvsserver": true, "cvsexportcommit": true, "svn": true, "p4": true, "quiltimport": true, "web--browse": true,
	"help": true, "remote-ext": true, "fsmonitor--daemon": true, "filter-repo": true, "worktree": true,
	// They write a file wherever they are told: with .git writable, that
	// could be .git/commondir (which moves config and hooks elsewhere).
	"bundle": true, "archive": true, "format-patch": true, "init": true, "clone": true,
}

// gitGlobalRuns are options before the subcommand that make git run a
// program, read settings from elsewhere or work on another repository.
var gitGlobalRuns = []string{"-c", "--config-env", "--exec-path", "--git-dir", "--work-tree", "--namespace"}

// gitOptionRuns are, per subcommand, options that make git run a program
// they name ("" applies to every subcommand).
var gitOptionRuns = map[string][]string{
	"":          {"--upload-pack", "--receive-pack", "--exec", "--ext-diff", "--template", "--open-files-in-pager", "--output"},
	"fetch":     {"-u"},
	"pull":      {"-u"},
	"clone":     {"-u"},
	"ls-remote": {"-u"},
	"archive":   {"--remote"},
	"rebase":    {"-x", "-i", "--interactive"},
	"grep":      {"-O"},
}

// optionIs: w is option bad, with an attached value, or an abbreviation
// of a long option (git accepts unambiguous prefixes).
func optionIs(w, bad string) bool {
	if w == bad || strings.HasPrefix(w, bad+"=") {
		return true
	}
	if len(bad) == 2 {
		return strings.HasPrefix(w, bad) && !strings.HasPrefix(w, "--")
	}
	return strings.HasPrefix(w, "--") && len(w) > 3 && strings.HasPrefix(bad, strings.SplitN(w, "=", 2)[0])
}

// GitOnly reports whether a command line is nothing but plain git
// invocations — literal words, no assignments, redirections only to
// /dev/null, no substitutions, no git option or subcommand that runs
// another program or writes a file it is told to (--output, bundle,
// archive), no word naming a path in a .git — so that it may write .git/
// (but never its hooks, config, commondir, modules or worktrees, which
// stay read-only for it too). Anything unsure is false.
func GitOnly(line string) bool {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil || len(f.Stmts) == 0 {
		return false
	}
	ok := true
	var stmt func(s *syntax.Stmt)
	stmt = func(s *syntax.Stmt) {
		if !ok {
			return
		}
		if s.Background || s.Coprocess {
			ok = false
			return
		}
		for _, r := range s.Redirs {
			if r.Hdoc != nil || r.Word == nil || lit(r.Word) != "/dev/null" {
				ok = false
				return
			}
		}
		switch c := s.Cmd.(type) {
		case *syntax.CallExpr:
			ok = gitCall(c)
		case *syntax.BinaryCmd:
			if c.Op != syntax.AndStmt && c.Op != syntax.OrStmt {
				ok = false // pipes feed git's output to another program
				return
			}
			stmt(c.X)
			stmt(c.Y)
		default:
			ok = false
		}
	}
	for _, s := range f.Stmts {
		stmt(s)
	}
	return ok
}

func gitCall(c *syntax.CallExpr) bool {
	if len(c.Assigns) > 0 || len(c.Args) < 2 {
		return false
	}
	words := make([]string, len(c.Args))
	for i, w := range c.Args {
		s := lit(w)
		if s == "" || namesGitDir(s) {
			return false
		}
		words[i] = s
	}
	if words[0] != "git" {
		return false
	}
	sub, at := "", 0
	for i, w := range words[1:] {
		if !strings.HasPrefix(w, "-") {
			sub, at = w, i+1
			break
		}
		for _, bad := range gitGlobalRuns {
			if optionIs(w, bad) {
				return false
			}
		}
	}
	if sub == "" || gitRunsPrograms[sub] {
		return false
	}
	for _, w := range words[at+1:] {
		if w == "--" {
			break
		}
		for _, bad := range append(gitOptionRuns[""], gitOptionRuns[sub]...) {
			if optionIs(w, bad) {
				return false
			}
		}
	}
	return true
}

// lit is a word made only of literal parts (quotes allowed), or "".
func lit(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[{~\\$`") {
				return ""
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return ""
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsAny(l.Value, "$`\\") {
					return ""
				}
				b.WriteString(l.Value)
			}
		default:
			return ""
		}
	}
	return b.String()
}

// namesGitDir: the word names .git or a path in one (git finds its
// repository itself; a plain git line never names it).
func namesGitDir(w string) bool {
	for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '/' || r == '=' || r == ':' }) {
		if part == ".git" || part == "commondir" {
			return true
		}
	}
	return false
}

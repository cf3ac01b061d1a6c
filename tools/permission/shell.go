package permission

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Analysis is what Classify found in a command line, parsed as bash
// (run_command runs `bash -c`), never matched as a string: every simple
// command in pipes, lists, subshells, substitutions, `bash -c` strings and
// `eval` is a Part. The OS sandbox decides what a command can do; this
// decides when to ask.
type Analysis struct {
	Parsed   bool
	ReadOnly bool // every Part is on the read-only list and nothing is written
	// Pure: ReadOnly with only commands that print their arguments or the
	// files named (ls, cat, head, wc…), literal words, no expansion and no
	// redirection: safe without a sandbox when Reads are project files.
	Pure  bool
	Reads []string
	Parts []Part
	// Writes are the files the line writes, as far as they can be seen
	// before it runs: redirections and the targets of known writers.
	Writes     []Write
	ChangesDir bool // cd, pushd, env -C
	DotGlob    bool // * may match dot files (.git, .agent)
}

// Part is one simple command or construct of a command line.
type Part struct {
	Text    string // the source text, e.g. "FOO=1 rm x"
	Command string // the words after quote removal, without assignments
	Name    string // the command's base name; "" for a construct or a computed name
	// Canonical is git without its global options and with -c aliases
	// replaced, as deny and ask rules also see it.
	Canonical string
	ReadOnly  bool
	Why       string // why it is not read-only
	Dynamic   bool   // the name or some words are only known at run time
	Destroys  string // why it destroys work undo cannot restore (git reset --hard…)
	pure      bool
}

// Write is one file a command line writes.
type Write struct {
	Path string // after quote removal; "" when only known at run time
	Text string // as written
	By   string // "redirection" or the command that writes
	Tree bool   // may change anything below Path (rm -r, mv's source)
	Glob bool   // Path is a pattern the shell expands
}

// Reason is a one-line summary of why the line is not read-only.
func (a Analysis) Reason() string {
	for _, p := range a.Parts {
		if !p.ReadOnly {
			return p.Why
		}
	}
	if len(a.Writes) > 0 {
		return "writes " + a.Writes[0].Text
	}
	return ""
}

const (
	maxNesting      = 8        // bash -c, eval and wrappers nested deeper are not judged
	maxCommandBytes = 64 << 10 // longer lines are judged by a person
)

// Classify parses a bash command line and judges every part of it. It never
// fails: what cannot be judged is a Part that is not read-only.
func Classify(cmd string) Analysis {
	var a Analysis
	for _, r := range cmd {
		// bash and the parser may disagree on control characters (a
		// carriage return is part of a word for bash).
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			a.Parts = append(a.Parts, Part{Text: cmd, Why: fmt.Sprintf("the command contains the control character %U", r)})
			return a
		}
	}
	if len(cmd) > maxCommandBytes {
		a.Parts = append(a.Parts, Part{Text: cmd[:80] + "…", Why: fmt.Sprintf("the command is longer than %d KB", maxCommandBytes>>10)})
		return a
	}
	c := &classifier{a: &a, src: cmd, pure: true}
	if a.Parsed = c.parseAndWalk(cmd); !a.Parsed {
		return a
	}
	a.ReadOnly, a.Pure = len(a.Writes) == 0, c.pure && len(a.Writes) == 0
	a.DotGlob = strings.Contains(cmd, "dotglob") || strings.Contains(cmd, "GLOBIGNORE") || strings.Contains(cmd, "BASHOPTS")
	for i, p := range a.Parts {
		if p.Name == "git" && p.ReadOnly && a.ChangesDir {
			// After cd, git may find another repository, whose settings
			// the overrides Polly reads ahead do not cover.
			a.Parts[i].ReadOnly, a.Parts[i].Why = false, "git after a change of directory may read another repository's settings"
		}
		a.ReadOnly = a.ReadOnly && a.Parts[i].ReadOnly
		a.Pure = a.Pure && p.pure
		a.DotGlob = a.DotGlob || !p.ReadOnly && (p.Name == "" || strings.Contains(" shopt set export declare typeset local readonly source . eval enable bash sh dash env builtin command exec ", " "+p.Name+" "))
	}
	return a
}

type classifier struct {
	a        *Analysis
	src      string // the text positions refer to (the line, or a nested script)
	depth    int
	pure     bool   // only literal words and harmless redirections so far
	destroys string // set by a judge for the Part being judged
}

func (c *classifier) parseAndWalk(src string) bool {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		c.a.Parts = append(c.a.Parts, Part{Text: src, Why: "the command could not be parsed (" + err.Error() + ")"})
		return false
	}
	syntax.Walk(f, c.node)
	return true
}

// nested judges a script held in a string (bash -c, eval, alias, PS4…).
func (c *classifier) nested(script string) {
	c.pure = false
	if c.depth >= maxNesting {
		c.a.Parts = append(c.a.Parts, Part{Text: script, Why: "nests scripts too deeply to judge"})
		return
	}
	(&classifier{a: c.a, src: script, depth: c.depth + 1}).parseAndWalk(script)
}

func (c *classifier) text(n syntax.Node) string {
	if start, end := n.Pos().Offset(), n.End().Offset(); start <= end && end <= uint(len(c.src)) {
		return c.src[start:end]
	}
	return ""
}

// construct records a construct that is not read-only.
func (c *classifier) construct(n syntax.Node, why string) {
	c.a.Parts = append(c.a.Parts, Part{Text: c.text(n), Why: why})
	c.pure = false
}

// node judges one node of the syntax tree; the walk goes on into its
// children (a command's words hold its substitutions).
func (c *classifier) node(n syntax.Node) bool {
	switch x := n.(type) {
	case *syntax.CallExpr:
		for _, as := range x.Assigns {
			c.assign(as)
		}
		words := make([]wordInfo, len(x.Args))
		for i, w := range x.Args {
			words[i] = c.word(w)
		}
		c.command(c.text(x), words)
	case *syntax.Redirect:
		c.redirect(x)
	case *syntax.Stmt:
		if x.Coprocess {
			c.construct(x, "runs a coprocess")
		}
	case *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.LetClause:
		c.construct(x, "uses arithmetic evaluation, which can run commands through array subscripts")
	case *syntax.DeclClause:
		c.construct(x, "declares or exports variables ("+x.Variant.Value+")")
	case *syntax.CoprocClause:
		c.construct(x, "runs a coprocess")
	case *syntax.ForClause:
		if l, ok := x.Loop.(*syntax.WordIter); !ok || !safeName(l.Name.Value) {
			c.construct(x, "uses a for loop that assigns a variable with an effect, or arithmetic")
		}
	case *syntax.ParamExp:
		c.pure = false
		switch {
		case x.Excl || x.Index != nil || x.Slice != nil || x.Width || x.NestedParam != nil || x.Exp != nil && x.Exp.Op == syntax.OtherParamOps:
			c.construct(x, "uses an expansion that evaluates its value (indirection, a subscript, a slice or ${x@…})")
		case x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull):
			c.construct(x, "assigns a variable inside an expansion")
		}
	case *syntax.BinaryTest:
		if x.Op >= syntax.TsEql && x.Op <= syntax.TsGtr {
			c.construct(x, "uses an arithmetic comparison in [[ ]], which evaluates its operands")
		}
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			c.construct(x, "uses [[ -v ]], which evaluates array subscripts")
		}
	case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ExtGlob, *syntax.FuncDecl:
		c.pure = false
	}
	return true
}

// harmlessTarget: a redirection target that writes no file.
func harmlessTarget(p string) bool {
	rest, ok := strings.CutPrefix(p, "/dev/fd/")
	return p == "/dev/null" || p == "/dev/stdout" || p == "/dev/stderr" || ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

func (c *classifier) redirect(r *syntax.Redirect) {
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		c.construct(r, "assigns a file descriptor to a variable")
	}
	if r.Word == nil {
		return
	}
	w := c.word(r.Word)
	out, dup := false, false
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		out = true
	case syntax.DplOut: // >&2 and >&- duplicate or close; >&file writes file
		dup = w.lit && strings.Trim(strings.TrimSuffix(w.text, "-"), "0123456789") == ""
		out = !dup
	}
	if !dup && !(out && w.lit && harmlessTarget(w.text)) {
		c.pure = false
	}
	// bash itself opens /dev/tcp/HOST/PORT; a source only known at run
	// time could be one.
	if clean := path.Clean("/" + w.text); w.lit && strings.HasPrefix(w.text, "/") && (clean == "/dev/tcp" || clean == "/dev/udp" ||
		strings.HasPrefix(clean, "/dev/tcp/") || strings.HasPrefix(clean, "/dev/udp/")) {
		c.construct(r, "opens a network connection ("+w.src+")")
		return
	}
	if !w.lit && (r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut) {
		c.construct(r, "redirects from "+w.src+", which is only known at run time and could be a network connection (/dev/tcp/…)")
	}
	if out {
		c.addWrite(w, "redirection", false)
	}
}

// addWrite records a write target.
func (c *classifier) addWrite(w wordInfo, by string, tree bool) *Write {
	if w.lit && (harmlessTarget(w.text) || w.text == "-" && by != "redirection") {
		return &Write{} // /dev/null, a tool's "-" for stdout: nothing to record
	}
	wr := Write{Text: w.src, By: by, Tree: tree}
	if w.lit {
		wr.Path, wr.Glob = w.text, w.glob
	}
	c.a.Writes = append(c.a.Writes, wr)
	return &c.a.Writes[len(c.a.Writes)-1]
}

// wordInfo is a word after quote removal, as far as it is known before the
// command runs.
type wordInfo struct {
	src  string // as written
	text string // after quote removal; the source when not lit
	lit  bool   // fully known: no expansion other than a leading ~ or ~/
	glob bool   // unquoted glob characters: the shell expands it to names
}

// unknown stands for arguments only known at run time (what xargs adds).
func unknown(src string) wordInfo { return wordInfo{src: src, text: src} }

// word returns a word's value as far as it is known; what is nested in it
// is judged by the walk.
func (c *classifier) word(w *syntax.Word) wordInfo {
	info := wordInfo{src: c.text(w), lit: true}
	var sb, unquoted strings.Builder
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v := x.Value
			info.lit = info.lit && !(i == 0 && strings.HasPrefix(v, "~") && v != "~" && !strings.HasPrefix(v, "~/")) // ~user
			for j := 0; j < len(v); j++ {
				if v[j] == '\\' {
					j++ // \* is no glob
				} else if v[j] == '*' || v[j] == '?' || v[j] == '[' && strings.Contains(v[j:], "]") {
					info.glob = true
				}
			}
			sb.WriteString(unescape(v, false))
			unquoted.WriteString(v)
		case *syntax.SglQuoted:
			info.lit = info.lit && !x.Dollar // $'…' is judged unknown rather than decoded
			sb.WriteString(x.Value)
			unquoted.WriteByte(0)
		case *syntax.DblQuoted:
			info.lit = info.lit && !x.Dollar
			for _, dp := range x.Parts {
				l, ok := dp.(*syntax.Lit)
				if info.lit = info.lit && ok; ok {
					sb.WriteString(unescape(l.Value, true))
				}
			}
			unquoted.WriteByte(0)
		default:
			info.lit, info.glob = false, info.glob || isExtGlob(part)
		}
	}
	if u := unquoted.String(); strings.Contains(u, "{") && (strings.Contains(u, ",") || strings.Contains(u, "..")) {
		info.lit = false // brace expansion: several words
	}
	if info.text = sb.String(); !info.lit {
		info.text = info.src
	}
	return info
}

func isExtGlob(p syntax.WordPart) bool { _, ok := p.(*syntax.ExtGlob); return ok }

// unescape removes quoting backslashes as bash does: before any character
// unquoted, before $ ` " \ and newline inside double quotes.
func unescape(v string, double bool) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && (!double || strings.IndexByte("$`\"\\\n", v[i+1]) >= 0) {
			if i++; v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// safeName: a variable that configures nothing: lower case by convention,
// or an upper-case one that only changes formatting or the target.
func safeName(s string) bool {
	if strings.Contains(" LANG LANGUAGE TZ NO_COLOR FORCE_COLOR CLICOLOR TERM COLUMNS LINES CGO_ENABLED GOOS GOARCH GOAMD64 GOMAXPROCS GOGC CI RUST_BACKTRACE ", " "+s+" ") {
		return true
	}
	if strings.HasPrefix(s, "LC_") {
		s = strings.ToLower(s)
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// assign judges an assignment, in front of a command or bare.
func (c *classifier) assign(as *syntax.Assign) {
	c.pure = false
	if as.Index != nil || as.Array != nil || as.Naked || as.Name == nil || !safeName(as.Name.Value) {
		c.construct(as, "sets a variable that could change what a command runs (or evaluates a subscript)")
	}
}

// command judges one simple command given as words and records it as a
// Part; wrappers record the command they run as a Part of its own.
func (c *classifier) command(text string, words []wordInfo) {
	if len(words) == 0 {
		return
	}
	part := Part{Text: text, Command: joinWords(words, false)}
	switch {
	case c.depth > maxNesting:
		part.Why = "nests commands too deeply to judge"
	case !words[0].lit || words[0].glob:
		part.Dynamic, part.Why = true, "the command name is only known at run time ("+words[0].src+")"
	}
	if part.Why != "" {
		c.a.Parts = append(c.a.Parts, part)
		c.pure = false
		return
	}
	name, args := words[0].text, words[1:]
	part.Name = path.Base(name)
	for _, w := range args {
		part.Dynamic = part.Dynamic || !w.lit || w.glob
	}
	if part.Name == "git" {
		var unknownAlias bool
		part.Canonical, unknownAlias = gitCanonical(c, args)
		part.Dynamic = part.Dynamic || unknownAlias
	}
	idx := len(c.a.Parts)
	c.a.Parts = append(c.a.Parts, part)
	ro, why := c.judge(part.Name, args)
	if strings.Contains(name, "/") && !(path.IsAbs(name) && strings.Contains(" /bin /usr/bin /usr/local/bin /sbin /usr/sbin /usr/local/sbin /opt/homebrew/bin ", " "+path.Dir(path.Clean(name))+" ")) {
		// ./ls or bin/cat is a program in the project, not the system
		// tool; what it writes (./rm x) is still collected above.
		ro, why = false, "runs "+name+", a program named by path outside the system directories"
	}
	if !ro && why == "" {
		why = part.Name + " is not read-only"
	}
	p := &c.a.Parts[idx]
	p.ReadOnly, p.Why, p.Destroys, c.destroys = ro, why, c.destroys, ""
	p.pure = ro && pureCommand(part.Name, args)
	c.pure = c.pure && p.pure
	for _, w := range args {
		if p.pure && !strings.HasPrefix(w.text, "-") && strings.Contains(" ls cat head tail wc ", " "+part.Name+" ") {
			c.a.Reads = append(c.a.Reads, w.text)
		}
	}
}

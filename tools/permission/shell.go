package permission

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Analysis is what Classify found in a command line. It is judged on the
// line parsed as bash (run_command runs `bash -c`), never on a string prefix:
// every simple command in pipes, lists, subshells, command and process
// substitutions, here-documents, `bash -c` strings and `eval` is a Part.
type Analysis struct {
	// ReadOnly: the line parsed, every Part is read-only, and nothing is
	// written (no redirection to a file, no write target).
	ReadOnly bool
	Parsed   bool
	// Parts are the simple commands and the constructs that were judged, in
	// source order; what is nested in a command's words comes before it.
	Parts []Part
	// Writes are the files the line writes, as far as they can be seen
	// before it runs: redirections and the targets of known writers (rm, mv,
	// cp, tee, sed -i …). Unknown commands (python, make …) may write more.
	Writes []Write
	// ChangesDir is set when the line changes directory (cd, pushd, env -C),
	// so relative write targets cannot be placed.
	ChangesDir bool
	// DotGlob: the line may turn on dotglob (shopt, GLOBIGNORE, BASHOPTS,
	// a shell option) or change the shell in ways not followed, so a glob
	// write target like * is expanded with dot files (.git, .agent) too.
	DotGlob bool
	// MakesLinks names a command of the line that can create symlinks or
	// hard links (ln, cp -a, tar, git checkout…): the line's other write
	// targets may then land somewhere else than they seem to.
	MakesLinks string
}

// Part is one simple command or construct of a command line.
type Part struct {
	Text     string // the source text judged, e.g. "go test ./pkg" or "FOO=1 rm x"
	Command  string // a simple command's words after quote removal, without assignments
	Name     string // the command's base name; "" for a construct or a computed name
	ReadOnly bool
	Why      string // why it is not read-only
	// Canonical is the command as deny and ask rules also see it: git
	// without its global options (git -c x=y push is git push), an alias
	// from git -c alias.NAME=… replaced by what it stands for.
	Canonical string
	// Dynamic: the name or some words are only known at run time, so a
	// deny or ask rule for this command may match when it runs.
	Dynamic bool
}

// Write is one file a command line writes.
type Write struct {
	Path string // the target after quote removal; "" when only known at run time
	Text string // as written, for messages
	By   string // "redirection" or the command that writes
	// Tree: the command may change anything at or below Path (rm -r, the
	// source of mv, chmod -R, find -delete).
	Tree bool
	// Children: when Path is an existing directory the command writes these
	// names inside it (the destination of cp, mv, ln); ChildUnknown when a
	// name is only known at run time.
	Children     []string
	ChildUnknown bool
	Glob         bool // Path is a glob pattern the shell expands
	// Link: the command acts on a symlink itself (rm, mv), not on what it
	// points to.
	Link bool
	// LinkMaker: written by the command that makes links itself.
	LinkMaker bool
}

// Reason is a one-line summary of why the line is not read-only.
func (a Analysis) Reason() string {
	for _, p := range a.Parts {
		if !p.ReadOnly {
			return p.Why
		}
	}
	for _, w := range a.Writes {
		return "writes " + w.Text
	}
	return ""
}

// maxNesting bounds bash -c / eval / wrapper recursion, so a crafted line
// cannot make classification expensive.
const maxNesting = 8

// maxCommandBytes bounds what is parsed; longer lines are judged by a
// person. Real commands are far shorter.
const maxCommandBytes = 64 << 10

// Classify parses a bash command line and judges every part of it. It never
// fails: what cannot be judged is a Part that is not read-only.
func Classify(cmd string) Analysis {
	var a Analysis
	if bad := badControl(cmd); bad != "" {
		a.Parts = append(a.Parts, Part{Text: cmd, Why: bad})
		return a
	}
	if len(cmd) > maxCommandBytes {
		a.Parts = append(a.Parts, Part{Text: cmd[:80] + "…", Why: fmt.Sprintf("the command is longer than %d KB", maxCommandBytes>>10)})
		return a
	}
	c := &classifier{a: &a, src: cmd}
	if !c.parseAndWalk(cmd) {
		return a
	}
	a.Parsed = true
	if a.ChangesDir {
		// After cd, git finds its repository (and the settings that name
		// programs it runs) in a directory that may not be protected.
		for i := range a.Parts {
			if a.Parts[i].Name == "git" && a.Parts[i].ReadOnly {
				a.Parts[i].ReadOnly = false
				a.Parts[i].Why = "git after a change of directory may read another repository's settings, which can name programs to run"
			}
		}
	}
	a.DotGlob = mayDotGlob(cmd, a.Parts)
	a.ReadOnly = len(a.Writes) == 0
	for _, p := range a.Parts {
		if !p.ReadOnly {
			a.ReadOnly = false
		}
	}
	return a
}

// mayDotGlob: the line could make * match dot files. Bash does that after
// shopt -s dotglob, with GLOBIGNORE set, or with BASHOPTS in the
// environment of a new bash; any construct that sets variables or shell
// options counts, since quoting can hide the names from a text search.
func mayDotGlob(cmd string, parts []Part) bool {
	for _, w := range []string{"dotglob", "GLOBIGNORE", "BASHOPTS"} {
		if strings.Contains(cmd, w) {
			return true
		}
	}
	for _, p := range parts {
		if p.ReadOnly {
			continue
		}
		switch p.Name {
		case "", "shopt", "set", "export", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray",
			"source", ".", "eval", "enable", "bash", "sh", "dash", "env", "printf", "builtin", "command", "exec":
			return true
		}
	}
	return false
}

// badControl rejects control characters other than tab and newline: bash
// and the parser may disagree on them (a carriage return is part of a word
// for bash), and a NUL cannot reach bash at all.
func badControl(s string) string {
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return fmt.Sprintf("the command contains the control character %U", r)
		}
	}
	return ""
}

type classifier struct {
	a     *Analysis
	src   string // the text positions refer to (the line, or a bash -c string)
	depth int
}

// sub is a classifier for a nested script (bash -c, eval).
func (c *classifier) sub(src string) *classifier {
	return &classifier{a: c.a, src: src, depth: c.depth + 1}
}

func (c *classifier) parseAndWalk(src string) bool {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		c.a.Parts = append(c.a.Parts, Part{Text: src, Why: "the command could not be parsed (" + err.Error() + ")"})
		return false
	}
	c.stmts(f.Stmts)
	return true
}

func (c *classifier) text(n syntax.Node) string {
	start, end := n.Pos().Offset(), n.End().Offset()
	if start <= end && end <= uint(len(c.src)) {
		return c.src[start:end]
	}
	return ""
}

// construct records a construct that is not read-only.
func (c *classifier) construct(n syntax.Node, why string) {
	c.a.Parts = append(c.a.Parts, Part{Text: c.text(n), Why: why})
}

func (c *classifier) stmts(list []*syntax.Stmt) {
	for _, s := range list {
		c.stmt(s)
	}
}

func (c *classifier) stmt(s *syntax.Stmt) {
	if s == nil {
		return
	}
	if s.Coprocess || s.Disown {
		c.construct(s, "runs a coprocess")
	}
	switch x := s.Cmd.(type) {
	case nil:
		// Only redirections: `> file` truncates it.
	case *syntax.CallExpr:
		c.call(x)
	case *syntax.BinaryCmd:
		c.stmt(x.X)
		c.stmt(x.Y)
	case *syntax.Subshell:
		c.stmts(x.Stmts)
	case *syntax.Block:
		c.stmts(x.Stmts)
	case *syntax.IfClause:
		for ic := x; ic != nil; ic = ic.Else {
			c.stmts(ic.Cond)
			c.stmts(ic.Then)
		}
	case *syntax.WhileClause:
		c.stmts(x.Cond)
		c.stmts(x.Do)
	case *syntax.ForClause:
		switch l := x.Loop.(type) {
		case *syntax.WordIter:
			c.varName(l.Name, x)
			for _, w := range l.Items {
				c.word(w)
			}
		default:
			c.construct(x, "uses arithmetic evaluation (a C-style for loop)")
		}
		c.stmts(x.Do)
	case *syntax.CaseClause:
		c.word(x.Word)
		for _, it := range x.Items {
			for _, p := range it.Patterns {
				c.word(p)
			}
			c.stmts(it.Stmts)
		}
	case *syntax.TestClause:
		c.test(x.X, x)
	case *syntax.TimeClause:
		c.stmt(x.Stmt)
	case *syntax.FuncDecl:
		// The body is judged as if it ran here; calling the function by its
		// name is not on the allowlist, so a definition gains nothing.
		c.stmt(x.Body)
	case *syntax.ArithmCmd:
		c.construct(x, "uses arithmetic evaluation, which can run commands through array subscripts")
	case *syntax.LetClause:
		c.construct(x, "uses let (arithmetic evaluation)")
	case *syntax.DeclClause:
		c.construct(x, "declares or exports variables ("+x.Variant.Value+")")
		for _, as := range x.Args {
			c.assignWords(as)
		}
	case *syntax.CoprocClause:
		c.construct(x, "runs a coprocess")
		c.stmt(x.Stmt)
	default:
		c.construct(s, fmt.Sprintf("uses a shell construct that is not judged (%T)", x))
	}
	for _, r := range s.Redirs {
		c.redirect(r)
	}
}

// netPath: bash's special files for network connections.
func netPath(p string) bool {
	c := path.Clean("/" + strings.TrimPrefix(p, "/"))
	return strings.HasPrefix(p, "/") && (c == "/dev/tcp" || c == "/dev/udp" || strings.HasPrefix(c, "/dev/tcp/") || strings.HasPrefix(c, "/dev/udp/"))
}

// harmlessTargets are redirection targets that do not write a file.
func harmlessTarget(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	if rest, ok := strings.CutPrefix(p, "/dev/fd/"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		return true
	}
	return false
}

func (c *classifier) redirect(r *syntax.Redirect) {
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		c.construct(r, "assigns a file descriptor to a variable")
	}
	if r.Hdoc != nil {
		c.word(r.Hdoc)
	}
	if r.Word == nil {
		return
	}
	w := c.word(r.Word)
	if netPath(w.text) || !w.lit && (r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut) {
		// bash itself opens /dev/tcp/HOST/PORT and /dev/udp/… as sockets,
		// for reading as much as for writing; a target only known at run
		// time could be one.
		why := "opens a network connection (" + w.src + ")"
		if !w.lit {
			why = "redirects from " + w.src + ", which is only known at run time and could be a network connection (/dev/tcp/…)"
		}
		c.construct(r, why)
		if w.lit || r.Op == syntax.RdrIn {
			return // a socket, not a file; an unknown output target is still a write below
		}
	}
	switch r.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
		return
	case syntax.DplOut:
		// >&2 and >&- duplicate or close a descriptor; >&file writes file.
		if w.lit && (w.text == "-" || strings.Trim(w.text, "0123456789") == "" || strings.Trim(strings.TrimSuffix(w.text, "-"), "0123456789") == "") {
			return
		}
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
	default:
		c.construct(r, "uses an unknown redirection "+r.Op.String())
		return
	}
	if w.lit && harmlessTarget(w.text) {
		return
	}
	c.addWrite(w, "redirection", false)
}

// addWrite records a write target.
func (c *classifier) addWrite(w wordInfo, by string, tree bool) {
	if w.lit && harmlessTarget(w.text) {
		return // go build -o /dev/null writes no file
	}
	wr := Write{Text: w.src, By: by, Tree: tree}
	if w.lit {
		wr.Path = w.text
		wr.Glob = w.glob
	}
	c.a.Writes = append(c.a.Writes, wr)
}

// test judges a [[ … ]] expression. Arithmetic comparisons and -v evaluate
// array subscripts, which can run commands hidden in a variable's value.
func (c *classifier) test(e syntax.TestExpr, n syntax.Node) {
	switch x := e.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			c.construct(n, "uses an arithmetic comparison in [[ ]], which evaluates its operands")
		}
		c.test(x.X, n)
		c.test(x.Y, n)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			c.construct(n, "uses [[ -v ]], which evaluates array subscripts")
		}
		c.test(x.X, n)
	case *syntax.ParenTest:
		c.test(x.X, n)
	case *syntax.Word:
		c.word(x)
	case nil:
	default:
		c.construct(n, fmt.Sprintf("uses a test that is not judged (%T)", x))
	}
}

// wordInfo is a word after quote removal, as far as it is known before the
// command runs.
type wordInfo struct {
	src    string // as written
	text   string // after quote removal; meaningful when lit
	lit    bool   // fully known: no expansion other than a leading ~
	glob   bool   // unquoted glob characters: the shell expands it to file names
	tilde  bool   // starts with an unquoted ~
	splits bool   // holds an unquoted expansion: may become several words or none
}

// dynamic is a wordInfo standing for arguments only known at run time
// (what xargs appends).
func dynamic(src string) wordInfo { return wordInfo{src: src, text: src, splits: true} }

// word judges a word and everything nested in it (command substitutions are
// Parts of their own) and returns its value as far as it is known.
func (c *classifier) word(w *syntax.Word) wordInfo {
	if w == nil {
		return wordInfo{lit: true}
	}
	info := wordInfo{src: c.text(w), lit: true}
	var sb, unquoted, globText strings.Builder
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v := x.Value
			if i == 0 && (v == "~" || strings.HasPrefix(v, "~/")) {
				info.tilde = true
			} else if i == 0 && strings.HasPrefix(v, "~") {
				info.lit = false // ~user: another user's home
			}
			globText.WriteString(unescapedSpecials(v))
			unquoted.WriteString(v)
			sb.WriteString(unescape(v))
		case *syntax.SglQuoted:
			if x.Dollar {
				info.lit = false // $'…' escapes: judged as unknown rather than decoded
			}
			sb.WriteString(x.Value)
			unquoted.WriteByte(0)
			globText.WriteByte(0)
		case *syntax.DblQuoted:
			if x.Dollar {
				info.lit = false // $"…" is translated at run time
			}
			for _, dp := range x.Parts {
				if l, ok := dp.(*syntax.Lit); ok {
					sb.WriteString(unescapeDouble(l.Value))
					continue
				}
				info.lit = false
				c.expansion(dp)
			}
			unquoted.WriteByte(0)
			globText.WriteByte(0)
		case *syntax.ExtGlob:
			info.glob = true
			info.lit = false
		default:
			info.lit = false
			info.splits = true
			c.expansion(part)
		}
	}
	if hasGlob(globText.String()) {
		info.glob = true
	}
	if u := unquoted.String(); strings.Contains(u, "{") && (strings.Contains(u, ",") || strings.Contains(u, "..")) {
		// Brace expansion: {a,b} becomes several words.
		info.lit = false
		info.splits = true
	}
	info.text = sb.String()
	if !info.lit {
		info.text = info.src
	}
	return info
}

// expansion judges a word part that is expanded at run time.
func (c *classifier) expansion(part syntax.WordPart) {
	switch x := part.(type) {
	case *syntax.ParamExp:
		c.param(x)
	case *syntax.CmdSubst:
		if x.TempFile || x.ReplyVar {
			c.construct(x, "uses a mksh command substitution")
		}
		c.stmts(x.Stmts)
	case *syntax.ProcSubst:
		// <(cmd) and >(cmd): cmd runs; the word becomes a /dev/fd path.
		c.stmts(x.Stmts)
	case *syntax.ArithmExp:
		c.construct(x, "uses arithmetic expansion, which can run commands through array subscripts")
	case *syntax.Lit, *syntax.SglQuoted:
	case *syntax.DblQuoted:
		for _, p := range x.Parts {
			c.expansion(p)
		}
	default:
		c.construct(part, fmt.Sprintf("uses an expansion that is not judged (%T)", x))
	}
}

// param judges a parameter expansion. Only plain reads of a variable are
// read-only: indirection, subscripts, slices and @P evaluate the value as
// code or arithmetic; := assigns.
func (c *classifier) param(p *syntax.ParamExp) {
	switch {
	case p.Param == nil || p.NestedParam != nil || p.Flags != nil || p.Width || p.IsSet ||
		p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset || len(p.Modifiers) > 0:
		c.construct(p, "uses a parameter expansion of another shell")
	case p.Excl || p.Names != 0:
		c.construct(p, "uses indirect expansion (${!…}), which can evaluate the value as a subscript")
	case p.Index != nil:
		c.construct(p, "uses an array subscript, which is evaluated as arithmetic")
	case p.Slice != nil:
		c.construct(p, "uses a substring expansion, whose offsets are evaluated as arithmetic")
	case p.Repl != nil:
		c.word(p.Repl.Orig)
		c.word(p.Repl.With)
	case p.Exp != nil:
		switch p.Exp.Op {
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			c.construct(p, "assigns a variable inside an expansion")
		case syntax.OtherParamOps:
			c.construct(p, "uses a ${var@…} transformation, which can expand prompts")
		}
		c.word(p.Exp.Word)
	}
}

// hasGlob: * and ?, or a bracket expression ("[" alone, the test command,
// is not a pattern).
func hasGlob(s string) bool {
	if strings.ContainsAny(s, "*?") {
		return true
	}
	i := strings.IndexByte(s, '[')
	return i >= 0 && strings.IndexByte(s[i+1:], ']') >= 0
}

// unescapedSpecials drops backslash-escaped characters from an unquoted
// literal so that \* is not taken for a glob.
func unescapedSpecials(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' {
			i++
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// unescape removes quoting backslashes from an unquoted literal as bash does.
func unescape(v string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that are quoting inside "…".
func unescapeDouble(v string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// lowerIdent: names of shell variables that do not configure programs. By
// convention environment variables with an effect (PATH, LD_PRELOAD,
// GIT_*, BASH_ENV, IFS …) are upper case.
func lowerIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// safeEnv are upper-case variables that may be set for a read-only
// command: they change formatting or the target platform, never what runs.
func safeEnv(name string) bool {
	if strings.HasPrefix(name, "LC_") {
		return lowerIdent(strings.ToLower(name))
	}
	switch name {
	case "LANG", "LANGUAGE", "TZ", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM", "COLUMNS", "LINES",
		"CGO_ENABLED", "GOOS", "GOARCH", "GOARM", "GOAMD64", "GOMAXPROCS", "GOGC", "GOTRACEBACK",
		"CI", "RUST_BACKTRACE", "RUST_LOG", "PYTHONDONTWRITEBYTECODE":
		return true
	}
	return false
}

// varName judges a variable a for loop or read assigns.
func (c *classifier) varName(l *syntax.Lit, n syntax.Node) {
	if l == nil || !lowerIdent(l.Value) && !safeEnv(l.Value) {
		name := ""
		if l != nil {
			name = l.Value
		}
		c.construct(n, "assigns the variable "+name+", which could change how later commands run")
	}
}

// assignWords judges the words nested in an assignment.
func (c *classifier) assignWords(as *syntax.Assign) {
	if as.Value != nil {
		c.word(as.Value)
	}
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			if el.Value != nil {
				c.word(el.Value)
			}
		}
	}
}

// assign judges one assignment: in front of a command (env for it) or bare
// (a shell variable for the rest of the line).
func (c *classifier) assign(as *syntax.Assign) {
	c.assignWords(as)
	name := ""
	if as.Name != nil {
		name = as.Name.Value
	}
	if as.Value != nil {
		c.shellCodeVar(name, c.wordQuiet(as.Value))
	}
	switch {
	case as.Index != nil || as.Array != nil:
		c.construct(as, "assigns an array element, which is evaluated as arithmetic")
	case as.Naked:
		c.construct(as, "uses a naked assignment")
	case lowerIdent(name), safeEnv(name):
		// Lower-case variables configure nothing; their later expansions
		// are judged as unknown words. The safe upper-case ones only
		// change formatting or the target platform.
	default:
		c.construct(as, "sets "+name+", which could change what a command runs")
	}
}

// shellCodeVar judges variables whose value bash runs later: prompts and
// PROMPT_COMMAND hold code (PS4='$(rm -rf .git)' bash -xc ls), BASH_ENV and
// ENV name a file a new shell runs. Their writes meet the hard protections.
func (c *classifier) shellCodeVar(name string, v wordInfo) {
	switch name {
	case "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND":
		if !v.lit {
			c.a.Writes = append(c.a.Writes, Write{Text: name + "=" + v.src, By: name})
		} else if c.depth < maxNesting {
			c.sub(v.text).parseAndWalk(v.text)
		}
	case "BASH_ENV", "ENV":
		c.a.Writes = append(c.a.Writes, Write{Text: name + "=" + v.src, By: name + " (a script a new shell runs)"})
	}
}

// wordQuiet is a word's value without judging what is nested in it again.
func (c *classifier) wordQuiet(w *syntax.Word) wordInfo {
	sub := &classifier{a: &Analysis{}, src: c.src, depth: c.depth}
	return sub.word(w)
}

func (c *classifier) call(ce *syntax.CallExpr) {
	for _, as := range ce.Assigns {
		c.assign(as)
	}
	if len(ce.Args) == 0 {
		return
	}
	words := make([]wordInfo, len(ce.Args))
	for i, w := range ce.Args {
		words[i] = c.word(w)
	}
	c.command(c.text(ce), words)
}

// command judges one simple command given as words, and records it as a
// Part (wrappers also record the command they run).
func (c *classifier) command(text string, words []wordInfo) {
	if len(words) == 0 {
		return
	}
	if c.depth > maxNesting {
		c.a.Parts = append(c.a.Parts, Part{Text: text, Why: "nests commands too deeply to judge"})
		return
	}
	plain := make([]string, len(words))
	for i, w := range words {
		plain[i] = w.text
	}
	command := strings.Join(plain, " ")
	name := words[0]
	if !name.lit || name.glob {
		c.a.Parts = append(c.a.Parts, Part{Text: text, Command: command, Dynamic: true, Why: "the command name is only known at run time (" + name.src + ")"})
		return
	}
	base, why := commandBase(name.text)
	part := Part{Text: text, Command: command, Name: base}
	for _, w := range words[1:] {
		part.Dynamic = part.Dynamic || !w.lit || w.glob || w.splits
	}
	if base == "git" {
		var unknownAlias bool
		part.Canonical, unknownAlias = gitCanonical(c, words[1:])
		part.Dynamic = part.Dynamic || unknownAlias
	}
	if why != "" {
		part.Why = why
		c.a.Parts = append(c.a.Parts, part)
		// Still collect what a known writer would touch, for the hard
		// protections: ./rm is as dangerous as rm.
		if ws := writerTargets(path.Base(name.text), words[1:]); len(ws) > 0 {
			c.a.Writes = append(c.a.Writes, ws...)
		}
		return
	}
	idx := len(c.a.Parts)
	c.a.Parts = append(c.a.Parts, part)
	firstWrite := len(c.a.Writes)
	ro, reason := judgeCommand(c, base, words[1:])
	if makesLinks(base, words[1:]) {
		for i := firstWrite; i < len(c.a.Writes); i++ {
			c.a.Writes[i].LinkMaker = true
		}
		if c.a.MakesLinks == "" {
			c.a.MakesLinks = text
		}
	}
	c.a.Parts[idx].ReadOnly = ro
	if !ro {
		if reason == "" {
			reason = base + " is not on the read-only list"
		}
		c.a.Parts[idx].Why = reason
	}
}

// systemDirs are where a command named by absolute path is taken for the
// command of the same base name.
func systemDir(dir string) bool {
	switch dir {
	case "/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin":
		return true
	}
	return false
}

// commandBase returns the name a command is judged by. /bin/rm is rm;
// ./ls or bin/cat is a program in the project, not the system tool.
func commandBase(name string) (base, why string) {
	if !strings.Contains(name, "/") {
		return name, ""
	}
	base = path.Base(name)
	if path.IsAbs(name) && systemDir(path.Dir(path.Clean(name))) {
		return base, ""
	}
	return base, "runs " + name + ", a program named by path outside the system directories"
}

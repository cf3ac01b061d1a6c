package permission

import (
	"path"
	"strings"
)

// judgeFunc decides whether one command with these arguments is read-only,
// and says why not. It may record write targets and nested commands.
type judgeFunc func(c *classifier, name string, args []wordInfo) (ro bool, why string)

// readOnlySpec returns how a command that can be read-only is judged. A
// command not listed here is never read-only. The list is a function, not a
// mutable table, so nothing can add to it at run time.
func readOnlySpec(name string) (judgeFunc, bool) {
	switch name {
	// Commands with no option that writes a file or runs a program: any
	// arguments are fine, even ones only known at run time.
	case "ls", "cat", "head", "tail", "wc", "pwd", "echo", "true", "false", ":",
		"which", "type", "stat", "du", "df",
		"grep", "egrep", "fgrep", "cut", "tr", "diff", "cmp",
		"basename", "dirname", "realpath", "readlink", "nl", "tac", "rev", "paste", "join", "comm",
		"fold", "expand", "unexpand", "column", "od", "hexdump", "strings", "base64",
		"md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum",
		"whoami", "id", "groups", "uname", "printenv", "sleep", "seq", "expr", "nproc", "arch",
		"uptime", "locale", "jq":
		return anyArgs, true
	case "cd", "pushd", "popd", "dirs":
		return judgeCd, true
	case "printf":
		return judgePrintf, true
	case "test", "[":
		return judgeTest, true
	case "read":
		return judgeRead, true
	case "file":
		return judgeFile, true
	case "date":
		return judgeDate, true
	case "tree":
		return judgeTree, true
	case "find":
		return judgeFind, true
	case "sort":
		return judgeSort, true
	case "uniq":
		return judgeUniq, true
	case "sed":
		return judgeSed, true
	case "rg":
		return judgeRg, true
	case "git":
		return judgeGit, true
	case "go":
		return judgeGo, true
	case "gofmt":
		return judgeGofmt, true
	case "cargo":
		return judgeCargo, true
	case "npm":
		return judgeNpm, true
	// Wrappers: read-only when the command they run is.
	case "env":
		return judgeEnv, true
	case "command", "builtin", "exec", "nice", "nohup", "timeout", "stdbuf", "time":
		return judgeWrapper, true
	case "xargs":
		return judgeXargs, true
	case "bash", "sh", "dash":
		return judgeShell, true
	case "eval":
		return judgeEval, true
	}
	return nil, false
}

// IsReadOnlyCommand reports whether a command name can ever be judged
// read-only (with suitable arguments).
func IsReadOnlyCommand(name string) bool {
	_, ok := readOnlySpec(name)
	return ok
}

func judgeCommand(c *classifier, name string, args []wordInfo) (bool, string) {
	if j, ok := readOnlySpec(name); ok {
		return j(c, name, args)
	}
	switch name {
	case "sudo", "doas", "su", "pkexec", "runuser":
		judgeInner(c, skipSudoOptions(args))
		return false, name + " runs a command as another user"
	case "alias", "trap":
		// The text runs later in this shell: judge it now, so its writes
		// meet the hard protections (alias x='rm -rf .git').
		judgeDeferred(c, name, args)
		return false, name + " defines code that runs later"
	}
	if ws := writerTargets(name, args); len(ws) > 0 {
		c.a.Writes = append(c.a.Writes, ws...)
		return false, name + " writes " + ws[0].Text
	}
	return false, ""
}

func anyArgs(*classifier, string, []wordInfo) (bool, string) { return true, "" }

func judgeCd(c *classifier, _ string, _ []wordInfo) (bool, string) {
	c.a.ChangesDir = true
	return true, ""
}

// judgePrintf: bash's printf -v assigns a variable, and a subscripted name
// (-v 'a[$(cmd)]') runs a command.
func judgePrintf(_ *classifier, _ string, args []wordInfo) (bool, string) {
	if len(args) == 0 {
		return true, ""
	}
	a := args[0]
	if !a.lit || a.glob {
		return false, "printf's first argument is only known at run time (it could be -v)"
	}
	if strings.HasPrefix(a.text, "-v") {
		return false, "printf -v assigns a variable"
	}
	return true, ""
}

// judgeTest: test and [ are read-only unless -v/-R (which evaluate array
// subscripts) could be an operator. Which word is an operator depends on
// the number of words, so unquoted expansions (which may split) ask, and a
// quoted expansion may only stand where an operand must be.
func judgeTest(_ *classifier, name string, args []wordInfo) (bool, string) {
	if name == "[" {
		if len(args) == 0 || !args[len(args)-1].lit || args[len(args)-1].text != "]" {
			return false, "[ without a closing ]"
		}
		args = args[:len(args)-1]
	}
	for _, a := range args {
		if a.lit && (a.text == "-v" || a.text == "-R") {
			return false, name + " " + a.text + " evaluates array subscripts"
		}
		if a.splits || a.glob {
			return false, name + " with the unquoted " + a.src + " could change meaning when it expands"
		}
	}
	operand := func(i int) bool {
		switch len(args) {
		case 1:
			return true
		case 2:
			return i == 1
		case 3:
			return i != 1
		}
		return false
	}
	for i, a := range args {
		if !a.lit && !operand(i) {
			return false, name + " with " + a.src + " where an operator may stand"
		}
	}
	return true, ""
}

// judgeRead: read assigns the variables it names.
func judgeRead(c *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "rse", shortVal: "adpntNui", strict: true}.parse(args)
	if p.why != "" {
		return false, "read: " + p.why
	}
	names := append(p.values("a"), p.operands...)
	for _, n := range names {
		if !n.lit || !lowerIdent(n.text) && !safeEnv(n.text) {
			return false, "read assigns " + n.src + ", which could change how later commands run"
		}
	}
	return true, ""
}

func judgeFile(_ *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "bcCdEhiklLNprsSvz0", shortVal: "efFmP",
		longBool: []string{"compile", "brief", "checking-printout", "debug", "keep-going", "list", "mime", "mime-type", "mime-encoding",
			"no-buffer", "no-dereference", "dereference", "no-pad", "preserve-date", "raw", "special-files", "uncompress", "uncompress-noreport", "print0", "help", "version", "apple", "extension"},
		longVal: []string{"exclude", "exclude-quiet", "files-from", "separator", "magic-file", "parameter"}}.parse(args)
	if p.has("C", "compile") {
		return false, "file -C writes a compiled magic file"
	}
	if p.why != "" {
		return false, "file: " + p.why
	}
	return true, ""
}

func judgeDate(_ *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "Ru", shortVal: "dfrs", shortOpt: "I", longBool: []string{"rfc-email", "utc", "universal", "debug", "resolution"},
		longVal: []string{"date", "file", "reference", "set", "rfc-3339"}, longOpt: []string{"iso-8601"}}.parse(args)
	if p.has("s", "set") {
		return false, "date -s sets the clock"
	}
	if p.why != "" {
		return false, "date: " + p.why
	}
	return true, ""
}

func judgeTree(c *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "adlfxqNQprugsDFviUtcCAShnJXR", shortVal: "LPIoHT",
		longVal: []string{"charset", "filelimit", "timefmt", "sort", "fromfile", "gitfile", "infofile", "hintro", "houtro"}}.parse(args)
	if o := p.values("o"); len(o) > 0 {
		c.addWrite(o[0], "tree -o", false)
		return false, "tree -o writes " + o[0].src
	}
	if p.has("R") {
		return false, "tree -R writes 00Tree.html files"
	}
	if p.why != "" {
		return false, "tree: " + p.why
	}
	return true, ""
}

// judgeFind: find is read-only without the actions that run programs,
// delete files or write lists.
func judgeFind(c *classifier, _ string, args []wordInfo) (bool, string) {
	i := 0
	for i < len(args) && args[i].lit {
		t := args[i].text
		if t == "-H" || t == "-L" || t == "-P" || strings.HasPrefix(t, "-O") {
			i++
		} else if t == "-D" {
			i += 2
		} else {
			break
		}
	}
	var starts []wordInfo
	for ; i < len(args); i++ {
		a := args[i]
		if a.lit && !a.glob && (strings.HasPrefix(a.text, "-") || a.text == "(" || a.text == "!") {
			break
		}
		starts = append(starts, a)
	}
	if len(starts) == 0 {
		starts = []wordInfo{{src: ".", text: ".", lit: true}}
	}
	for _, s := range starts {
		if !s.lit || s.glob {
			return false, "find's start " + s.src + " is only known at run time and could expand to an action"
		}
	}
	for ; i < len(args); i++ {
		a := args[i]
		if !a.lit || a.glob {
			return false, "find's " + a.src + " is only known at run time and could expand to an action"
		}
		switch a.text {
		case "-exec", "-execdir", "-ok", "-okdir":
			return false, "find " + a.text + " runs a command"
		case "-delete":
			for _, s := range starts {
				c.addWrite(s, "find -delete", true)
			}
			return false, "find -delete deletes files"
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				c.addWrite(args[i+1], "find "+a.text, false)
			}
			return false, "find " + a.text + " writes a file"
		}
	}
	return true, ""
}

func judgeSort(c *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "bcCdfghiMmnrRsuVz", shortVal: "kotST", strict: true,
		longBool: []string{"check", "ignore-leading-blanks", "dictionary-order", "ignore-case", "general-numeric-sort", "ignore-nonprinting",
			"month-sort", "human-numeric-sort", "numeric-sort", "random-sort", "reverse", "version-sort", "merge", "stable", "unique",
			"zero-terminated", "debug", "help", "version"},
		longVal: []string{"key", "output", "field-separator", "buffer-size", "temporary-directory", "compress-program",
			"files0-from", "parallel", "random-source", "batch-size", "sort"}}
	pa := p.parse(args)
	if o := pa.values("o", "output"); len(o) > 0 {
		c.addWrite(o[0], "sort -o", false)
		return false, "sort -o writes " + o[0].src
	}
	if pa.has("compress-program") {
		return false, "sort --compress-program runs a program"
	}
	if pa.why != "" {
		return false, "sort: " + pa.why
	}
	return true, ""
}

func judgeUniq(c *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "cdDiuz", shortVal: "fsw", strict: true,
		longBool: []string{"count", "repeated", "all-repeated", "ignore-case", "unique", "zero-terminated", "group", "help", "version"},
		longVal:  []string{"skip-fields", "skip-chars", "check-chars"}}.parse(args)
	if len(p.operands) > 1 {
		c.addWrite(p.operands[1], "uniq", false)
		return false, "uniq writes its output to " + p.operands[1].src
	}
	if p.why != "" {
		return false, "uniq: " + p.why
	}
	return true, ""
}

func judgeSed(c *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "nrsuzEb", shortVal: "efl", shortOpt: "i", strict: true,
		longBool: []string{"quiet", "silent", "debug", "posix", "regexp-extended", "separate", "sandbox", "unbuffered",
			"null-data", "zero-terminated", "follow-symlinks", "binary", "help", "version"},
		longVal: []string{"expression", "file", "line-length"}, longOpt: []string{"in-place"}}.parse(args)
	files := p.operands
	scripts := p.values("e", "expression")
	if len(scripts) == 0 && !p.has("f", "file") && len(files) > 0 {
		scripts, files = files[:1], files[1:]
	}
	if p.has("i", "in-place") {
		for _, f := range files {
			c.addWrite(f, "sed -i", false)
		}
		return false, "sed -i edits files in place"
	}
	if p.why != "" {
		return false, "sed: " + p.why
	}
	if p.has("f", "file") {
		return false, "sed -f reads a script that cannot be judged"
	}
	for _, s := range scripts {
		if !s.lit {
			return false, "the sed script " + s.src + " is only known at run time"
		}
		if why := sedScriptWhy(s.text); why != "" {
			return false, "sed script " + s.src + ": " + why
		}
	}
	return true, ""
}

// judgeRg: ripgrep is read-only except --pre (runs a program on each file)
// and --hostname-bin.
func judgeRg(_ *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortVal: "ABCefgjmMrtTEd"}.parse(args)
	for _, o := range p.opts {
		if len(o.name) < 2 {
			continue
		}
		// Prefixes too, in case abbreviations are accepted (--pr).
		if o.name == "pre" || strings.HasPrefix("pre", o.name) ||
			strings.HasPrefix(o.name, "hostname-bin") || strings.HasPrefix("hostname-bin", o.name) {
			return false, "rg --" + o.name + " runs a program"
		}
	}
	if p.why != "" {
		return false, "rg: " + p.why
	}
	return true, ""
}

// judgeEnv: env alone prints the environment; env NAME=V cmd runs cmd.
func judgeEnv(c *classifier, _ string, args []wordInfo) (bool, string) {
	i := 0
	chdir := false
loop:
	for i < len(args) {
		a := args[i]
		if !a.lit || a.glob {
			return false, "env's " + a.src + " is only known at run time"
		}
		t := a.text
		switch {
		case t == "-i" || t == "--ignore-environment" || t == "-0" || t == "--null" || t == "-":
			i++
		case t == "-u" || t == "--unset":
			i += 2
		case strings.HasPrefix(t, "--unset=") || strings.HasPrefix(t, "-u"):
			i++
		case t == "--":
			i++
			break loop
		case t == "-S" || t == "--split-string" || strings.HasPrefix(t, "-S") || strings.HasPrefix(t, "--split-string="):
			// The string is split into the command and its arguments.
			v, ok := strings.CutPrefix(t, "--split-string=")
			if !ok {
				v = strings.TrimPrefix(t, "-S")
			}
			if v == "" && i+1 < len(args) {
				v = args[i+1].text
			}
			if c.depth < maxNesting {
				c.sub(v).parseAndWalk(v)
			}
			return false, "env " + t + " splits a string into a command"
		case t == "-C" || t == "--chdir" || strings.HasPrefix(t, "--chdir="):
			c.a.ChangesDir = true
			if !strings.Contains(t, "=") {
				i++
			}
			i++
			chdir = true
		case strings.HasPrefix(t, "-"):
			judgeInner(c, firstCommand(args[i+1:])) // still seen by the hard protections
			return false, "env " + t + " is not judged"
		case strings.Contains(t, "="):
			name, v, _ := strings.Cut(t, "=")
			c.shellCodeVar(name, wordInfo{src: v, text: v, lit: true})
			if !lowerIdent(name) && !safeEnv(name) {
				judgeInner(c, args[i+1:]) // still seen by the hard protections
				return false, "env sets " + name + ", which could change what a command runs"
			}
			i++
		default:
			break loop
		}
	}
	if i < len(args) {
		judgeInner(c, args[i:])
	}
	if chdir {
		return false, "env -C runs the command in another directory"
	}
	return true, ""
}

// firstCommand skips leading options and assignments: a best guess at the
// command a wrapper with options it does not understand runs.
func firstCommand(args []wordInfo) []wordInfo {
	for i, a := range args {
		if a.lit && !strings.HasPrefix(a.text, "-") && !strings.Contains(a.text, "=") {
			return args[i:]
		}
	}
	return nil
}

// judgeInner records the command a wrapper runs as a Part of its own.
func judgeInner(c *classifier, words []wordInfo) {
	if len(words) == 0 {
		return
	}
	sub := *c
	sub.depth++
	sub.command(joinSrc(words), words)
}

// judgeWrapper: command, builtin, exec, nice, nohup, timeout, stdbuf and
// time run another command; they are as read-only as it is.
func judgeWrapper(c *classifier, name string, args []wordInfo) (bool, string) {
	var spec optSpec
	skip := 0 // operands before the command (timeout's duration)
	switch name {
	case "command":
		spec = optSpec{shortBool: "pvV", posix: true, strict: true}
	case "builtin", "nohup":
		spec = optSpec{posix: true, strict: true}
	case "exec":
		spec = optSpec{shortBool: "cl", shortVal: "a", posix: true, strict: true}
	case "nice":
		spec = optSpec{shortVal: "n", longVal: []string{"adjustment"}, posix: true, strict: true}
		if len(args) > 0 && args[0].lit && len(args[0].text) > 1 && args[0].text[0] == '-' && strings.Trim(args[0].text[1:], "0123456789") == "" {
			args = args[1:] // nice -10 cmd
		}
	case "timeout":
		spec = optSpec{shortBool: "v", shortVal: "sk", longBool: []string{"preserve-status", "foreground", "verbose"},
			longVal: []string{"signal", "kill-after"}, posix: true, strict: true}
		skip = 1
	case "stdbuf":
		spec = optSpec{shortVal: "ioe", longVal: []string{"input", "output", "error"}, posix: true, strict: true}
	case "time":
		spec = optSpec{shortBool: "pvaq", shortVal: "fo", longBool: []string{"portability", "verbose", "append", "quiet"},
			longVal: []string{"format", "output"}, posix: true, strict: true}
	}
	p := spec.parse(args)
	if p.why != "" {
		if len(p.operands) > skip {
			judgeInner(c, p.operands[skip:]) // still seen by the hard protections
		}
		return false, name + ": " + p.why
	}
	if name == "command" && p.has("v", "V") {
		return true, "" // command -v only prints what a name is
	}
	if o := p.values("o", "output"); name == "time" && len(o) > 0 {
		c.addWrite(o[0], "time -o", false)
		return false, "time -o writes " + o[0].src
	}
	inner := p.operands
	if len(inner) < skip {
		return true, ""
	}
	judgeInner(c, inner[skip:])
	return true, ""
}

// judgeXargs: xargs runs a command with arguments read from its input,
// which are unknown: only a command that is read-only with any arguments
// stays read-only.
func judgeXargs(c *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "0rtpxo", shortVal: "adEILnPs", shortOpt: "eil", posix: true, strict: true,
		longBool: []string{"null", "no-run-if-empty", "verbose", "interactive", "exit", "open-tty", "show-limits"},
		longVal:  []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"},
		longOpt:  []string{"eof", "replace", "max-lines"}}.parse(args)
	if p.why != "" {
		if len(p.operands) > 0 {
			judgeInner(c, append(append([]wordInfo(nil), p.operands...), dynamic("<arguments from input>")))
		}
		return false, "xargs: " + p.why
	}
	if p.has("process-slot-var") {
		return false, "xargs --process-slot-var sets a variable"
	}
	inner := p.operands
	if len(inner) == 0 {
		return true, "" // runs echo
	}
	if repl := p.values("I", "i", "replace"); len(repl) > 0 || p.has("i", "replace") {
		marker := "{}"
		if len(repl) > 0 && repl[0].lit && repl[0].text != "" {
			marker = repl[0].text
		}
		inner = append([]wordInfo(nil), inner...)
		for i := 1; i < len(inner); i++ {
			if strings.Contains(inner[i].text, marker) {
				inner[i] = dynamic(inner[i].src)
			}
		}
	}
	judgeInner(c, append(append([]wordInfo(nil), inner...), dynamic("<arguments from input>")))
	return true, ""
}

// judgeShell: bash -c 'script' is judged as the script; a shell reading a
// file or its input runs code that cannot be seen. A script is walked even
// when an option makes the shell not read-only, so its writes still meet
// the hard protections.
func judgeShell(c *classifier, name string, args []wordInfo) (bool, string) {
	i := 0
	hasC := false
	refuse := ""
	no := func(why string) {
		if refuse == "" {
			refuse = why
		}
	}
	for i < len(args) {
		a := args[i]
		if !a.lit || !strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "+") || a.text == "-" || a.text == "--" {
			break
		}
		t := a.text
		switch {
		case t == "--norc" || t == "--noprofile" || t == "--posix" || t == "--login" || t == "--noediting":
		case t == "--rcfile" || t == "--init-file":
			no(name + " " + t + " runs a file that cannot be seen")
			i++
		case strings.HasPrefix(t, "--"):
			no(name + " " + t + " is not judged")
		default:
			for _, ch := range t[1:] {
				switch ch {
				case 'c':
					hasC = true
				// Not -k: it makes NAME=value words anywhere in a command
				// environment assignments (cat LD_PRELOAD=./x.so).
				case 'e', 'u', 'x', 'v', 'l', 'f', 'h', 'B', 'C', 'H', 'P', 'T', 'a', 'b', 'm', 'n', 't':
				case 'o', 'O':
					// The option name follows; only names that change
					// neither word parsing nor globbing (keyword, dotglob…).
					i++
					if i >= len(args) || !args[i].lit || !safeShellOption(ch, args[i].text) {
						no(name + " " + t + " " + wordSrc(args, i) + " changes how the script is parsed or expanded")
					}
				default:
					no(name + " " + t + " is not judged")
				}
			}
		}
		i++
	}
	if !hasC {
		return false, name + " runs a script that cannot be seen"
	}
	if i < len(args) && args[i].lit && args[i].text == "--" {
		i++
	}
	if i >= len(args) {
		return false, name + " -c without a command"
	}
	script := args[i]
	if !script.lit {
		return false, "the script given to " + name + " -c is only known at run time"
	}
	if c.depth >= maxNesting {
		return false, "nests shells too deeply to judge"
	}
	c.sub(script.text).parseAndWalk(script.text)
	if refuse != "" {
		return false, refuse
	}
	return true, ""
}

// safeShellOption: set -o and shopt names a judged shell may be started
// with. keyword, dotglob, globstar, nocaseglob, expand_aliases and the like
// change what the words of the script mean, so they are not here.
func safeShellOption(flag rune, opt string) bool {
	if flag == 'o' {
		switch opt {
		case "errexit", "nounset", "pipefail", "xtrace", "verbose", "noclobber", "noglob", "posix", "noexec":
			return true
		}
		return false
	}
	switch opt {
	case "nullglob", "failglob", "extglob", "inherit_errexit", "lastpipe":
		return true
	}
	return false
}

func wordSrc(args []wordInfo, i int) string {
	if i < len(args) {
		return args[i].src
	}
	return "(missing)"
}

// judgeEval: eval joins its arguments and runs them as a script.
func judgeEval(c *classifier, _ string, args []wordInfo) (bool, string) {
	s := make([]string, len(args))
	for i, a := range args {
		if !a.lit || a.glob {
			return false, "eval of " + a.src + ", which is only known at run time"
		}
		s[i] = a.text
	}
	if c.depth >= maxNesting {
		return false, "nests eval too deeply to judge"
	}
	script := strings.Join(s, " ")
	c.sub(script).parseAndWalk(script)
	return true, ""
}

// judgeDeferred walks the scripts alias definitions and traps hold.
func judgeDeferred(c *classifier, name string, args []wordInfo) {
	for i, a := range args {
		if !a.lit {
			c.a.Writes = append(c.a.Writes, Write{Text: a.src, By: name})
			continue
		}
		script := a.text
		if name == "alias" {
			_, v, ok := strings.Cut(a.text, "=")
			if !ok {
				continue
			}
			script = v
		} else if i > 0 || strings.HasPrefix(a.text, "-") {
			continue // trap's signal names
		}
		if c.depth < maxNesting {
			c.sub(script).parseAndWalk(script)
		}
	}
}

// makesLinks: the command can create a symlink or hard link, so a later
// write of the same line may go through one: ln; cp that copies links as
// links; archive and patch tools; git commands that write the work tree.
// (mv makes a link only when it moves one; the policy checks its sources
// on disk.)
func makesLinks(name string, args []wordInfo) bool {
	switch name {
	case "ln", "tar", "unzip", "cpio", "rsync", "patch", "bsdtar", "7z":
		return true
	case "cp":
		for _, a := range args {
			if !a.lit {
				return true
			}
			t := a.text
			if strings.HasPrefix(t, "--") {
				switch strings.SplitN(t, "=", 2)[0] {
				case "--archive", "--link", "--symbolic-link", "--no-dereference", "--recursive", "--preserve":
					return true
				}
			} else if strings.HasPrefix(t, "-") && strings.ContainsAny(t[1:], "aslrRdP") {
				return true
			}
		}
	case "git":
		for _, a := range args {
			if !a.lit {
				return true
			}
			switch a.text {
			case "checkout", "switch", "restore", "reset", "clone", "pull", "merge", "rebase", "cherry-pick", "revert", "stash",
				"am", "apply", "worktree", "submodule", "read-tree", "checkout-index":
				return true
			}
		}
	}
	return false
}

// skipSudoOptions returns the command sudo/doas would run, or nil when the
// options are not understood.
func skipSudoOptions(args []wordInfo) []wordInfo {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			return nil
		}
		switch t := a.text; {
		case t == "--":
			return args[i+1:]
		case !strings.HasPrefix(t, "-"):
			return args[i:]
		case len(t) == 2 && strings.ContainsRune("ugpCUTrtDhc", rune(t[1])):
			i++
		case strings.HasPrefix(t, "--"):
			if !strings.Contains(t, "=") && (t == "--user" || t == "--group" || t == "--prompt" || t == "--chdir" || t == "--close-from" || t == "--role" || t == "--type" || t == "--other-user" || t == "--host") {
				i++
			}
		}
	}
	return nil
}

// writerTargets returns what a known file-writing command writes. It is
// used for the hard protections (outside the project, .git, the store),
// which hold in every mode.
func writerTargets(name string, args []wordInfo) []Write {
	var out []Write
	add := func(w wordInfo, by string, tree bool) *Write {
		if w.lit && (w.text == "-" || harmlessTarget(w.text)) {
			return &Write{} // stdout, /dev/null: nothing to record
		}
		wr := Write{Text: w.src, By: by, Tree: tree}
		if w.lit {
			wr.Path, wr.Glob = w.text, w.glob
		}
		out = append(out, wr)
		return &out[len(out)-1]
	}
	switch name {
	case "rm", "rmdir", "unlink", "shred":
		p := optSpec{shortVal: "ns", longVal: []string{"iterations", "size", "random-source"}}.parse(args)
		if name == "rm" || name == "rmdir" {
			p = optSpec{}.parse(args)
		}
		for _, o := range p.operands {
			add(o, name, name == "rm" || name == "rmdir").Link = name != "shred"
		}
	case "mv", "cp", "ln", "install":
		spec := optSpec{shortVal: "tS", longVal: []string{"target-directory", "suffix", "backup", "reflink", "sparse", "preserve", "no-preserve", "context"}}
		if name == "install" {
			spec.shortVal = "gmotS"
			spec.longVal = append(spec.longVal, "group", "mode", "owner", "strip-program")
		}
		p := spec.parse(args)
		if name == "install" && p.has("d", "directory") {
			for _, o := range p.operands {
				add(o, name, false)
			}
			break
		}
		srcs := p.operands
		var dest wordInfo
		if t := p.values("t", "target-directory"); len(t) > 0 {
			dest = t[0]
		} else if len(srcs) >= 2 {
			dest, srcs = srcs[len(srcs)-1], srcs[:len(srcs)-1]
		} else {
			break
		}
		if name == "mv" {
			for _, s := range srcs {
				add(s, "mv (source)", true).Link = true
			}
		}
		d := add(dest, name, false)
		if !p.has("T", "no-target-directory") {
			for _, s := range srcs {
				if !s.lit || s.glob {
					d.ChildUnknown = true
					continue
				}
				d.Children = append(d.Children, path.Base(strings.TrimRight(s.text, "/")))
			}
		}
	case "touch", "mkdir", "tee", "truncate":
		spec := map[string]optSpec{
			"touch":    {shortVal: "dtr", longVal: []string{"date", "reference", "time"}},
			"mkdir":    {shortVal: "m", longVal: []string{"mode", "context"}},
			"tee":      {longBool: []string{"append", "ignore-interrupts", "output-error"}},
			"truncate": {shortVal: "sr", longVal: []string{"size", "reference"}},
		}[name]
		for _, o := range spec.parse(args).operands {
			add(o, name, false)
		}
	case "chmod", "chown", "chgrp":
		recursive, ref := false, false
		var ops []wordInfo
		for _, a := range args {
			switch {
			case a.lit && (a.text == "-R" || a.text == "--recursive"):
				recursive = true
			case a.lit && strings.HasPrefix(a.text, "--reference="):
				ref = true
			case a.lit && (a.text == "-v" || a.text == "-f" || a.text == "-c" || a.text == "-h" || a.text == "-H" || a.text == "-L" || a.text == "-P" ||
				a.text == "--" || strings.HasPrefix(a.text, "--") && a.text != "--reference"):
			default:
				ops = append(ops, a)
			}
		}
		if !ref && len(ops) > 0 {
			ops = ops[1:] // the mode or owner
		}
		for _, o := range ops {
			add(o, name, recursive)
		}
	case "dd":
		for _, a := range args {
			if !a.lit {
				if strings.Contains(a.src, "of=") {
					add(a, "dd", false)
				}
				continue
			}
			if v, ok := strings.CutPrefix(a.text, "of="); ok {
				add(wordInfo{src: a.src, text: v, lit: true}, "dd", false)
			}
		}
	case "rsync":
		if p := (optSpec{shortVal: "efT", longVal: []string{"rsh", "rsync-path", "filter", "exclude", "include", "exclude-from", "include-from",
			"files-from", "temp-dir", "compare-dest", "copy-dest", "link-dest", "backup-dir", "suffix", "chmod", "chown", "usermap", "groupmap",
			"log-file", "out-format", "password-file", "partial-dir", "timeout", "contimeout", "port", "sockopts", "bwlimit", "max-size", "min-size"}}).parse(args); len(p.operands) >= 2 {
			add(p.operands[len(p.operands)-1], "rsync", true).ChildUnknown = true
		}
	case "tar", "bsdtar", "unzip", "cpio", "7z":
		// Extraction writes names from the archive into a directory.
		dir := wordInfo{src: ".", text: ".", lit: true}
		for i, a := range args {
			switch {
			case (a.text == "-C" || a.text == "--directory" || a.text == "-d" && name == "unzip" || a.text == "-D" && name == "cpio") && i+1 < len(args):
				dir = args[i+1]
			case strings.HasPrefix(a.text, "--directory="):
				dir = wordInfo{src: a.src, text: strings.TrimPrefix(a.text, "--directory="), lit: a.lit}
			case strings.HasPrefix(a.text, "-o") && name == "7z" && len(a.text) > 2:
				dir = wordInfo{src: a.src, text: a.text[2:], lit: a.lit}
			}
		}
		add(dir, name, false).ChildUnknown = true
	case "patch":
		dir := wordInfo{src: ".", text: ".", lit: true}
		p := optSpec{shortVal: "BdDFgiopPrVxYz", longVal: []string{"directory", "output", "input", "reject-file", "strip", "prefix",
			"basename-prefix", "suffix", "backup-if-mismatch", "define", "fuzz", "get", "quoting-style", "version-control", "read-only"}}.parse(args)
		if d := p.values("d", "directory"); len(d) > 0 {
			dir = d[0]
		}
		if o := p.values("o", "output"); len(o) > 0 {
			add(o[0], "patch -o", false)
		}
		if len(p.operands) > 0 {
			add(p.operands[0], "patch", false)
		}
		add(dir, "patch", false).ChildUnknown = true
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "zstd", "unzstd", "compress", "uncompress", "lz4":
		// Each file is replaced by its (de)compressed twin next to it.
		for _, o := range (optSpec{shortVal: "S", longVal: []string{"suffix"}}).parse(args).operands {
			add(o, name, false)
		}
	case "sqlite3":
		if ops := (optSpec{longVal: []string{"cmd", "init", "separator", "newline", "nullvalue", "vfs", "lookaside", "pagecache", "mmap", "maxsize"}}).parse(args).operands; len(ops) > 0 {
			add(ops[0], "sqlite3", false)
		}
	case "split", "csplit":
		p := optSpec{shortVal: "abClnNtf", longVal: []string{"bytes", "line-bytes", "lines", "number", "separator", "suffix-length",
			"additional-suffix", "filter", "prefix", "digits", "suffix-format"}}.parse(args)
		prefix := wordInfo{src: "x", text: "x", lit: true}
		if f := p.values("f", "prefix"); len(f) > 0 {
			prefix = f[0]
		} else if name == "split" && len(p.operands) > 1 {
			prefix = p.operands[1]
		}
		add(prefix, name, false)
	case "curl", "wget":
		for i, a := range args {
			if a.lit && (name == "curl" && (a.text == "-K" || strings.HasPrefix(a.text, "--config")) ||
				name == "wget" && (a.text == "-e" || strings.HasPrefix(a.text, "--execute") || a.text == "-i" || strings.HasPrefix(a.text, "--input-file"))) {
				// A config file or wgetrc command can name any output file.
				out = append(out, Write{Text: a.src + " " + wordSrc(args, i+1), By: name + " " + a.text})
			}
			if name == "wget" && a.lit && (a.text == "-x" || a.text == "-r" || a.text == "-m" || a.text == "--force-directories" ||
				a.text == "--recursive" || a.text == "--mirror" || strings.HasPrefix(a.text, "-nH") || a.text == "--no-host-directories") {
				// Names and directories come from the server.
				add(wordInfo{src: ".", text: ".", lit: true}, "wget "+a.text, false).ChildUnknown = true
			}
		}
		for i := 0; i < len(args); i++ {
			a := args[i]
			if !a.lit {
				continue
			}
			t := a.text
			var flags []string
			if name == "curl" {
				flags = []string{"-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--libcurl", "--etag-save", "--output-dir"}
			} else {
				flags = []string{"-O", "--output-document", "-o", "--output-file", "-a", "--append-output", "-P", "--directory-prefix"}
			}
			for _, f := range flags {
				switch {
				case t == f && i+1 < len(args):
					add(args[i+1], name+" "+f, strings.HasSuffix(f, "dir") || strings.HasSuffix(f, "prefix") || f == "-P")
				case strings.HasPrefix(f, "--") && strings.HasPrefix(t, f+"="):
					v := t[len(f)+1:]
					add(wordInfo{src: a.src, text: v, lit: true}, name+" "+f, false)
				case len(f) == 2 && strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && len(t) > 2 && strings.HasSuffix(t, f[1:]) && i+1 < len(args):
					add(args[i+1], name+" "+t, false) // -sSLo file
				}
			}
		}
	}
	return out
}

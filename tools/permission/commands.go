package permission

import (
	"regexp"
	"strings"
	"sync"
)

// The read-only list. A command not named here is never read-only: cargo
// (even cargo tree and metadata: .cargo/config.toml can name the compiler),
// npm, yarn, pnpm, make, go test and generate, pytest, tox, gradle and the
// like run the project's own configuration or code.

// readAnything are commands with no option that writes a file or runs a
// program: any arguments are fine, even ones only known at run time.
const readAnything = " ls cat head tail wc pwd echo true false : which type stat du df grep egrep fgrep cut tr diff cmp " +
	"basename dirname realpath readlink nl tac rev paste join comm fold expand unexpand column od hexdump strings base64 " +
	"md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum whoami id groups uname printenv sleep seq expr " +
	"nproc arch uptime locale jq "

// readWithout are read-only unless an option (short letters, long names)
// writes a file or runs a program. date -s needs a capability commands
// never have.
var readWithout = map[string][2]string{"sort": {"o", "output compress-program"}, "tree": {"oR", "output"},
	"file": {"C", "compile"}, "date": {"", "set"}, "rg": {"", "pre hostname-bin"}, "gofmt": {"w", "cpuprofile"}}

// judged are the other commands the list knows, each judged below.
const judged = " cd pushd popd dirs printf test [ read find uniq sed git go env command builtin exec nice nohup timeout stdbuf time xargs bash sh dash eval "

// IsReadOnlyCommand reports whether a command can ever be judged read-only.
func IsReadOnlyCommand(name string) bool {
	_, without := readWithout[name]
	return without || strings.Contains(readAnything+judged, " "+name+" ")
}

// judge decides whether one command is read-only, records what it writes
// and judges the commands it runs.
func (c *classifier) judge(name string, args []wordInfo) (bool, string) {
	ro, why := true, ""
	switch name {
	case "cd", "pushd", "popd", "dirs":
		c.a.ChangesDir = true
		return true, ""
	case "printf":
		if len(args) > 0 && (!args[0].lit || strings.HasPrefix(args[0].text, "-v")) {
			return false, "printf -v assigns a variable"
		}
		return true, ""
	case "test", "[":
		if hasWord(args, "-v") || hasWord(args, "-R") {
			return false, name + " -v evaluates array subscripts"
		}
		return true, ""
	case "read":
		for _, a := range args {
			if !a.lit || !strings.HasPrefix(a.text, "-") && !safeName(a.text) {
				return false, "read assigns " + a.src + ", which could change how later commands run"
			}
		}
		return true, ""
	case "env", "command", "builtin", "exec", "nice", "nohup", "timeout", "stdbuf", "time", "xargs", "sudo", "doas", "su", "pkexec", "runuser":
		return c.wrapper(name, args)
	case "bash", "sh", "dash":
		return c.shell(name, args)
	case "eval":
		if d := firstDynamic(args); d != "" {
			return false, "eval of " + d + ", which is only known at run time"
		}
		c.nested(joinWords(args, false))
		return true, ""
	case "git":
		ro, why = c.git(args)
	case "go":
		ro, why = c.goCommand(args)
	case "sed":
		ro, why = c.sed(args)
	case "find":
		ro, why = c.find(args)
	case "uniq":
		if ops := operands(args); len(ops) > 1 {
			c.addWrite(ops[1], "uniq", false)
			return false, "uniq writes its output to " + ops[1].src
		}
	default:
		if strings.Contains(readAnything, " "+name+" ") {
			return true, ""
		}
		c.writers(name, args)
		opts, ok := readWithout[name]
		if !ok {
			return false, ""
		}
		if found, _ := opt(args, opts[0], strings.Fields(opts[1])...); found {
			return false, name + " with an option that writes a file or runs a program"
		}
	}
	if d := firstDynamic(args); ro && d != "" {
		return false, name + ": " + d + " is only known at run time and could expand to an option"
	}
	return ro, why
}

// pureFlags are the commands that only print their arguments or the files
// named, with the option letters that change only the format.
var pureFlags = map[string]string{"ls": "aAlhRtSr1dFpgGinosuUvxXcC", "pwd": "LP", "cat": "AbeEnstTuv", "head": "nqcv0123456789",
	"tail": "nqcv0123456789", "wc": "lwcmL", "echo": "", "true": "", "false": ""}

func pureCommand(name string, args []wordInfo) bool {
	flags, ok := pureFlags[name]
	for _, a := range args {
		// Any pattern character keeps the line in the sandbox, even one bash
		// would take literally (a "[" with no "]"): it runs unsandboxed only
		// when no reading of the word can name other files.
		ok = ok && a.lit && !a.glob && !strings.ContainsAny(a.text, "*?[") && (name == "echo" || !strings.HasPrefix(a.text, "-") || a.text == "-" || strings.Trim(a.text[1:], flags) == "")
	}
	return ok
}

// wrapper judges the commands that run another command: as read-only as
// the command they run, with their own options understood. An option not
// understood asks; the command is still judged for what it writes.
func (c *classifier) wrapper(name string, args []wordInfo) (bool, string) {
	// Options that take the next word as their value, and options without.
	vals := map[string]string{"env": " -u --unset ", "nice": " -n --adjustment ", "timeout": " -s --signal -k --kill-after ",
		"stdbuf": " -i -o -e ", "xargs": " -n --max-args -P --max-procs -d --delimiter -s --max-chars -a --arg-file -I ",
		"exec": " -a ", "time": " -f --format ", "doas": " -u -C ", "su": " -s --shell -g --group -G --supp-group -w ",
		"sudo":    " -u --user -g --group -p --prompt -C --close-from -D --chdir -h --host -r --role -t --type -U --other-user -T ",
		"runuser": " -u --user -s --shell -g --group -G --supp-group -w "}[name]
	known := map[string]string{"env": " -i --ignore-environment -0 --null - ", "command": " -p -v -V ", "time": " -p -a --append -v --verbose -q --quiet ",
		"timeout": " --preserve-status --foreground -v --verbose ", "xargs": " -0 --null -r --no-run-if-empty -t --verbose -x --exit ",
		"exec": " -c -l ", "sudo": " -E -H -n -S -b -i -s -k -P ", "su": " - -l --login -m -p ", "runuser": " - -l --login -m -p "}[name]
	i, why := 0, ""
loop:
	for ; i < len(args); i++ {
		a := args[i]
		t, v, eq := strings.Cut(a.text, "=")
		switch {
		case !a.lit || a.glob:
			why = name + "'s " + a.src + " is only known at run time"
			break loop
		case t == "--":
			i++
			break loop
		case name == "env" && eq && !strings.HasPrefix(t, "-"):
			if !safeName(t) {
				why = "env sets " + t + ", which could change what a command runs"
			}
		case name == "env" && (t == "-C" || t == "--chdir"), name == "time" && (t == "-o" || t == "--output"):
			if !eq && i+1 < len(args) {
				i++
				v = args[i].text
			}
			if name == "env" {
				c.a.ChangesDir, why = true, "env -C runs the command in another directory"
			} else {
				c.addWrite(wordInfo{src: v, text: v, lit: true}, "time -o", false)
				why = "time -o writes a file"
			}
		case !strings.HasPrefix(t, "-"):
			break loop
		case strings.Contains(vals, " "+t+" ") && !eq:
			i++
		case strings.Contains(vals+known, " "+t+" "), name == "nohup", name == "stdbuf" && len(t) > 2, name == "xargs" && (strings.HasPrefix(t, "-i") || t == "--replace"):
		default:
			inner := firstCommand(args[i:])
			if name == "timeout" && len(inner) > 1 {
				inner = inner[1:] // the duration
			}
			c.inner(inner, name == "xargs")
			return false, name + " " + t + " is not judged"
		}
	}
	rest := args[min(i, len(args)):]
	if name == "timeout" && len(rest) > 0 {
		rest = rest[1:] // the duration
	}
	if name == "xargs" && len(rest) == 0 {
		return why == "", why // runs echo
	}
	c.inner(rest, name == "xargs")
	if strings.Contains(" sudo doas su pkexec runuser ", " "+name+" ") {
		return false, name + " runs a command as another user"
	}
	return why == "", why
}

// inner records the command a wrapper runs as a Part of its own; xargs adds
// arguments only known when it runs.
func (c *classifier) inner(words []wordInfo, more bool) {
	if more {
		words = append(append([]wordInfo(nil), words...), unknown("<arguments from input>"))
	}
	sub := *c
	sub.depth++
	sub.command(joinWords(words, true), words)
	c.pure = false
}

// firstCommand skips options and assignments: a best guess at the command
// a wrapper with options it does not understand runs.
func firstCommand(args []wordInfo) []wordInfo {
	for i, a := range args {
		if a.lit && !strings.HasPrefix(a.text, "-") && !strings.Contains(a.text, "=") {
			return args[i:]
		}
	}
	return nil
}

// shell judges bash -c 'script' as the script; a shell that reads a file or
// its input runs code that cannot be seen. Only -c, -e, -u, -x, -v and -o
// of a few names are understood: -k makes NAME=value words assignments,
// -O dotglob changes globbing.
func (c *classifier) shell(name string, args []wordInfo) (bool, string) {
	why, script := "", -1
	for i := 0; i < len(args) && script < 0 && args[i].lit && strings.HasPrefix(args[i].text, "-") && args[i].text != "-"; i++ {
		t := args[i].text
		switch {
		case t == "--":
			script = i + 1
		case t == "--norc" || t == "--noprofile":
		case strings.HasPrefix(t, "--"):
			why = name + " " + t + " is not judged"
			if t == "--rcfile" || t == "--init-file" {
				i++
			}
		default:
			if strings.Trim(t[1:], "ceuxvoO") != "" {
				why = name + " " + t + " is not judged"
			}
			if strings.ContainsAny(t, "oO") {
				if i++; i >= len(args) || t != "-o" || !strings.Contains(" errexit nounset pipefail xtrace ", " "+args[i].text+" ") {
					why = name + " " + t + " changes how the script is read"
				}
			}
			if strings.Contains(t, "c") {
				script = i + 1
			}
		}
	}
	if script < 0 || script >= len(args) || !args[script].lit {
		return false, name + " runs a script that cannot be seen or is only known at run time"
	}
	c.nested(args[script].text)
	return why == "", why
}

// find is read-only without the actions that run programs, delete files or
// write lists.
func (c *classifier) find(args []wordInfo) (bool, string) {
	var starts []wordInfo
	for i, a := range args {
		switch a.text {
		case "-exec", "-execdir", "-ok", "-okdir":
			return false, "find " + a.text + " runs a command"
		case "-delete":
			for _, s := range append(starts, wordInfo{src: ".", text: ".", lit: true})[:max(1, len(starts))] {
				c.addWrite(s, "find -delete", true)
			}
			return false, "find -delete deletes files"
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				c.addWrite(args[i+1], "find "+a.text, false)
			}
			return false, "find " + a.text + " writes a file"
		}
		if len(starts) == i && !strings.HasPrefix(a.text, "-") && a.text != "(" && a.text != "!" {
			starts = append(starts, a)
		}
	}
	return true, ""
}

// sed is read-only without -i and -f and with scripts that only print or
// edit the stream (sedPrint).
func (c *classifier) sed(args []wordInfo) (bool, string) {
	ops := operands(args)
	_, scripts := opt(args, "e", "expression")
	for _, s := range scripts {
		ops = removeWord(ops, s)
	}
	if len(scripts) == 0 && len(ops) > 0 {
		scripts, ops = ops[:1], ops[1:]
	}
	if inPlace, _ := opt(args, "i", "in-place"); inPlace {
		for _, f := range ops {
			c.addWrite(f, "sed -i", false)
		}
		return false, "sed -i edits files in place"
	}
	if fromFile, _ := opt(args, "f", "file"); fromFile {
		return false, "sed -f reads a script that cannot be judged"
	}
	for _, s := range scripts {
		if !s.lit || !sedPrint().MatchString(s.text) {
			return false, "the sed script " + s.src + " is not one that only prints (w, W, e and s///w write files or run commands)"
		}
	}
	return true, ""
}

// sedPrint matches sed scripts made of addresses, blocks and the commands
// p d q Q = n N P D g G h H x l z, s/…/…/ (slash delimiters, flags g p i I
// m and numbers) and y/…/…/.
var sedPrint = sync.OnceValue(func() *regexp.Regexp {
	re := `/([^/\\\n]|\\.)*/`
	addr := `(\d+(~\d+)?|\$|` + re + `[IM]*)`
	cmd := `([pdqQ=nNPDgGhHxlz{}]|s` + re + `([^/\\\n]|\\.)*/[gpiIm0-9]*|y` + re + `([^/\\\n]|\\.)*/)`
	return regexp.MustCompile(`^([\s;]*(` + addr + `(\s*,\s*(` + addr + `|[+~]\d+))?\s*!?\s*)?` + cmd + `)*[\s;]*$`)
})

// operands are the words that are not options (all after "--").
func operands(args []wordInfo) []wordInfo {
	var out []wordInfo
	for i, a := range args {
		if a.lit && a.text == "--" {
			return append(out, args[i+1:]...)
		}
		if !a.lit || !strings.HasPrefix(a.text, "-") || a.text == "-" {
			out = append(out, a)
		}
	}
	return out
}

// opt finds an option: one of the short letters in a cluster (-no v, -ov),
// or a long name or a prefix of it of two letters or more (getopt and git
// accept --out), and returns the values given to it (attached or the next
// word; for an option without a value that word means nothing).
func opt(args []wordInfo, short string, longs ...string) (found bool, vals []wordInfo) {
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if t == "--" {
			break
		}
		attached, has, match := "", false, false
		if n, ok := strings.CutPrefix(t, "--"); ok {
			n, attached, has = strings.Cut(n, "=")
			for _, l := range longs {
				match = match || n == l || len(n) >= 2 && strings.HasPrefix(l, n)
			}
		} else if j := strings.IndexAny(t, short); strings.HasPrefix(t, "-") && short != "" && j > 0 {
			attached, has, match = t[j+1:], j+1 < len(t), true
		}
		if !args[i].lit || !match {
			continue
		}
		found = true
		if has {
			vals = append(vals, wordInfo{src: args[i].src, text: attached, lit: true})
		} else if i+1 < len(args) {
			i++
			vals = append(vals, args[i])
		}
	}
	return found, vals
}

func removeWord(ws []wordInfo, w wordInfo) []wordInfo {
	for i, x := range ws {
		if x == w {
			return append(ws[:i:i], ws[i+1:]...)
		}
	}
	return ws
}

func hasWord(args []wordInfo, s string) bool {
	for _, a := range args {
		if a.lit && a.text == s {
			return true
		}
	}
	return false
}

// firstDynamic is the first word only known at run time, or "".
func firstDynamic(args []wordInfo) string {
	for _, a := range args {
		if !a.lit || a.glob {
			return a.src
		}
	}
	return ""
}

// joinWords joins words after quote removal, or as written.
func joinWords(words []wordInfo, src bool) string {
	s := make([]string, len(words))
	for i, w := range words {
		if s[i] = w.text; src {
			s[i] = w.src
		}
	}
	return strings.Join(s, " ")
}

// writers records what a command that is not read-only writes. Option
// values may be taken for targets too: that can only ask more.
func (c *classifier) writers(name string, args []wordInfo) {
	ops := operands(args)
	add := func(ws []wordInfo, tree bool) {
		for _, w := range ws {
			c.addWrite(w, name, tree)
		}
	}
	for _, o := range [][3]string{{"o", "output", " sort tree curl patch wget "}, {"D", "dump-header", " curl "}, {"c", "cookie-jar", " curl "},
		{"", "trace trace-ascii stderr libcurl etag-save output-dir", " curl "}, {"Oa", "output-document append-output", " wget "}, {"f", "file", " tar bsdtar "}} {
		if strings.Contains(o[2], " "+name+" ") {
			_, vals := opt(args, o[0], strings.Fields(o[1])...)
			add(vals, false)
		}
	}
	switch name {
	case "rm", "rmdir", "unlink":
		add(ops, true)
	case "shred", "touch", "mkdir", "tee", "truncate", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd",
		"lz4", "compress", "uncompress", "sqlite3", "split", "csplit", "install":
		add(ops, false)
	case "gofmt":
		if w, _ := opt(args, "w"); w {
			add(ops, true)
		}
	case "chmod", "chown", "chgrp":
		if ref, _ := opt(args, "", "reference"); len(ops) > 0 && !ref {
			ops = ops[1:] // the mode or owner
		}
		recursive, _ := opt(args, "R", "recursive")
		add(ops, recursive)
	case "mv", "cp", "ln":
		_, dest := opt(args, "t", "target-directory")
		for _, d := range dest {
			ops = removeWord(ops, d)
		}
		if len(dest) == 0 && len(ops) >= 2 {
			dest, ops = ops[len(ops)-1:], ops[:len(ops)-1]
		}
		if name == "mv" {
			add(ops, true) // the sources go
		}
		add(dest, false)
	case "dd":
		for _, a := range args {
			if v, ok := strings.CutPrefix(a.text, "of="); ok || !a.lit && strings.Contains(a.src, "of=") {
				c.addWrite(wordInfo{src: a.src, text: v, lit: a.lit}, name, false)
			}
		}
	}
	if d, ok := map[string]string{"tar": "C", "bsdtar": "C", "unzip": "d", "cpio": "D", "7z": "o", "rsync": ""}[name]; ok {
		_, dirs := opt(args, d, "directory")
		if name == "rsync" && len(ops) >= 2 {
			dirs = ops[len(ops)-1:]
		}
		add(dirs, name == "rsync") // extraction writes there
	}
}

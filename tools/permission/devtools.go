package permission

import "strings"

// Version control and build tools. Their flags are judged against an
// allowlist: each of them has flags that run programs (-toolexec, -exec,
// -c core.pager=…, --upload-pack) or write files (-o, --output).
//
// go test, go run, go generate, cargo build/check/test/clippy (build
// scripts, procedural macros) and npm test run the project's own code, which
// a cloned repository or an earlier edit controls: they are not read-only.
// go build, go vet and go list compile or inspect without running it.

// gitCanonical is a git command line as rules see it: the subcommand and
// its arguments without git's global options, so that a deny rule for
// "git push *" also stops git -c x=y push, git --no-pager push and
// git -C dir push. An alias set with -c alias.NAME=VALUE is replaced by
// its value; a shell alias ("!cmd") is judged as a script of the line.
// unknown is set when an alias of the subcommand cannot be read.
func gitCanonical(c *classifier, args []wordInfo) (canonical string, unknown bool) {
	aliases := map[string]string{}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		t := a.text
		if !a.lit || !strings.HasPrefix(t, "-") {
			break
		}
		name, val, hasEq := strings.Cut(t, "=")
		switch name {
		case "-c", "--config-env":
			if !hasEq {
				if i+1 >= len(args) {
					return "", true
				}
				i++
				val, hasEq = args[i].text, args[i].lit
			}
			key, v, _ := strings.Cut(val, "=")
			if alias, ok := strings.CutPrefix(strings.ToLower(key), "alias."); ok {
				if !hasEq || name == "--config-env" {
					aliases[alias] = "\x00"
				} else {
					aliases[alias] = v
				}
			}
		case "-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--attr-source":
			if !hasEq {
				i++
			}
		}
	}
	if i >= len(args) {
		return "", false
	}
	sub := args[i]
	rest := joinText(args[i+1:])
	if !sub.lit {
		return "", true
	}
	v, ok := aliases[strings.ToLower(sub.text)]
	switch {
	case !ok:
		return strings.TrimSpace("git " + sub.text + " " + rest), false
	case v == "\x00":
		return "", true
	case strings.HasPrefix(v, "!"):
		if c.depth < maxNesting {
			c.sub(v[1:]).parseAndWalk(v[1:])
		}
		return "", false
	}
	return strings.TrimSpace("git " + v + " " + rest), false
}

func joinText(words []wordInfo) string {
	s := make([]string, len(words))
	for i, w := range words {
		s[i] = w.text
	}
	return strings.Join(s, " ")
}

func judgeGit(c *classifier, _ string, args []wordInfo) (bool, string) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !a.lit || a.glob {
			return false, "git's " + a.src + " is only known at run time"
		}
		t := a.text
		if !strings.HasPrefix(t, "-") {
			break
		}
		switch t {
		case "--no-pager", "-P", "-p", "--paginate", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
			"--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--no-lazy-fetch", "--no-advice":
		case "--version":
			return true, ""
		default:
			// -c, -C, --git-dir, --work-tree, --exec-path, --config-env:
			// settings from elsewhere can name programs git runs.
			return false, "git " + t + " points git at other settings or another repository"
		}
	}
	if i == len(args) {
		return true, "" // prints usage
	}
	sub, rest := args[i].text, args[i+1:]
	afterDashes := false
	for _, a := range rest {
		if afterDashes {
			continue // pathspecs
		}
		if !a.lit || a.glob {
			return false, "git " + sub + ": " + a.src + " is only known at run time and could expand to an option"
		}
		t := a.text
		if t == "--" {
			afterDashes = true
			continue
		}
		if long, ok := strings.CutPrefix(t, "--"); ok {
			name, val, _ := strings.Cut(long, "=")
			// git accepts any unambiguous prefix of a long option (--op for
			// --open-files-in-pager), so a prefix of a dangerous one counts.
			abbrev := func(opt string) bool { return len(name) >= 2 && strings.HasPrefix(opt, name) }
			if abbrev("output") {
				c.addWrite(wordInfo{src: a.src, text: val, lit: val != ""}, "git "+sub+" --output", false)
				return false, "git " + sub + " --output writes a file"
			}
			if abbrev("open-files-in-pager") || abbrev("upload-pack") || abbrev("receive-pack") || abbrev("exec") ||
				abbrev("ext-diff") || abbrev("textconv") || abbrev("filters") {
				return false, "git " + sub + " " + t + " runs a program"
			}
		} else if sub == "grep" && strings.HasPrefix(t, "-") && strings.Contains(t, "O") {
			return false, "git grep -O opens files in a program"
		}
	}
	switch sub {
	case "status", "log", "show", "diff", "blame", "annotate", "shortlog", "rev-parse", "rev-list", "ls-files", "ls-tree",
		"cat-file", "describe", "for-each-ref", "show-ref", "merge-base", "name-rev", "count-objects", "whatchanged",
		"range-diff", "cherry", "diff-tree", "diff-files", "diff-index", "check-ignore", "check-attr", "var", "version", "grep":
		return true, ""
	case "branch":
		return gitListing(sub, rest,
			[]string{"-a", "--all", "-r", "--remotes", "-l", "--list", "-v", "-vv", "--verbose", "--show-current", "--no-color",
				"--no-column", "-i", "--ignore-case", "--omit-empty"},
			[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--sort", "--format", "--points-at", "--abbrev", "--color", "--column"})
	case "tag":
		return gitListing(sub, rest,
			[]string{"-l", "--list", "--no-column", "-i", "--ignore-case", "--omit-empty", "--no-color"},
			[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--sort", "--format", "--points-at", "--color", "--column"})
	case "remote":
		ops := gitOperands(rest)
		if len(ops) == 0 {
			for _, a := range rest {
				if a.text != "-v" && a.text != "--verbose" {
					return false, "git remote " + a.text + " is not judged"
				}
			}
			return true, ""
		}
		// git remote show asks the remote unless -n; a URL operand is
		// contacted directly.
		if ops[0] == "get-url" || ops[0] == "show" && hasText(rest, "-n") {
			return true, ""
		}
		if ops[0] == "show" {
			return false, "git remote show contacts the remote over the network (-n does not)"
		}
	case "config":
		return gitConfig(c, rest)
	case "stash", "worktree", "notes", "reflog":
		ops := gitOperands(rest)
		if sub == "reflog" && len(ops) == 0 {
			return true, ""
		}
		if len(ops) > 0 && (ops[0] == "list" || ops[0] == "show" && sub != "worktree") {
			return true, ""
		}
	case "symbolic-ref":
		if len(gitOperands(rest)) <= 1 {
			return true, ""
		}
	}
	return false, "git " + sub + " changes the repository or talks to a remote"
}

func gitOperands(args []wordInfo) []string {
	var out []string
	for _, a := range args {
		if a.text == "--" {
			break
		}
		if !strings.HasPrefix(a.text, "-") {
			out = append(out, a.text)
		}
	}
	return out
}

// gitListing judges git branch and git tag: listing is read-only, a name
// without --list creates, and the other flags delete, move or force.
func gitListing(sub string, args []wordInfo, bools, vals []string) (bool, string) {
	list := false
	operands := 0
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if t == "--" {
			operands += len(args) - i - 1
			break
		}
		if !strings.HasPrefix(t, "-") {
			operands++
			continue
		}
		name, _, hasEq := strings.Cut(t, "=")
		switch {
		case contains(bools, name):
			list = list || name == "-l" || name == "--list"
		case contains(vals, name):
			if !hasEq && name != "--color" && name != "--column" && name != "--abbrev" {
				i++
			}
		case sub == "tag" && strings.HasPrefix(t, "-n") && strings.Trim(t[2:], "0123456789") == "":
		default:
			return false, "git " + sub + " " + t + " changes " + sub + "es"
		}
	}
	if operands > 0 && !list {
		return false, "git " + sub + " with a name creates one"
	}
	return true, ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gitConfig: reading settings is read-only; anything else writes a config
// file, which is a target of the hard protections (.git/config can name
// programs git runs).
func gitConfig(c *classifier, args []wordInfo) (bool, string) {
	read, write := false, false
	target := wordInfo{src: ".git/config", text: ".git/config", lit: true}
	ops := 0
	for i := 0; i < len(args); i++ {
		t := args[i].text
		name, _, hasEq := strings.Cut(t, "=")
		switch {
		case t == "--get" || t == "--get-all" || t == "--get-regexp" || t == "--get-urlmatch" || t == "-l" || t == "--list" ||
			t == "--get-color" || t == "--get-colorbool":
			read = true
		case t == "--show-origin" || t == "--show-scope" || t == "--name-only" || t == "--null" || t == "-z" || t == "--includes" ||
			t == "--no-includes" || t == "--bool" || t == "--int" || t == "--bool-or-int" || t == "--path" || t == "--expiry-date" ||
			t == "--local" || name == "--type" || name == "--default" || name == "--blob" || name == "--all":
		case t == "--global":
			target = wordInfo{src: "~/.gitconfig", text: "~/.gitconfig", lit: true, tilde: true}
		case t == "--system":
			target = wordInfo{src: "/etc/gitconfig", text: "/etc/gitconfig", lit: true}
		case t == "--worktree":
			target = wordInfo{src: ".git/config.worktree", text: ".git/config.worktree", lit: true}
		case name == "--file" || t == "-f":
			if hasEq {
				v := t[len("--file="):]
				target = wordInfo{src: t, text: v, lit: true}
			} else if i+1 < len(args) {
				i++
				target = args[i]
			}
		case strings.HasPrefix(t, "-"):
			write = true
		default:
			ops++
			if ops == 1 && (t == "get" || t == "list") {
				read = true
			} else if ops == 1 && (t == "set" || t == "unset" || t == "rename-section" || t == "remove-section" || t == "edit") {
				write = true
			}
		}
	}
	if read && !write {
		return true, ""
	}
	c.addWrite(target, "git config", false)
	return false, "git config changes settings in " + target.src
}

var goBoolFlags = []string{"v", "race", "short", "cover", "failfast", "benchmem", "a", "n", "x", "trimpath", "json", "m", "u", "e",
	"deps", "test", "find", "compiled", "export", "retracted", "versions", "msan", "asan", "work", "buildvcs", "modcacherw", "fullpath"}

var goValueFlags = []string{"p", "tags", "run", "skip", "bench", "benchtime", "count", "cpu", "parallel", "timeout", "shuffle",
	"fuzz", "fuzztime", "fuzzminimizetime", "list", "vet", "covermode", "coverpkg", "f", "mod"}

// goWriteFlags write the file they name.
var goWriteFlags = []string{"o", "coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace", "outputdir"}

func judgeGo(c *classifier, _ string, args []wordInfo) (bool, string) {
	if len(args) == 0 {
		return true, ""
	}
	if !args[0].lit {
		return false, "go's subcommand is only known at run time"
	}
	sub, rest := args[0].text, args[1:]
	switch sub {
	case "version":
		return goFlags(c, sub, rest, []string{"m", "v", "json"}, nil)
	case "env":
		return goFlags(c, sub, rest, []string{"json", "changed"}, nil)
	case "doc":
		return goFlags(c, sub, rest, []string{"all", "c", "cmd", "short", "src", "u"}, nil)
	case "help":
		return true, ""
	case "test":
		goFlags(c, sub, rest, goBoolFlags, goValueFlags) // for the write targets of -o, -coverprofile…
		return false, "go test builds and runs the project's tests, which are its own code"
	case "list":
		for _, a := range rest {
			if a.lit && (a.text == "-u" || a.text == "-versions" || a.text == "-retracted" || a.text == "--u") {
				return false, "go list " + a.text + " asks the module proxy over the network"
			}
		}
		return goFlags(c, sub, rest, goBoolFlags, goValueFlags)
	case "build", "vet":
		return goFlags(c, sub, rest, goBoolFlags, goValueFlags)
	case "mod":
		if len(rest) > 0 && rest[0].lit && (rest[0].text == "graph" || rest[0].text == "why" || rest[0].text == "verify") {
			return goFlags(c, "mod "+rest[0].text, rest[1:], []string{"m", "vendor", "x", "go"}, nil)
		}
	case "fmt":
		return false, "go fmt rewrites files"
	}
	return false, "go " + sub + " is not read-only"
}

// goFlags judges go's flags against the allowlist. The go command parses
// flags anywhere, so every word is checked.
func goFlags(c *classifier, sub string, args []wordInfo, bools, vals []string) (bool, string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.lit || a.glob {
			return false, "go " + sub + ": " + a.src + " is only known at run time and could expand to a flag"
		}
		t := a.text
		if !strings.HasPrefix(t, "-") || t == "-" {
			continue // packages, files
		}
		name, val, hasEq := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(t, "-"), "-"), "=")
		switch {
		case t == "--":
			return false, "go " + sub + " -- is not judged"
		case contains(bools, name):
		case contains(vals, name):
			if !hasEq {
				if i+1 >= len(args) {
					return false, "go " + sub + " -" + name + " needs a value"
				}
				i++
				val = args[i].text
				if !args[i].lit {
					val = "?"
				}
			}
			if name == "mod" && val != "readonly" && val != "vendor" {
				return false, "go " + sub + " -mod=" + val + " may change go.mod"
			}
		case contains(goWriteFlags, name):
			target := wordInfo{src: val, text: val, lit: true}
			if !hasEq && i+1 < len(args) {
				i++
				target = args[i]
			}
			if target.lit && harmlessTarget(target.text) {
				continue // -o /dev/null: only checks that it builds
			}
			c.addWrite(target, "go "+sub+" -"+name, false)
			return false, "go " + sub + " -" + name + " writes " + target.src
		case name == "c":
			return false, "go test -c writes a test binary"
		case name == "args":
			return false, "go test -args passes flags to the test binary"
		default:
			return false, "go " + sub + " -" + name + " is not on the read-only list"
		}
	}
	return true, ""
}

func judgeGofmt(c *classifier, _ string, args []wordInfo) (bool, string) {
	p := optSpec{shortBool: "ldesw", shortVal: "r", longVal: []string{"cpuprofile"}, strict: true}.parse(args)
	if p.has("w") {
		for _, o := range p.operands {
			c.addWrite(o, "gofmt -w", true)
		}
		return false, "gofmt -w rewrites files"
	}
	if p.has("cpuprofile") {
		return false, "gofmt -cpuprofile writes a file"
	}
	if p.why != "" {
		return false, "gofmt: " + p.why
	}
	return true, ""
}

func judgeCargo(_ *classifier, _ string, args []wordInfo) (bool, string) {
	if len(args) == 0 {
		return true, ""
	}
	if !args[0].lit || strings.HasPrefix(args[0].text, "+") || strings.HasPrefix(args[0].text, "-") {
		return false, "cargo " + args[0].src + " is not judged"
	}
	sub, rest := args[0].text, args[1:]
	switch sub {
	case "tree", "metadata", "fmt":
	case "check", "test", "build", "clippy", "run", "bench", "doc":
		return false, "cargo " + sub + " runs the project's build scripts and procedural macros (its own code)"
	default:
		return false, "cargo " + sub + " is not read-only"
	}
	bools := []string{"--all", "--workspace", "--lib", "--bins", "--tests", "--benches", "--examples", "--all-targets", "--release",
		"--all-features", "--no-default-features", "-q", "--quiet", "-v", "-vv", "--verbose", "--locked", "--offline", "--frozen",
		"--no-run", "--doc", "--no-fail-fast", "--keep-going", "--ignore-rust-version", "--check", "--no-deps"}
	vals := []string{"-p", "--package", "--features", "-F", "--test", "--bench", "--bin", "--example", "-j", "--jobs", "--target",
		"--profile", "--exclude", "--message-format", "--format-version", "--color", "--depth", "--prefix", "--edges", "-e", "-i", "--invert"}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !a.lit || a.glob {
			return false, "cargo " + sub + ": " + a.src + " is only known at run time"
		}
		t := a.text
		if t == "--" {
			return cargoTestArgs(sub, rest[i+1:])
		}
		if !strings.HasPrefix(t, "-") {
			continue // test name filter
		}
		name, _, hasEq := strings.Cut(t, "=")
		switch {
		case contains(bools, name):
		case contains(vals, name):
			if !hasEq {
				i++
			}
		default:
			return false, "cargo " + sub + " " + t + " is not on the read-only list"
		}
	}
	if sub == "fmt" && !hasText(rest, "--check") {
		return false, "cargo fmt rewrites files"
	}
	return true, ""
}

func hasText(args []wordInfo, s string) bool {
	for _, a := range args {
		if a.lit && a.text == s {
			return true
		}
	}
	return false
}

// cargoTestArgs judges what follows "--": arguments for the test harness.
func cargoTestArgs(sub string, args []wordInfo) (bool, string) {
	for _, a := range args {
		if !a.lit {
			return false, "cargo " + sub + " -- " + a.src + " is only known at run time"
		}
		t := a.text
		name, _, _ := strings.Cut(t, "=")
		if strings.HasPrefix(t, "-") && !contains([]string{"--nocapture", "--test-threads", "--ignored", "--include-ignored", "--exact",
			"-q", "--quiet", "--show-output", "--color"}, name) {
			return false, "cargo " + sub + " -- " + t + " is not on the read-only list"
		}
	}
	return true, ""
}

func judgeNpm(_ *classifier, _ string, args []wordInfo) (bool, string) {
	if len(args) == 0 || !args[0].lit {
		return false, "npm without a known subcommand"
	}
	sub, rest := args[0].text, args[1:]
	var bools, prefixes []string
	switch sub {
	case "test", "t", "tst", "run", "run-script", "start":
		return false, "npm " + sub + " runs a script of the project's package.json (its own code)"
	case "ls", "list":
		bools = []string{"--all", "-a", "--json", "--long", "-l", "--parseable", "-p", "--prod", "--production", "--dev", "--link", "-g", "--global"}
		prefixes = []string{"--depth=", "--omit=", "--include="}
	default:
		return false, "npm " + sub + " is not read-only"
	}
	for _, a := range rest {
		if !a.lit || a.glob {
			return false, "npm " + sub + ": " + a.src + " is only known at run time"
		}
		t := a.text
		if !strings.HasPrefix(t, "-") {
			if sub == "ls" || sub == "list" {
				continue // package names
			}
			return false, "npm " + sub + " " + t + " passes arguments to a script"
		}
		ok := contains(bools, t)
		for _, p := range prefixes {
			ok = ok || strings.HasPrefix(t, p)
		}
		if !ok {
			return false, "npm " + sub + " " + t + " is not on the read-only list"
		}
	}
	return true, ""
}

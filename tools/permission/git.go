package permission

import "strings"

// gitSplit returns where git's subcommand is, after its global options
// (-C dir, -c key=value… take the next word).
func gitSplit(args []wordInfo) int {
	i := 0
	for ; i < len(args) && args[i].lit && strings.HasPrefix(args[i].text, "-"); i++ {
		switch args[i].text {
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source", "--exec-path":
			i++
		}
	}
	return i
}

// gitCanonical is a git command line as rules see it: the subcommand and
// its arguments without git's global options (git -c x=y push is git
// push), an alias set with -c alias.NAME=VALUE replaced by its value; a
// shell alias ("!cmd") is judged as a script. unknown: an alias of the
// subcommand cannot be read.
func gitCanonical(c *classifier, args []wordInfo) (canonical string, unknown bool) {
	at := gitSplit(args)
	aliases := map[string]string{}
	for i := 0; i < at; i++ {
		t := args[i].text
		name, val, eq := strings.Cut(t, "=")
		if name != "-c" && name != "--config-env" {
			continue
		}
		if !eq && i+1 < at {
			i++
			val = args[i].text
		}
		key, v, _ := strings.Cut(val, "=")
		if alias, ok := strings.CutPrefix(strings.ToLower(key), "alias."); ok {
			aliases[alias] = v
			if name == "--config-env" || !args[i].lit {
				aliases[alias] = "\x00"
			}
		}
	}
	if at >= len(args) {
		return "", false
	}
	if !args[at].lit {
		return "", true
	}
	rest := joinWords(args[at+1:], false)
	v, ok := aliases[strings.ToLower(args[at].text)]
	switch {
	case !ok:
		return strings.TrimSpace("git " + args[at].text + " " + rest), false
	case v == "\x00":
		return "", true
	case strings.HasPrefix(v, "!"):
		c.nested(v[1:])
		return "", false
	}
	return strings.TrimSpace("git " + v + " " + rest), false
}

// gitReads are the subcommands that only read the repository (the
// settings that could make them run a program are overridden: tools.GitSafeEnv).
const gitReads = " status log show diff blame annotate shortlog rev-parse rev-list ls-files ls-tree cat-file describe for-each-ref " +
	"show-ref merge-base name-rev count-objects whatchanged range-diff cherry diff-tree diff-files diff-index check-ignore check-attr var version grep "

// git judges one git command: read-only for the reading subcommands and
// the listing forms of the others, and records what it writes and whether
// it destroys work that undo cannot restore.
func (c *classifier) git(args []wordInfo) (bool, string) {
	at := gitSplit(args)
	ro, why := true, ""
	for _, g := range args[:at] {
		switch g.text {
		case "--no-pager", "-P", "-p", "--paginate", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
			"--icase-pathspecs", "--no-replace-objects", "--version":
		default:
			// -c, -C, --git-dir, --config-env…: settings or a repository
			// from elsewhere.
			ro, why = false, "git "+g.text+" points git at other settings or another repository"
		}
	}
	if at >= len(args) {
		return ro, why // usage or --version
	}
	sub, rest := args[at].text, args[at+1:]
	c.destroys = gitDestroys(sub, rest)
	_, outs := opt(rest, "", "output")
	for _, out := range outs {
		c.addWrite(out, "git "+sub+" --output", false)
		c.destroys = "git " + sub + " --output writes " + out.src + " (a git line may write .git, and this names the file)"
		return false, "git " + sub + " --output writes a file"
	}
	if sub == "config" {
		return c.gitConfig(rest)
	}
	// git accepts a prefix of a long option (--op: --open-files-in-pager).
	if bad, _ := opt(rest, "", "open-files-in-pager", "upload-pack", "receive-pack", "exec", "ext-diff", "textconv", "filters"); bad {
		return false, "git " + sub + " with an option that runs a program"
	}
	if grepO, _ := opt(rest, "O"); sub == "grep" && grepO {
		return false, "git grep -O opens files in a program"
	}
	ops := operands(rest)
	first := ""
	if len(ops) > 0 {
		first = ops[0].text
	}
	switch {
	case strings.Contains(gitReads, " "+sub+" "):
	case sub == "branch" || sub == "tag":
		if why := gitListing(sub, rest); why != "" {
			return false, why
		}
	case sub == "remote" && (len(ops) == 0 || first == "get-url" || first == "show" && hasWord(rest, "-n")):
	case sub == "reflog" && (first == "" || first == "show"),
		(sub == "stash" || sub == "notes") && (first == "list" || first == "show"),
		sub == "worktree" && first == "list",
		sub == "symbolic-ref" && len(ops) <= 1 && !hasWord(rest, "-d") && !hasWord(rest, "--delete"):
	default:
		return false, "git " + sub + " changes the repository or talks to a remote"
	}
	return ro, why
}

// gitListing: git branch and git tag only list with these options (and
// names only after --list); anything else creates, deletes or moves.
func gitListing(sub string, args []wordInfo) string {
	list, names := false, 0
	for i := 0; i < len(args); i++ {
		name, _, eq := strings.Cut(strings.TrimLeft(args[i].text, "-"), "=")
		switch {
		case !strings.HasPrefix(args[i].text, "-"):
			names++
		case strings.Contains(" contains no-contains merged no-merged sort format points-at ", " "+name+" "):
			if !eq {
				i++ // its value
			}
		case strings.Contains(" a all r remotes l list v vv verbose show-current no-color no-column i ignore-case omit-empty color column ", " "+name+" "),
			sub == "tag" && strings.Trim(name, "n0123456789") == "":
			list = list || name == "l" || name == "list"
		default:
			return "git " + sub + " " + args[i].text + " changes " + sub + "es"
		}
	}
	if names > 0 && !list {
		return "git " + sub + " with a name creates one"
	}
	return ""
}

// gitConfig: reading settings is read-only; anything else writes a config
// file (.git/config can name programs git runs), a target of the
// questions about protected files.
func (c *classifier) gitConfig(args []wordInfo) (bool, string) {
	target := wordInfo{src: ".git/config", text: ".git/config", lit: true}
	read, write, ops := false, false, 0
	for i := 0; i < len(args); i++ {
		t := args[i].text
		name, v, eq := strings.Cut(t, "=")
		switch {
		case strings.Contains(" --get --get-all --get-regexp --get-urlmatch -l --list --get-color --get-colorbool ", " "+t+" "):
			read = true
		case strings.Contains(" --show-origin --show-scope --name-only --null -z --includes --no-includes --bool --int --bool-or-int --path --expiry-date --local --type --default --blob --all ", " "+name+" "):
		case t == "--global":
			target = wordInfo{src: "~/.gitconfig", text: "~/.gitconfig", lit: true}
		case t == "--system":
			target = wordInfo{src: "/etc/gitconfig", text: "/etc/gitconfig", lit: true}
		case t == "--worktree":
			target = wordInfo{src: ".git/config.worktree", text: ".git/config.worktree", lit: true}
		case name == "--file" || t == "-f":
			if eq {
				target = wordInfo{src: t, text: v, lit: true}
			} else if i+1 < len(args) {
				i++
				target = args[i]
			}
		case strings.HasPrefix(t, "-"):
			write = true
		default:
			ops++
			read = read || ops == 1 && (t == "get" || t == "list")
			write = write || ops == 1 && strings.Contains(" set unset rename-section remove-section edit ", " "+t+" ")
		}
	}
	if !write && (read || ops == 1) {
		return true, ""
	}
	c.addWrite(target, "git config", false)
	return false, "git config changes settings in " + target.src
}

// gitDestroys says why a git command destroys work that undo cannot
// restore: uncommitted changes, untracked files, stashes, history.
func gitDestroys(sub string, rest []wordInfo) string {
	has := func(short string, longs ...string) bool { found, _ := opt(rest, short, longs...); return found }
	ops := operands(rest)
	if has("bB") && len(ops) > 0 {
		ops = ops[1:] // checkout -b NAME: a new branch, not a path
	}
	first := ""
	if len(ops) > 0 {
		first = ops[0].text
	}
	switch {
	case sub == "reset" && has("", "hard", "merge"):
		return "git reset --hard discards uncommitted changes"
	case sub == "clean" && has("f", "force"):
		return "git clean -f deletes untracked files"
	case sub == "stash" && (first == "drop" || first == "clear"):
		return "git stash " + first + " deletes stashed changes"
	case sub == "checkout" && (has("f", "force") || hasWord(rest, "--") || hasWord(ops, ".") || len(ops) > 1),
		sub == "restore" && (!has("S", "staged") || has("W", "worktree")),
		sub == "switch" && has("f", "force", "discard-changes"),
		sub == "rm" && has("f", "force"):
		return "git " + sub + " discards uncommitted changes to the files it names"
	case sub == "reflog" && (first == "expire" || first == "delete"),
		sub == "update-ref" && has("d", "stdin"),
		sub == "gc" && has("", "prune"),
		sub == "prune" || sub == "filter-branch" || sub == "filter-repo",
		sub == "replace" && !has("l", "list"):
		return "git " + sub + " rewrites or prunes history"
	case sub == "branch" && (has("DM") || has("d", "delete") && has("f", "force")):
		return "git branch -D deletes a branch and its reflog"
	case (sub == "worktree" && first == "remove" || sub == "submodule" && first == "deinit") && has("f", "force"):
		return "git " + sub + " " + first + " --force deletes uncommitted changes"
	}
	return ""
}

// goCommand: go version, env, doc, list, vet and build (and go mod graph,
// why, verify) with flags that neither write nor run anything else; go
// test, run and generate run the project's code.
func (c *classifier) goCommand(args []wordInfo) (bool, string) {
	for i, a := range args {
		name, v, eq := strings.Cut(strings.TrimLeft(a.text, "-"), "=")
		if !strings.HasPrefix(a.text, "-") || !strings.Contains(" o coverprofile cpuprofile memprofile blockprofile mutexprofile trace outputdir ", " "+name+" ") {
			continue
		}
		target := wordInfo{src: a.src, text: v, lit: a.lit}
		if !eq && i+1 < len(args) {
			target = args[i+1]
		}
		c.addWrite(target, "go -"+name, false)
	}
	if len(args) == 0 {
		return true, ""
	}
	sub := args[0].text
	if !strings.Contains(" version env doc help list vet build mod ", " "+sub+" ") || sub == "mod" && (len(args) < 2 || !strings.Contains(" graph why verify ", " "+args[1].text+" ")) {
		return false, "go " + sub + " is not read-only (go test, run and generate run the project's code)"
	}
	for i := 1; i < len(args); i++ {
		name, v, eq := strings.Cut(strings.TrimLeft(args[i].text, "-"), "=")
		switch {
		case !strings.HasPrefix(args[i].text, "-"):
		case strings.Contains(" v race a n x trimpath json m e deps test find ", " "+name+" "):
		case strings.Contains(" tags p mod f o ", " "+name+" "):
			if !eq && i+1 < len(args) {
				i++
				v = args[i].text
			}
			if name == "mod" && v != "readonly" && v != "vendor" || name == "o" && !harmlessTarget(v) {
				return false, "go " + sub + " -" + name + "=" + v + " writes files"
			}
		default:
			return false, "go " + sub + " -" + name + " is not on the read-only list"
		}
	}
	return true, ""
}

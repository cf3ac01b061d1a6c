package permission

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"polly/memory/store"
	"polly/tools"
	"polly/tools/sandbox"
)

// targetKind is where a command's write target lands.
type targetKind int

const (
	plainTarget     targetKind = iota // inside the project, not protected
	protectedTarget                   // .git, .agent, an agent instruction file
	outsideTarget                     // outside the project
	databaseTarget                    // Polly's store
)

// target is a judged write target of a command line.
type target struct {
	kind     targetKind
	why      string
	grant    string // what an approval lets the command write
	redirect bool
}

// judgeWrites places the write targets of a command line that are known
// before it runs. Targets only known later ($f, after cd, through a link
// the line makes) are the sandbox's: it keeps them inside the project and
// off the protected paths; without it every command asks.
func (p *Policy) judgeWrites(an Analysis) []target {
	var out []target
	dbPath := filepath.Join(p.pl.state, "polly.db")
	for _, w := range an.Writes {
		tilde := w.Path == "~" || strings.HasPrefix(w.Path, "~/")
		if w.Path == "" || an.ChangesDir && !filepath.IsAbs(w.Path) && !tilde {
			continue
		}
		add := func(k targetKind, why, grant string) {
			out = append(out, target{kind: k, why: why + " (" + w.By + ")", grant: grant, redirect: w.By == "redirection"})
		}
		paths := []string{p.pl.abs(w.Path, p.pl.root)}
		if w.Glob {
			// Where the names live, then each name the pattern expands to now.
			matches, _ := bashGlob(paths[0], an.DotGlob)
			paths = append([]string{globDir(paths[0])}, matches...)
		}
		for i, at := range paths {
			tree := w.Tree && !(w.Glob && i == 0)
			switch pl := p.pl.place(at); {
			case pl.database || pl.real != "" && tree && covers(pl.real, dbPath):
				add(databaseTarget, "writes "+w.Text+", which would change .agent/polly.db, Polly's own session store", "")
			case pl.real != "" && tree && covers(pl.real, p.pl.realRoot):
				add(protectedTarget, "changes "+w.Text+", which holds the project's .git, settings and instruction files", pl.real)
			case pl.real != "" && pl.inside && tree && covers(pl.real, filepath.Join(p.pl.realRoot, ".git")):
				add(protectedTarget, "changes "+w.Text+", which holds .git", pl.real)
			case pl.real == "":
			case !pl.inside:
				add(outsideTarget, p.protectedPlace(pl), pl.real)
			case p.protectedPlace(pl) != "":
				add(protectedTarget, p.protectedPlace(pl), pl.real)
			default:
				add(plainTarget, "writes "+p.display(pl), "")
			}
		}
	}
	return out
}

// bashGlob expands a pattern like bash: without dotglob a component that
// does not start with "." does not match names that do (rm -rf * leaves
// .git and .agent alone).
func bashGlob(pattern string, dotglob bool) ([]string, error) {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("expand %s: %w", pattern, err)
	}
	pc := strings.Split(filepath.Clean(pattern), string(filepath.Separator))
	out := matches[:0]
	for _, m := range matches {
		mc := strings.Split(m, string(filepath.Separator))
		keep := len(mc) == len(pc)
		for i := 0; keep && i < len(pc); i++ {
			keep = dotglob || !strings.ContainsAny(pc[i], "*?[") || strings.HasPrefix(pc[i], ".") || !strings.HasPrefix(mc[i], ".")
		}
		if keep {
			out = append(out, m)
		}
	}
	return out, nil
}

// globDir is the directory part of a glob before its first pattern
// component.
func globDir(pattern string) string {
	if i := strings.IndexAny(pattern, "*?["); i >= 0 {
		return filepath.Dir(pattern[:i] + "x")
	}
	return pattern
}

// readsProject: every path is inside the project, outside .git and
// Polly's state.
func (p *Policy) readsProject(paths []string) bool {
	for _, r := range paths {
		pl := p.pl.place(p.pl.abs(r, p.pl.root))
		if pl.real == "" || !pl.inside || pl.gitDir || within(pl.real, p.pl.state) {
			return false
		}
	}
	return true
}

// decideExec judges a command line. The OS sandbox keeps the user safe;
// this decides when to ask:
//
//   - writes outside the project or to protected paths ask (approved, the
//     command may write those paths), and git that destroys work undo
//     cannot restore asks, in every mode but yolo;
//   - without the sandbox every command asks (yolo: only the writes above)
//     except a few that only print project files;
//   - ask: a read-only command runs in the read-only sandbox, anything
//     else asks, then runs in workspace-write; auto-edit: commands run in
//     workspace-write; yolo: workspace-write with network, never asks.
//
// The network asks unless the config grants it.
func (p *Policy) decideExec(tool string, a tools.Access) Decision {
	cmd := strings.TrimSpace(a.Command)
	an := Classify(cmd)
	d := Decision{Kind: "exec", Target: cmd, Scope: store.ScopeMode, Key: tool + "\x00" + cmd, Covers: "the command `" + cmd + "`"}
	if a.Network {
		d.Key += "\x00network"
	}
	targets := p.judgeWrites(an)
	for _, t := range targets {
		if t.kind == databaseTarget {
			d.Verdict, d.Protected, d.Reason = Refused, true, t.why
			return d
		}
	}
	// Deny and ask rules match the whole line and every part in each of its
	// spellings (as written, unquoted, by base name), so quoting or a path
	// cannot slip past them.
	anyText := func(r compiledRule) bool {
		if r.matchText(cmd) {
			return true
		}
		for _, pt := range an.Parts {
			texts := []string{pt.Text, pt.Command, pt.Canonical}
			if _, rest, ok := strings.Cut(pt.Command, " "); pt.Name != "" && ok {
				texts = append(texts, pt.Name+" "+rest)
			} else if pt.Name != "" {
				texts = append(texts, pt.Name)
			}
			if r.matchText(texts...) {
				return true
			}
		}
		return false
	}
	if rd, ok := p.denyOrAsk(d, tool, anyText); ok {
		return rd
	}
	if rd, ok := p.mayMatchRule(d, tool, an); ok {
		return rd
	}
	if p.box.Refuse {
		d.Verdict, d.Protected, d.Reason = Refused, true, p.box.Notice()
		return d
	}
	// Without the sandbox yolo still runs what it is given when the user
	// turned the sandbox off; when the kernel lacks it, every command asks.
	contained, off := p.box.Active, !p.box.Active && p.box.Mode == sandbox.ModeOff
	_, netRule := firstRule(p.rules.allow, NetworkRule, anyText)
	netFree := p.network || netRule
	d.Grant = sandbox.Grant{Level: sandbox.WorkspaceWrite, Network: a.Network && netFree}
	if !contained {
		d.Grant = sandbox.Grant{Level: sandbox.Unsandboxed, Network: true}
	}
	if sd, stop := p.execSecret(d, a, contained); stop {
		return sd
	} else {
		d = sd
	}
	yolo := p.mode() == Yolo
	if yolo && contained {
		d.Verdict, d.Reason, d.Grant.Network = Allowed, "mode yolo (workspace-write sandbox with network)", true
		return d
	}
	for _, t := range targets {
		if t.kind == outsideTarget || t.kind == protectedTarget {
			if d.Verdict != Asks {
				d.Verdict, d.Protected, d.Reason = Asks, true, t.why
			}
			d.Grant.Writable = append(d.Grant.Writable, t.grant)
		}
	}
	if d.Verdict == Asks {
		return d
	}
	if yolo && off {
		d.Verdict, d.Reason = Allowed, "mode yolo with sandbox.mode off"
		return d
	}
	pure := !contained && an.Pure && p.readsProject(an.Reads)
	var need []Part
	var used *compiledRule
	for _, pt := range an.Parts {
		switch {
		case pt.Destroys != "" && !yolo:
			pt.Why = pt.Destroys + ", which undo cannot restore; asked in every mode but yolo"
		case !contained && !pure, p.mode() == Ask && !pt.ReadOnly:
			pt.Destroys = ""
		default:
			continue
		}
		if r, ok := firstRule(p.rules.allow, tool, func(r compiledRule) bool { return r.matchText(pt.Text, pt.Command) }); ok && (an.Parsed || r.Pattern == "") {
			used = &r
			continue
		}
		need = append(need, pt)
	}
	edits := false
	for _, t := range targets {
		edits = edits || t.redirect && t.kind == plainTarget
	}
	switch {
	case len(need) > 0:
		d.Verdict = Asks
		why := need[0].Why
		switch {
		case !contained && need[0].Destroys == "":
			why = "commands run without the OS sandbox here (" + p.box.Why + "): every command asks but ls, cat, head, tail and wc of project files, echo and pwd"
			if !need[0].ReadOnly {
				why = need[0].Why + ", and " + why
			}
		case contained && need[0].Destroys == "":
			why += "; approved, it runs in the workspace-write sandbox"
		}
		d.Reason = "`" + need[0].Text + "`: " + why
		if len(need) > 1 {
			d.Reason += fmt.Sprintf(" (and %d more part(s) that need approval)", len(need)-1)
		}
		d.hint = fmt.Sprintf("re-run with --mode auto-edit (commands run in the workspace-write sandbox) or --yolo, or add a rule such as %q to permissions.allow in the config", tool+"("+suggestPattern(need[0])+")")
		if !contained || need[0].Destroys != "" {
			d.hint = fmt.Sprintf("re-run with --yolo, or add a rule such as %q to permissions.allow in the config", tool+"("+suggestPattern(need[0])+")")
		}
		return d
	case edits && used == nil && p.mode() == Ask:
		d.Verdict, d.Reason = Asks, "writes inside the project, which needs approval in mode ask; approved, it runs in the workspace-write sandbox"
		d.hint = "re-run with --mode auto-edit or --yolo"
		return d
	case used != nil:
		d = p.byRule(d, Allowed, *used)
	case !contained:
		d.Verdict, d.Reason = Allowed, "only reads project files (commands run without the OS sandbox: "+p.box.Why+")"
		return d
	case p.mode() == AutoEdit:
		d.Verdict, d.Reason = Allowed, "mode auto-edit (workspace-write sandbox)"
	default:
		d.Verdict, d.Reason, d.Grant.Level = Allowed, "read-only command (read-only sandbox)", sandbox.ReadOnly
	}
	if a.Network && !netFree && contained {
		d.Verdict, d.Reason = Asks, "asks for network access, which the sandbox blocks unless you allow it"
		d.hint = fmt.Sprintf("set \"sandbox\": {\"network\": true} in the config, or add a rule such as %q to permissions.allow", NetworkRule+"("+strings.Fields(cmd + " x")[0]+" *)")
	}
	return d
}

// mayMatchRule asks when a deny or ask rule could match a part of the line
// once its unknown words are known: `x=push; git $x` under a deny rule for
// "git push *", or a command whose very name is computed.
func (p *Policy) mayMatchRule(d Decision, tool string, an Analysis) (Decision, bool) {
	for _, pt := range an.Parts {
		if !pt.Dynamic {
			continue
		}
		for _, r := range append(append([]compiledRule(nil), p.rules.deny...), p.rules.ask...) {
			if r.Tool != tool || r.Pattern == "" {
				continue
			}
			first, _, _ := strings.Cut(strings.TrimSpace(r.Pattern), " ")
			if pt.Name != "" && !strings.ContainsAny(first, "*?") && first != pt.Name && path.Base(first) != pt.Name {
				continue
			}
			d.Verdict, d.Scope, d.Rule = Asks, store.ScopeRule, r.describe()
			d.Reason = "`" + pt.Text + "` is only known when it runs and could be what the config rule " + r.describe() + " stops"
			return d, true
		}
	}
	return d, false
}

// suggestPattern proposes a rule pattern for a command: its name and
// subcommand, then anything.
func suggestPattern(pt Part) string {
	f := strings.Fields(pt.Command)
	if len(f) == 0 {
		return pt.Text
	}
	if len(f) > 1 && !strings.HasPrefix(f[1], "-") && !strings.ContainsAny(f[1], "/.$*") {
		return f[0] + " " + f[1] + " *"
	}
	return f[0] + " *"
}

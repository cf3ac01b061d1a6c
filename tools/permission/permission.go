// Package permission is the one place that decides whether a tool call may
// run, for every tool, headless and in the TUI alike: the mode (ask,
// auto-edit, yolo), the config's allow/ask/deny rules, the read-only
// command allowlist (judged on the parsed shell line), the project boundary
// and the hard protections. When a person is there to answer, a call that
// needs approval is asked through an Asker; in a headless run it is denied
// with a message the model can act on. Every decision is logged.
//
// Decision rules, in order:
//
//  1. Polly's store (.agent/polly.db and its -wal/-shm/-journal files) is
//     never written by a tool, nor removed with its directory: deny, in
//     every mode, whatever the rules or a person say.
//  2. A deny rule matching the call denies it; an ask rule asks.
//  3. Hard protections ask in every mode, yolo included, and no allow rule
//     or flag lifts them (only a person can): writing outside the project
//     root (after resolving "..", "~" and symlinks), writing inside any
//     .git directory (hooks, config and objects decide what git runs; git's
//     own commands such as git commit are not affected), writing Polly's
//     .agent directory, .mcp.json or an agent instruction file at the root
//     (AGENTS.md, CLAUDE.md, .agents/, .claude/), and a command
//     write target that cannot be placed before the command runs ($VAR,
//     a path relative to a directory the line cd'ed into).
//  4. An allow rule allows the call (for run_command: every simple command
//     that is not read-only must be matched by one).
//  5. The mode: reads are free everywhere, also outside the project (they
//     change nothing; deny rules can still fence off secrets). ask: writes,
//     commands that are not read-only and new hosts ask. auto-edit: file
//     writes inside the project and redirections into it are free; other
//     commands ask unless read-only. yolo: everything else runs.
//
// fetch_url to localhost or a loopback address is free in every mode; any
// other host asks once per session in ask and auto-edit ("allow for this
// session" covers the host).
//
// A write to the workspace memory is judged like a file edit, and asks in
// every mode but yolo once the session has read untrusted content
// (decideMemory).
package permission

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"polly/memory/store"
	"polly/tools"
	"polly/tools/sandbox"
)

// Mode is how much runs without asking.
type Mode string

const (
	Ask      Mode = "ask"       // reads are free; writes and commands ask
	AutoEdit Mode = "auto-edit" // file edits inside the project are free; commands ask unless read-only
	Yolo     Mode = "yolo"      // nothing asks except the hard protections
)

// Answer is a person's decision on one request.
type Answer int

const (
	Deny         Answer = iota
	AllowOnce           // this call only: the next identical call asks again
	AllowSession        // calls with the same Request.Session key, for the rest of the session
)

// Request is what a person is asked to decide.
type Request struct {
	Agent  string // the agent asking, e.g. "default" or "web_scraper#2" (tools.CallerOf)
	Tool   string
	Access tools.Access
	Reason string // why it asks (outside the project, command not read-only…)
	// Session says what "allow for this session" would cover, e.g.
	// "the command `npm install`", "writes to src/a.go", "the host example.com".
	Session string
	// Protected: a hard protection asks (outside the project, .git). The
	// dialog should say so plainly; flags and rules cannot allow it.
	Protected bool
	// Sandbox is how an approved command will run ("" for other tools),
	// e.g. "workspace-write"; Network: the command asks for the network.
	// The dialog offers "allow with network" for every command.
	Sandbox string
	Network bool
}

// Reply is a person's answer, with a reason for a denial.
type Reply struct {
	Answer  Answer
	Reason  string // sent to the model with a denial
	Network bool   // with AllowOnce/AllowSession: the command may use the network
}

// Asker asks a person (the TUI's permission dialog). Nil in headless runs.
// The policy asks one question at a time.
type Asker interface {
	Ask(ctx context.Context, r Request) (Reply, error)
}

// DecisionLogger records decisions; *store.Store implements it.
type DecisionLogger interface {
	LogDecision(ctx context.Context, d store.Decision) error
}

// Options configure a Policy.
type Options struct {
	Mode     Mode   // "" is ask
	Root     string // project root; run_command runs here
	StateDir string // Polly's state directory; "" is Root/.agent
	Asker    Asker  // nil: headless, asking means denying
	Rules    Rules
	Log      DecisionLogger // nil: decisions are not recorded
	// Session returns the current session id for the log ("" outside one).
	Session func() string
	// OnLogError hears about decisions that could not be logged; logging
	// never changes a decision.
	OnLogError func(error)
	// Sandbox is what the OS sandbox can do (sandbox.Resolve). The zero
	// value (not active) keeps the classifier as the only guard: every
	// command that is not read-only asks, in ask and auto-edit alike.
	Sandbox sandbox.Status
	// Network: commands may use the network without asking (sandbox.network).
	Network bool
}

// Policy decides tool calls. It is safe for concurrent use: sub-agents
// share their parent's policy and its session approvals.
//
// Build it with New. A literal &Policy{Mode, Root, Asker} still works (no
// rules, no log); its fields must not change after the first call.
type Policy struct {
	Mode  Mode
	Root  string
	Asker Asker

	stateDir   string
	box        sandbox.Status
	network    bool
	rules      ruleSet
	logger     DecisionLogger
	session    func() string
	onLogError func(error)

	once   sync.Once
	pl     placer
	askSem chan struct{} // one question at a time

	mu       sync.Mutex
	approved map[string]approval // session approvals by Decision.Key

	switched atomic.Pointer[Mode] // the mode set by SetMode; nil: Mode
}

// approval is what "allow for this session" granted.
type approval struct{ network bool }

// New builds a policy. It fails on an unknown mode, a root that is not
// absolute, or a rule whose pattern is invalid.
func New(o Options) (*Policy, error) {
	switch o.Mode {
	case "", Ask, AutoEdit, Yolo:
	default:
		return nil, fmt.Errorf("permission mode %q: want ask, auto-edit or yolo", o.Mode)
	}
	if !filepath.IsAbs(o.Root) {
		return nil, fmt.Errorf("permission policy: project root %q is not absolute", o.Root)
	}
	home, _ := os.UserHomeDir()
	rs, err := compileRules(o.Rules, home)
	if err != nil {
		return nil, err
	}
	return &Policy{Mode: o.Mode, Root: o.Root, Asker: o.Asker, stateDir: o.StateDir, rules: rs,
		logger: o.Log, session: o.Session, onLogError: o.OnLogError, box: o.Sandbox, network: o.Network}, nil
}

func (p *Policy) setup() {
	p.once.Do(func() {
		p.pl = newPlacer(p.Root, p.stateDir)
		p.askSem = make(chan struct{}, 1)
	})
}

func (p *Policy) mode() Mode {
	m := p.Mode
	if s := p.switched.Load(); s != nil {
		m = *s
	}
	switch m {
	case AutoEdit, Yolo:
		return m
	}
	return Ask // also for an unknown mode: the safe default
}

// ResetSession forgets the "allow for this session" approvals (a new
// session starts).
func (p *Policy) ResetSession() {
	p.mu.Lock()
	p.approved = nil
	p.mu.Unlock()
}

// Verdict is what the policy decided before anyone was asked.
type Verdict int

const (
	Allowed Verdict = iota
	Asks            // a person must approve; headless, it is denied
	Refused         // denied without asking
)

func (v Verdict) String() string {
	switch v {
	case Allowed:
		return "allow"
	case Asks:
		return "ask"
	case Refused:
		return "deny"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Decision is the policy's judgement of one call.
type Decision struct {
	Verdict   Verdict
	Scope     store.Scope // rule or mode: what decided
	Reason    string      // why it is allowed, asks or is denied
	Rule      string      // the rule that decided, e.g. `deny "run_command(git push *)"`
	Protected bool        // a hard protection: flags and allow rules cannot lift it
	Key       string      // what a session approval covers
	Covers    string      // Key for people
	Kind      string      // for the log: read, write, exec, network, memory
	Target    string      // for the log: the command, paths or host
	// Grant is how an allowed command runs (commands only; with the
	// sandbox inactive it is Unsandboxed).
	Grant sandbox.Grant
	hint  string // how the user could allow it without being asked
}

// Decide judges a call without asking anyone or logging; Allow is Decide
// plus session approvals, the question and the log.
func (p *Policy) Decide(tool string, a tools.Access) Decision {
	p.setup()
	switch a.Kind {
	case tools.AccessRead:
		return p.decideRead(tool, a)
	case tools.AccessMemory:
		return p.decideMemory(tool, a)
	case tools.AccessWrite:
		return p.decideWrite(tool, a)
	case tools.AccessExecute:
		return p.decideExec(tool, a)
	case tools.AccessNetwork:
		return p.decideNetwork(tool, a)
	case tools.AccessExternal:
		return p.decideExternal(tool, a)
	}
	return Decision{Verdict: Asks, Scope: store.ScopeMode, Kind: a.Kind.String(), Key: tool + "\x00" + a.Kind.String(),
		Covers: "calls of " + tool, Reason: "has an effect the permission policy does not know (" + a.Kind.String() + ")"}
}

func (p *Policy) places(paths []string) []place {
	out := make([]place, len(paths))
	for i, path := range paths {
		out[i] = p.pl.place(p.pl.abs(path, p.pl.root))
	}
	return out
}

// display is a path for messages: project-relative when inside.
func (p *Policy) display(pl place) string {
	if pl.rel != "" {
		return pl.rel
	}
	if pl.real != "" {
		return pl.real
	}
	return pl.given
}

func (p *Policy) decideRead(tool string, a tools.Access) Decision {
	d := Decision{Verdict: Allowed, Scope: store.ScopeMode, Kind: "read", Target: strings.Join(a.Paths, ", "), Reason: "reads are free"}
	if p.rules.empty() {
		return d
	}
	places := p.places(a.Paths)
	anyPlace := func(r compiledRule) bool {
		if r.Pattern == "" {
			return true
		}
		for _, pl := range places {
			if r.matchPlace(pl, p.pl.root, false) || r.matchPlace(pl, p.pl.realRoot, false) {
				return true
			}
		}
		return false
	}
	if rd, ok := p.denyOrAsk(d, tool, anyPlace); ok {
		if rd.Verdict == Asks {
			rd.Key, rd.Covers = "read\x00"+d.Target, "reads of "+d.Target
		}
		return rd
	}
	return d
}

// denyOrAsk applies the deny rules, then the ask rules, that match a call.
func (p *Policy) denyOrAsk(d Decision, tool string, match func(compiledRule) bool) (Decision, bool) {
	if r, ok := firstRule(p.rules.deny, tool, match); ok {
		return p.byRule(d, Refused, r), true
	}
	if r, ok := firstRule(p.rules.ask, tool, match); ok {
		return p.byRule(d, Asks, r), true
	}
	return d, false
}

// allowOrYolo allows by the first allow rule that matches, else in mode
// yolo (with reason yolo); ok is false when neither applies.
func (p *Policy) allowOrYolo(d Decision, tool string, match func(compiledRule) bool, yolo string) (Decision, bool) {
	if r, ok := firstRule(p.rules.allow, tool, match); ok {
		return p.byRule(d, Allowed, r), true
	}
	if p.mode() == Yolo {
		d.Verdict, d.Reason = Allowed, yolo
		return d, true
	}
	return d, false
}

func (p *Policy) byRule(d Decision, v Verdict, r compiledRule) Decision {
	d.Verdict, d.Scope, d.Rule = v, store.ScopeRule, r.describe()
	switch v {
	case Refused:
		d.Reason = "blocked by the config rule " + r.describe()
	case Asks:
		d.Reason = "the config rule " + r.describe() + " requires approval"
	default:
		d.Reason = "allowed by the config rule " + r.describe()
	}
	return d
}

func (p *Policy) decideWrite(tool string, a tools.Access) Decision {
	places := p.places(a.Paths)
	shown := make([]string, len(places))
	reals := make([]string, len(places))
	for i, pl := range places {
		shown[i] = p.display(pl)
		reals[i] = pl.real
	}
	sort.Strings(reals)
	d := Decision{Kind: "write", Target: strings.Join(shown, ", "), Scope: store.ScopeMode,
		Key: "write\x00" + strings.Join(reals, "\x00"), Covers: "writes to " + strings.Join(shown, ", ")}
	if len(places) == 0 {
		d.Verdict, d.Reason = Asks, "writes without saying which file"
		return d
	}
	for _, pl := range places {
		if pl.database {
			d.Verdict, d.Protected, d.Reason = Refused, true, "writes "+p.display(pl)+", Polly's own session store, which no tool may write"
			return d
		}
	}
	anyPlace := func(r compiledRule) bool {
		for _, pl := range places {
			if r.matchPlace(pl, p.pl.root, false) || r.matchPlace(pl, p.pl.realRoot, false) {
				return true
			}
		}
		return false
	}
	if rd, ok := p.denyOrAsk(d, tool, anyPlace); ok {
		return rd
	}
	for _, pl := range places {
		if why := p.protectedPlace(pl); why != "" {
			d.Verdict, d.Protected, d.Reason = Asks, true, why
			return d
		}
	}
	allPlaces := func(r compiledRule) bool {
		for _, pl := range places {
			if !r.matchPlace(pl, p.pl.root, true) {
				return false
			}
		}
		return true
	}
	if r, ok := firstRule(p.rules.allow, tool, allPlaces); ok {
		return p.byRule(d, Allowed, r)
	}
	switch p.mode() {
	case AutoEdit, Yolo:
		d.Verdict, d.Reason = Allowed, "edits inside the project are free in mode "+string(p.mode())
	default:
		d.Verdict, d.Reason = Asks, "writes "+d.Target+", which needs approval in mode ask"
		rule := shown[0]
		d.hint = fmt.Sprintf("re-run with --mode auto-edit (edits inside the project are free) or --yolo, or add a rule such as %q to permissions.allow in the config",
			tool+"("+rule+")")
	}
	return d
}

// protectedPlace says why writing pl asks in every mode, or "".
func (p *Policy) protectedPlace(pl place) string {
	switch {
	case pl.real == "":
		return "writes " + pl.given + ", which cannot be resolved (" + pl.why + ")"
	case !pl.inside:
		if rel, err := filepath.Rel(p.pl.root, pl.given); err == nil && within(pl.given, p.pl.root) {
			return "writes " + filepath.ToSlash(rel) + ", which resolves outside the project through a symlink (" + pl.real + ")"
		}
		return "writes outside the project (" + pl.real + ")"
	case pl.gitDir:
		return "writes inside .git (" + p.display(pl) + "), whose hooks, config and objects decide what git runs"
	case pl.agentCfg:
		return "writes " + p.display(pl) + ", Polly's project settings or an agent instruction file, which decide what the next run may do"
	}
	return ""
}

// target is a judged write target of a command line.
type target struct {
	database, protected bool
	why                 string
	redirect            bool
	outside             string // resolved path outside the project (a grantable escalation)
}

// judgeWrites places every write target of a command line.
func (p *Policy) judgeWrites(an Analysis) []target {
	var out []target
	if an.MakesLinks == "" {
		an.MakesLinks = p.movesLinks(an)
	}
	dbPath := filepath.Join(p.pl.state, "polly.db")
	gitPath := filepath.Join(p.pl.realRoot, ".git")
	for _, w := range an.Writes {
		t := target{redirect: w.By == "redirection"}
		add := func(database, protected bool, why string) {
			t.database, t.protected, t.why = database, protected, why
			out = append(out, t)
		}
		if w.Path == "" {
			add(false, true, "writes "+w.Text+" ("+w.By+"), which is only known when the command runs")
			continue
		}
		tilde := w.Path == "~" || strings.HasPrefix(w.Path, "~/")
		if an.ChangesDir && !filepath.IsAbs(w.Path) && !tilde {
			add(false, true, "writes "+w.Text+" ("+w.By+") after changing directory, so where cannot be known")
			continue
		}
		if an.MakesLinks != "" && !w.LinkMaker {
			// ln -s /etc/passwd x; echo > x: judged now, x is a new file
			// in the project; when the line runs, it is a link.
			add(false, true, "writes "+w.Text+" ("+w.By+") in a line that also makes links (`"+an.MakesLinks+"`), so where it lands is only known when it runs")
			continue
		}
		type cand struct {
			path string
			tree bool
		}
		cands := []cand{{p.pl.abs(w.Path, p.pl.root), w.Tree}}
		if w.Glob {
			// Where the names live (for the boundary), then each name
			// the pattern expands to now.
			cands = []cand{{globDir(cands[0].path), false}}
			matches, err := bashGlob(p.pl.abs(w.Path, p.pl.root), an.DotGlob)
			if err != nil {
				add(false, true, "writes "+w.Text+" ("+w.By+"), a pattern that cannot be expanded here")
				continue
			}
			for _, m := range matches {
				cands = append(cands, cand{m, w.Tree})
			}
		}
		for _, c := range cands {
			pl := p.pl.place(c.path)
			if w.Link {
				pl = p.pl.placeLink(c.path)
			}
			switch {
			case pl.database || pl.real != "" && c.tree && covers(pl.real, dbPath):
				add(true, true, "writes "+w.Text+" ("+w.By+"), which would change .agent/polly.db, Polly's own session store")
			case pl.real != "" && pl.inside && c.tree && covers(pl.real, gitPath):
				add(false, true, "changes "+w.Text+" ("+w.By+"), which holds .git")
			case pl.real != "" && c.tree && covers(pl.real, p.pl.realRoot):
				add(false, true, "changes "+w.Text+" ("+w.By+"), which holds the project's agent settings and instruction files")
			default:
				if why := p.protectedPlace(pl); why != "" {
					add(false, true, why+" ("+w.By+")")
					if pl.real != "" && !pl.inside && !pl.gitDir {
						out[len(out)-1].outside = pl.real
					}
				} else {
					add(false, false, "writes "+p.display(pl)+" ("+w.By+")")
				}
				if len(w.Children) == 0 && !w.ChildUnknown {
					continue
				}
				if fi, err := os.Stat(pl.real); err != nil || !fi.IsDir() {
					continue
				}
				for _, name := range w.Children {
					cp := p.pl.place(filepath.Join(pl.real, name))
					if cp.database {
						add(true, true, "writes "+p.display(cp)+" ("+w.By+"), Polly's own session store")
					} else if why := p.protectedPlace(cp); why != "" {
						add(false, true, why+" ("+w.By+")")
					}
				}
				if w.ChildUnknown {
					_, gitErr := os.Lstat(filepath.Join(pl.real, ".git"))
					if gitErr == nil || strings.EqualFold(pl.real, p.pl.state) || pl.gitDir || pl.real == p.pl.realRoot {
						add(false, true, "writes a name only known at run time into "+p.display(pl)+" ("+w.By+"), which holds protected files")
					}
				}
			}
		}
	}
	return out
}

// movesLinks names an mv of the line whose source is a symlink now (or
// cannot be known): the link then appears under the new name, and a later
// write through that name lands where the link points.
func (p *Policy) movesLinks(an Analysis) string {
	for _, w := range an.Writes {
		if w.By != "mv (source)" {
			continue
		}
		if w.Path == "" || w.Glob {
			return "mv " + w.Text
		}
		if fi, err := os.Lstat(p.pl.abs(w.Path, p.pl.root)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return "mv " + w.Text
		}
	}
	return ""
}

// bashGlob expands a pattern like bash: without dotglob a component that
// does not start with "." does not match names that do (rm -rf * leaves
// .git and .agent alone); with dotglob it does.
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
			if !dotglob && hasGlob(pc[i]) && !strings.HasPrefix(pc[i], ".") && strings.HasPrefix(mc[i], ".") {
				keep = false
			}
		}
		if keep {
			out = append(out, m)
		}
	}
	return out, nil
}

// globDir is the directory part of a glob before its first pattern
// component: where the expanded names live.
func globDir(pattern string) string {
	i := strings.IndexAny(pattern, "*?[")
	if i < 0 {
		return pattern
	}
	return filepath.Dir(pattern[:i] + "x")
}

func (p *Policy) decideExec(tool string, a tools.Access) Decision {
	cmd := strings.TrimSpace(a.Command)
	an := Classify(cmd)
	d := Decision{Kind: "exec", Target: cmd, Scope: store.ScopeMode, Key: tool + "\x00" + cmd, Covers: "the command `" + cmd + "`"}
	targets := p.judgeWrites(an)
	for _, t := range targets {
		if t.database {
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
			if pt.Name != "" && pt.Command != "" {
				if _, rest, ok := strings.Cut(pt.Command, " "); ok {
					texts = append(texts, pt.Name+" "+rest)
				} else {
					texts = append(texts, pt.Name)
				}
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
	if p.box.Active {
		return p.decideSandboxed(d, tool, a, an, targets, anyText)
	}
	d.Grant = sandbox.Grant{Level: sandbox.Unsandboxed, Network: true}
	for _, t := range targets {
		if t.protected {
			d.Verdict, d.Protected, d.Reason = Asks, true, t.why
			return d
		}
	}
	if p.mode() == Yolo {
		d.Verdict, d.Reason = Allowed, "mode yolo"
		return d
	}
	if r, ok := firstRule(p.rules.allow, tool, func(r compiledRule) bool { return r.Pattern == "" }); ok {
		return p.byRule(d, Allowed, r)
	}
	var need []Part
	var used *compiledRule
	gitOK := p.hasGit()
	for _, pt := range an.Parts {
		if pt.ReadOnly && (pt.Name != "git" || gitOK) {
			continue
		}
		if pt.ReadOnly {
			pt.Why = "git outside a repository may read settings (and programs to run) from another directory"
		}
		if r, ok := firstRule(p.rules.allow, tool, func(r compiledRule) bool { return r.matchText(pt.Text, pt.Command) }); ok && an.Parsed {
			used = &r
			continue
		}
		need = append(need, pt)
	}
	var edits []string
	for _, t := range targets {
		if t.redirect && !t.protected {
			edits = append(edits, t.why)
		}
	}
	switch {
	case len(need) > 0:
		d.Verdict = Asks
		d.Reason = "`" + need[0].Text + "`: " + need[0].Why
		if len(need) > 1 {
			d.Reason += fmt.Sprintf(" (and %d more part(s) that are not read-only)", len(need)-1)
		}
		d.hint = fmt.Sprintf("re-run with --yolo, or add a rule such as %q to permissions.allow in the config", tool+"("+suggestPattern(need[0])+")")
	case len(edits) > 0 && p.mode() == Ask:
		d.Verdict = Asks
		d.Reason = edits[0] + ", which needs approval in mode ask"
		d.hint = "re-run with --mode auto-edit (edits inside the project are free) or --yolo"
	case used != nil:
		d = p.byRule(d, Allowed, *used)
	default:
		d.Verdict, d.Reason = Allowed, "read-only command"
		if len(edits) > 0 {
			d.Reason = "read-only command writing inside the project (mode auto-edit)"
		}
	}
	if d.Verdict == Asks && p.box.Why != "" {
		d.Reason += " (commands run without the OS sandbox: " + p.box.Why + ")"
	}
	return d
}

// decideSandboxed judges a command that will run in the OS sandbox. The
// sandbox, not the classifier, keeps the user safe: the classifier only
// decides when to ask.
//
//   - ask: a command judged read-only runs without a question in the
//     read-only sandbox; anything else asks, then runs in workspace-write.
//   - auto-edit: commands run in workspace-write without asking; only
//     escalations ask (network, writes outside the project).
//   - yolo: workspace-write with network, never asks.
//
// Writes to .git/, .agent/ or targets only known at run time do not ask:
// the sandbox keeps them read-only whatever anyone approves (git-only
// lines may write .git/ but not its hooks or config).
func (p *Policy) decideSandboxed(d Decision, tool string, a tools.Access, an Analysis, targets []target, anyText func(compiledRule) bool) Decision {
	if p.mode() == Yolo {
		d.Verdict, d.Reason = Allowed, "mode yolo (workspace-write sandbox with network)"
		d.Grant = sandbox.Grant{Level: sandbox.WorkspaceWrite, Network: true}
		return d
	}
	netFree := p.network
	if !netFree {
		_, netFree = firstRule(p.rules.allow, NetworkRule, anyText)
	}
	grantNet := a.Network && netFree
	d.Grant = sandbox.Grant{Level: sandbox.WorkspaceWrite, Network: grantNet}
	if a.Network {
		d.Key += "\x00network"
	}
	for _, t := range targets {
		if t.outside != "" {
			d.Verdict, d.Protected, d.Reason = Asks, true, t.why
			d.Grant.Writable = append(d.Grant.Writable, t.outside)
		}
	}
	if d.Verdict == Asks {
		return d
	}
	askNet := func(d Decision) Decision {
		if a.Network && !netFree && d.Verdict == Allowed {
			d.Verdict, d.Reason = Asks, "asks for network access, which the sandbox blocks unless you allow it"
			d.hint = fmt.Sprintf("set \"sandbox\": {\"network\": true} in the config, or add a rule such as %q to permissions.allow", NetworkRule+"("+strings.Fields(d.Target + " x")[0]+" *)")
		}
		return d
	}
	if p.mode() == AutoEdit {
		d.Verdict, d.Reason = Allowed, "mode auto-edit (workspace-write sandbox)"
		return askNet(d)
	}
	var need []Part
	var used *compiledRule
	for _, pt := range an.Parts {
		if pt.ReadOnly {
			continue
		}
		if r, ok := firstRule(p.rules.allow, tool, func(r compiledRule) bool { return r.matchText(pt.Text, pt.Command) }); ok && an.Parsed {
			used = &r
			continue
		}
		need = append(need, pt)
	}
	if r, ok := firstRule(p.rules.allow, tool, func(r compiledRule) bool { return r.Pattern == "" }); ok {
		need, used = nil, &r
	}
	edits := false
	for _, t := range targets {
		if t.redirect && !t.protected {
			edits = true
		}
	}
	switch {
	case len(need) > 0:
		d.Verdict = Asks
		d.Reason = "`" + need[0].Text + "`: " + need[0].Why + "; approved, it runs in the workspace-write sandbox"
		if len(need) > 1 {
			d.Reason += fmt.Sprintf(" (and %d more part(s) that are not read-only)", len(need)-1)
		}
		d.hint = fmt.Sprintf("re-run with --mode auto-edit (commands run in the workspace-write sandbox) or --yolo, or add a rule such as %q to permissions.allow in the config", tool+"("+suggestPattern(need[0])+")")
	case edits && used == nil:
		d.Verdict, d.Reason = Asks, "writes inside the project, which needs approval in mode ask; approved, it runs in the workspace-write sandbox"
		d.hint = "re-run with --mode auto-edit or --yolo"
	case used != nil:
		d = p.byRule(d, Allowed, *used)
	default:
		d.Verdict, d.Reason = Allowed, "read-only command (read-only sandbox)"
		d.Grant.Level = sandbox.ReadOnly
	}
	return askNet(d)
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

// hasGit: the project is a git repository, so git reads its settings from
// the protected .git and not from a directory the model could have made.
func (p *Policy) hasGit() bool {
	_, err := os.Lstat(filepath.Join(p.pl.realRoot, ".git"))
	return err == nil
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

func (p *Policy) decideNetwork(tool string, a tools.Access) Decision {
	d := Decision{Kind: "network", Target: a.URL, Scope: store.ScopeMode}
	host, web, err := hostOf(a.URL)
	if err != nil || !web {
		// Not an http(s) URL with a host (file:, ftp:, garbage): always a
		// person's call, per URL.
		d.Verdict, d.Key, d.Covers = Asks, tool+"\x00url\x00"+a.URL, "the URL "+a.URL
		d.Reason = "fetches " + a.URL + ", which is not an http(s) URL with a host"
		if err != nil {
			d.Reason += " (" + err.Error() + ")"
		}
		return d
	}
	d.Target, d.Key, d.Covers = host, "network\x00"+host, "the host "+host
	anyHost := func(r compiledRule) bool { return r.matchText(host) }
	if rd, ok := p.denyOrAsk(d, tool, anyHost); ok {
		return rd
	}
	switch {
	case loopback(host):
		d.Verdict, d.Reason = Allowed, "loopback address"
	default:
		if ad, ok := p.allowOrYolo(d, tool, anyHost, "mode yolo"); ok {
			return ad
		}
		d.Verdict, d.Reason = Asks, "fetches from "+host+", a host not approved in this session"
		d.hint = fmt.Sprintf("re-run with --yolo, or add a rule such as %q to permissions.allow in the config", tool+"("+host+")")
	}
	return d
}

// Allow implements tools.Gate.
func (p *Policy) Allow(ctx context.Context, tool string, a tools.Access) error {
	_, err := p.allow(ctx, tool, a)
	return err
}

// Grant implements tools.Granter: Allow, and the returned context carries
// how an allowed command runs (its sandbox and network).
func (p *Policy) Grant(ctx context.Context, tool string, a tools.Access) (context.Context, error) {
	g, err := p.allow(ctx, tool, a)
	if err != nil {
		return ctx, err
	}
	return sandbox.WithGrant(ctx, g), nil
}

// allow decides, asks when needed, logs, and returns the grant.
func (p *Policy) allow(ctx context.Context, tool string, a tools.Access) (sandbox.Grant, error) {
	d := p.hookDecision(ctx, p.Decide(tool, a))
	switch d.Verdict {
	case Allowed:
		p.log(ctx, tool, d, true, d.Scope, d.Reason)
		return d.Grant, nil
	case Refused:
		p.log(ctx, tool, d, false, d.Scope, d.Reason)
		return d.Grant, &tools.Denied{Reason: refusedMessage(tool, d)}
	}
	if ap, ok := p.sessionApproved(d.Key); ok {
		p.log(ctx, tool, d, true, store.ScopeSession, "approved for this session earlier")
		return withApproval(d, ap.network), nil
	}
	if p.Asker == nil {
		p.log(ctx, tool, d, false, d.Scope, "nobody to ask (headless): "+d.Reason)
		return d.Grant, &tools.Denied{Reason: p.headlessMessage(tool, d)}
	}
	select {
	case p.askSem <- struct{}{}:
	case <-ctx.Done():
		p.log(ctx, tool, d, false, store.ScopeOnce, "cancelled while waiting to ask")
		return d.Grant, &tools.Denied{Reason: tool + " was not approved: " + ctx.Err().Error()}
	}
	defer func() { <-p.askSem }()
	if ap, ok := p.sessionApproved(d.Key); ok { // approved while this call waited its turn
		p.log(ctx, tool, d, true, store.ScopeSession, "approved for this session earlier")
		return withApproval(d, ap.network), nil
	}
	req := Request{Agent: tools.CallerOf(ctx), Tool: tool, Access: a, Reason: d.Reason, Session: d.Covers, Protected: d.Protected}
	if a.Kind == tools.AccessExecute {
		req.Sandbox, req.Network = d.Grant.Level.String(), a.Network
	}
	rep, err := p.Asker.Ask(ctx, req)
	if err != nil {
		p.log(ctx, tool, d, false, store.ScopeOnce, "could not ask: "+err.Error())
		return d.Grant, &tools.Denied{Reason: fmt.Sprintf("%s was not approved: could not ask the user: %v", tool, err)}
	}
	net := ""
	if rep.Network && a.Kind == tools.AccessExecute {
		net = " with network"
	}
	switch rep.Answer {
	case AllowOnce:
		p.log(ctx, tool, d, true, store.ScopeOnce, "approved once"+net+": "+d.Reason)
		return withApproval(d, net != ""), nil
	case AllowSession:
		p.mu.Lock()
		if p.approved == nil {
			p.approved = map[string]approval{}
		}
		p.approved[d.Key] = approval{network: net != ""}
		p.mu.Unlock()
		p.log(ctx, tool, d, true, store.ScopeSession, "approved for this session"+net+": "+d.Covers)
		return withApproval(d, net != ""), nil
	}
	why := "the user denied " + tool + " (" + d.Covers + ")"
	if r := strings.TrimSpace(rep.Reason); r != "" {
		why += ": " + r
	} else {
		why += " without giving a reason"
	}
	p.log(ctx, tool, d, false, store.ScopeOnce, why)
	return d.Grant, &tools.Denied{Reason: why + ". Do not retry the same call; change the approach or ask the user."}
}

// withApproval is the grant of an approved command: the decision's, with
// network when the person said so.
func withApproval(d Decision, network bool) sandbox.Grant {
	g := d.Grant
	g.Network = g.Network || network
	return g
}

func (p *Policy) sessionApproved(key string) (approval, bool) {
	if key == "" {
		return approval{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ap, ok := p.approved[key]
	return ap, ok
}

func refusedMessage(tool string, d Decision) string {
	if d.Rule != "" {
		return fmt.Sprintf("%s (%s): %s. Do not retry it; if it is needed, tell the user, who can change the config.", tool, d.Covers, d.Reason)
	}
	return fmt.Sprintf("%s: %s. No mode, flag or rule allows this; use the memory and task tools for Polly's state.", tool, d.Reason)
}

func (p *Policy) headlessMessage(tool string, d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s needs approval and nobody can give it here (no interactive session, mode %s): %s.", tool, p.mode(), d.Reason)
	switch {
	case d.Protected:
		b.WriteString(" This is a protected action: no flag or config rule allows it; only a person approving it in an interactive session can.")
	case d.Rule != "":
		b.WriteString(" The user can remove that rule or run Polly interactively.")
	case d.hint != "":
		b.WriteString(" To allow it, the user can " + d.hint + ".")
	}
	b.WriteString(" Tell the user what you wanted to do and why, or find another way that does not need it.")
	return b.String()
}

func (p *Policy) log(ctx context.Context, tool string, d Decision, allowed bool, scope store.Scope, reason string) {
	if p.logger == nil {
		return
	}
	sid := ""
	if p.session != nil {
		sid = p.session()
	}
	// A cancelled turn still records what was decided.
	err := p.logger.LogDecision(context.WithoutCancel(ctx), store.Decision{SessionID: sid, Tool: tool, Kind: d.Kind,
		Target: d.Target, Allowed: allowed, Scope: scope, Reason: reason})
	if err != nil && p.onLogError != nil {
		p.onLogError(fmt.Errorf("log permission decision for %s: %w", tool, err))
	}
}

// Package permission is the one place that decides whether a tool call may
// run, for every tool, headless and in the TUI alike: the mode (ask,
// auto-edit, yolo), the config's allow/ask/deny rules, the read-only
// command list (judged on the parsed shell line), the project boundary
// and the protected paths. The OS sandbox (tools/sandbox) decides what a
// command can do; this package decides when to ask. When a person is there
// to answer, a call that needs approval is asked through an Asker; in a
// headless run it is denied with a message the model can act on. Every
// decision is logged.
//
// Decision rules, in order:
//
//  1. Polly's store (.agent/polly.db and its -wal/-shm/-journal files) is
//     never written by a tool, nor removed with its directory: deny, in
//     every mode, whatever the rules or a person say.
//  2. A deny rule matching the call denies it; an ask rule asks.
//  3. Protected writes ask in every mode but sandboxed yolo (for the file
//     tools, yolo too), and no allow rule or flag lifts them (only a
//     person can): writing outside the project root (after resolving "..",
//     "~" and symlinks), inside any .git, Polly's .agent directory,
//     .mcp.json or an agent instruction file at the root (AGENTS.md,
//     CLAUDE.md, .agents/, .claude/). Approved, a command may write the
//     paths it was seen writing, and nothing else outside.
//  4. git that destroys work undo cannot restore (reset --hard, clean -f,
//     stash drop, checkout of paths, history rewriting, --output) asks in
//     every mode but yolo.
//  5. Without the OS sandbox every command asks, in every mode but yolo,
//     except a few that only print project files (ls, cat, head, wc…).
//  6. An allow rule allows the call (for run_command: every simple command
//     that is not read-only must be matched by one).
//  7. The mode: reads are free everywhere (deny rules can fence off
//     secrets). ask: writes, commands that are not read-only and new hosts
//     ask; read-only commands run in the read-only sandbox. auto-edit: file
//     writes inside the project are free; commands run in the
//     workspace-write sandbox. yolo: everything else runs.
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
	AutoEdit Mode = "auto-edit" // file edits inside the project are free; commands run in the workspace-write sandbox
	Yolo     Mode = "yolo"      // nothing asks except the protected writes the sandbox cannot stop
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
	// Sandbox is what the OS sandbox can do (sandbox.Resolve). Commands
	// are contained only when it is Active; otherwise (the zero value)
	// every command asks but a few that only print project files.
	Sandbox sandbox.Status
	// Network: commands may use the network without asking (sandbox.network).
	Network bool
	// Secrets: reading them asks (Polly's own files: refused).
	Secrets Secrets
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
	secrets    Secrets
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
		logger: o.Log, session: o.Session, onLogError: o.OnLogError, box: o.Sandbox, network: o.Network, secrets: o.Secrets}, nil
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
	places := p.places(a.Paths)
	if sd, ok := p.readSecret(tool, places); ok && (sd.Verdict == Refused || p.rules.empty()) {
		return sd
	} else if ok {
		d = sd // a rule may still decide: deny and ask rules first, then allow
	}
	if p.rules.empty() {
		return d
	}
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

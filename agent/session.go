package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/task"
	"polly/memory/tokens"
	"polly/memory/window"
	"polly/personas"
	"polly/tools"
)

// Session is one conversation per persona, stored under one session id.
type Session struct {
	deps *Deps
	emit func(Event)

	mu     sync.Mutex
	id     string // "" until the first message creates the row
	title  string
	agents map[string]*Agent // persona id → conversation
	team   team

	resumed  bool   // opened with a stored id (SessionStart source "resume")
	source   string // SessionStart's source when set by the opener ("clear")
	started  bool   // SessionStart hooks have run
	reserved string // the id hooks were given before the row exists
	ended    bool   // SessionEnd hooks have run
}

// SessionOptions open a session.
type SessionOptions struct {
	ID     string // resume this stored session; "" starts a new one
	Source string // SessionStart's source: "" is startup (or resume with an ID); "clear" after /clear
}

// OpenSession starts a new session or resumes a stored one. A new
// session's row is created with its first message, so opening Polly and
// quitting leaves nothing behind.
func OpenSession(ctx context.Context, deps *Deps, emit func(Event), opts SessionOptions) (*Session, error) {
	s := &Session{deps: deps, emit: emit, agents: map[string]*Agent{}, source: opts.Source}
	if opts.ID != "" {
		if deps.Store == nil {
			return nil, errors.New("resume: no session store")
		}
		sess, err := deps.Store.Session(ctx, opts.ID)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("no session %q in %s (polly sessions lists them)", opts.ID, deps.Store.Path())
			}
			return nil, fmt.Errorf("resume session %s: %w", opts.ID, err)
		}
		if err := checkOwner(deps.Owner, sess); err != nil {
			return nil, err
		}
		s.id, s.title = sess.ID, sess.Title
		s.resumed = true
	}
	return s, nil
}

// checkOwner fails closed: without an owner check nothing stored is used.
func checkOwner(o SessionOwner, sess store.Session) error {
	if o == nil {
		return fmt.Errorf("session %s: no check of who made it is configured, so it is not used", sess.ID)
	}
	return o.Check(sess)
}

// ID is the session id ("" before the first message of a new session).
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// ensureID creates the session row on first use.
func (s *Session) ensureID(ctx context.Context, persona, model, title string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id != "" {
		return s.id, nil
	}
	if s.deps.Store == nil {
		s.id = s.reserved
		if s.id == "" {
			s.id = "memory"
		}
		return s.id, nil
	}
	cwd, _ := os.Getwd()
	in := store.Session{ID: s.reserved, Persona: persona, Title: title, Cwd: cwd, Model: model, Status: store.StatusActive}
	sess, err := s.deps.Store.CreateSession(ctx, in)
	if errors.Is(err, store.ErrConflict) && in.ID != "" {
		in.ID = "" // the reserved id was taken meanwhile: a fresh one
		sess, err = s.deps.Store.CreateSession(ctx, in)
	}
	if err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	s.id, s.title = sess.ID, sess.Title
	return s.id, nil
}

// reserveID is the session's id, or, before its row exists, the id it
// will be created with: hooks get a session_id from the first event on.
func (s *Session) reserveID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id != "" {
		return s.id
	}
	if s.reserved == "" {
		s.reserved = store.NewSessionID()
	}
	return s.reserved
}

// Agent returns the conversation of a persona (id or name), loading it from
// the store when the session is resumed.
func (s *Session) Agent(ctx context.Context, persona string) (*Agent, error) {
	p, ok := s.deps.Personas.Find(persona)
	if !ok {
		return nil, fmt.Errorf("unknown persona %q (known: %s)", persona, strings.Join(s.deps.Personas.IDs(), ", "))
	}
	s.mu.Lock()
	a, ok := s.agents[p.ID]
	id := s.id
	s.mu.Unlock()
	if ok {
		return a, nil
	}
	a = newAgent(s.deps, p, id, "", p.ID, s.emit, &s.team, 0)
	if err := a.bind(); err != nil {
		return nil, err
	}
	if id != "" {
		if err := a.load(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if existing, ok := s.agents[p.ID]; ok {
		return existing, nil
	}
	s.agents[p.ID] = a
	return a, nil
}

// Reload forgets the loaded conversations: each is read again from the
// store on its next use (after an undo added a note to it). Call it only
// while no agent runs.
func (s *Session) Reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agents = map[string]*Agent{}
}

// Send runs one user message through a persona's conversation.
func (s *Session) Send(ctx context.Context, persona, text string) (Outcome, error) {
	a, err := s.Agent(ctx, persona)
	if err != nil {
		return Outcome{Reason: "error"}, err
	}
	if blocked := s.admit(ctx, a, text); blocked {
		return Outcome{Reason: "blocked"}, nil
	}
	id, err := s.ensureID(ctx, a.persona.ID, a.model(), text)
	if err != nil {
		return Outcome{Reason: "error"}, err
	}
	a.session = id
	if err := a.bind(); err != nil {
		return Outcome{Reason: "error"}, err
	}
	began := s.deps.now()
	out, err := a.Run(ctx, text)
	if out.Reason != "cancelled" && s.deps.now().Sub(began) >= s.deps.NotifyAfter {
		s.Notify(context.WithoutCancel(ctx), "idle_prompt", "Polly is waiting for your input",
			fmt.Sprintf("%s finished (%s) and is waiting for your input", a.persona.Name, out.Reason))
	}
	if s.deps.Store != nil {
		status := store.StatusDone
		switch out.Reason {
		case "cancelled":
			status = store.StatusInterrupted
		case "error", "max_turns", "loop":
			status = store.StatusFailed
		}
		_ = s.deps.Store.SetSessionStatus(context.WithoutCancel(ctx), id, status)
	}
	return out, err
}

// newAgent builds an agent with its own bound tools.
func newAgent(deps *Deps, p personas.Persona, session, parent, id string, emit func(Event), t *team, depth int) *Agent {
	if t == nil {
		t = &team{}
	}
	deps.ensureLimits()
	a := &Agent{deps: deps, root: deps, id: id, persona: p, session: session, parent: parent, emit: emit, team: t, depth: depth}
	model := p.Model
	if model == "" {
		model = deps.Model.Name
	}
	a.counter = tokens.ForModel(model)
	bound := []tools.Tool{tools.TaskPlanTool(a.setPlan)}
	if deps.Store != nil {
		bound = append(bound, tools.OutputTools(deps.Store)...)
	}
	if canDelegate(deps, p, depth) {
		bound = append(bound, a.delegateTool())
	}
	if deps.Tools != nil && deps.Store != nil && deps.ProjectDir != "" {
		if run, ok := deps.Tools.Get("run_command"); ok {
			bound = append(bound, trackedCommand(run, deps.ProjectDir))
		}
	}
	a.bound = bound
	a.buildTools()
	return a
}

// buildTools makes the agent's registry: the shared tools, the extra tools
// (MCP) available now, and its bound tools.
func (a *Agent) buildTools() {
	base := a.deps.Tools
	if base == nil {
		base = tools.NewRegistry()
	}
	var extra []tools.Tool
	if a.deps.Extra != nil {
		a.extraGen = a.deps.Extra.Generation()
		extra = a.deps.Extra.Tools()
	}
	a.registry = base.With(append(extra, a.bound...)...)
	a.allowed = modelTools(allowedTools(a.persona, a.registry), a.deps.Model.Tools)
	a.planMCPTools()
	a.toolSpecs, a.toolTok = nil, 0
}

// refreshTools rebuilds the tool list when MCP servers came up or went
// away since the last request.
func (a *Agent) refreshTools() {
	if a.deps.Extra != nil && a.deps.Extra.Generation() != a.extraGen {
		a.buildTools()
		return
	}
	a.refreshDeferred()
}

// allowedTools is the persona's list, restricted to tools that exist. Only
// a persona with no list at all (nil) gets every tool. Extensions the
// persona files cannot know by name follow rules of their own: skill comes
// with read_file (it only reads), and MCP tools (mcp__server__tool) are
// given to every persona unless its list names MCP tools by pattern
// ("mcp__github__*"), which then restricts them.
func allowedTools(p personas.Persona, r *tools.Registry) []string {
	if p.Tools == nil {
		return r.Names()
	}
	out := []string{}
	var mcpPatterns []string
	for _, n := range p.Tools {
		if strings.HasPrefix(n, mcpPrefix) {
			mcpPatterns = append(mcpPatterns, n)
			continue
		}
		if _, ok := r.Get(n); ok {
			out = append(out, n)
		}
	}
	if _, ok := r.Get("skill"); ok && p.Allows("read_file") && !slices.Contains(out, "skill") {
		out = append(out, "skill")
	}
	for _, n := range r.Names() {
		if strings.HasPrefix(n, mcpPrefix) && (mcpPatterns == nil || matchAny(mcpPatterns, n)) {
			out = append(out, n)
		}
	}
	return out
}

// modelTools narrows a persona's tools to the model's allow-list (nil:
// no list); MCP tools match it by pattern too.
func modelTools(allowed, list []string) []string {
	if list == nil {
		return allowed
	}
	out := []string{}
	for _, n := range allowed {
		if slices.Contains(list, n) || (strings.HasPrefix(n, mcpPrefix) && matchAny(list, n)) {
			out = append(out, n)
		}
	}
	return out
}

// mcpPrefix starts the name of every tool MCP servers provide: their own
// (mcp__server__tool) and the resource tools (mcp_list_resources).
const mcpPrefix = "mcp_"

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// setPlan is task_plan's effect on this agent.
func (a *Agent) setPlan(steps []tools.PlanStep) string {
	plan := make([]task.Step, len(steps))
	for i, s := range steps {
		plan[i] = task.Step{Title: strings.TrimSpace(s.Title), Status: task.Status(s.Status)}
	}
	a.task.SetPlan(plan)
	return task.PlanText(a.task.Plan)
}

// load restores a stored conversation and task state. Tool calls left
// without a result by a crash get an "interrupted" result, stored, so the
// history sent to the model is valid.
func (a *Agent) load(ctx context.Context) error {
	if a.deps.Store == nil {
		return nil
	}
	h, err := a.deps.Store.Messages(ctx, a.session, a.persona.ID)
	if err != nil {
		return fmt.Errorf("load %s conversation: %w", a.persona.ID, err)
	}
	a.history = h
	if err := a.recallUntrusted(ctx); err != nil {
		return err
	}
	if b, err := a.deps.Store.AgentState(ctx, a.session, a.persona.ID); err == nil {
		if err := json.Unmarshal(b, &a.task); err != nil {
			a.warnOnce("state", fmt.Sprintf("the stored task state of %s is unreadable (%v); starting it afresh", a.persona.ID, err))
			a.task = task.State{}
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("load %s task state: %w", a.persona.ID, err)
	}
	a.closeDangling(ctx)
	// The status bar's tokens and cost continue from what the store counted.
	if totals, err := a.deps.Store.Usage(ctx, a.session, false); err == nil {
		for _, p := range totals.ByPersona {
			if p.Persona == a.persona.ID {
				a.usage, a.cost = p.Usage, p.Cost
			}
		}
	}
	sub, subCost := a.delegatedUsage(ctx) // sub-agents count, as they did live
	a.usage, a.cost = a.usage.Add(sub), a.cost+subCost
	if a.task.Active() && !a.task.Finished {
		// A note only: the task block at the end of every request carries
		// the task state, so no copy of it is written into the history.
		a.pendingResume = promptText(resumedNote)
	}
	return nil
}

// recallUntrusted marks the session as having read what its stored tool
// results hold in envelopes, so a resumed session's memory writes ask as
// they did before. Messages a summary replaced count too.
func (a *Agent) recallUntrusted(ctx context.Context) error {
	msgs := a.history
	if slices.ContainsFunc(msgs, func(m chat.Message) bool { return m.Kind == chat.KindSummary }) {
		all, err := a.deps.Store.AllMessages(ctx, a.session, a.persona.ID)
		if err != nil {
			return fmt.Errorf("load %s conversation: %w", a.persona.ID, err)
		}
		msgs = all
	}
	for _, m := range msgs {
		if m.Role != chat.Tool {
			continue
		}
		for _, src := range tools.EnvelopeSources(m.Content) {
			if src != earlierNote { // the harness quoting ERRORS.md, not a read
				a.team.readUntrusted(src)
			}
		}
	}
	return nil
}

// closeDangling answers tool calls that have no result (the process died
// between the call and its result).
func (a *Agent) closeDangling(ctx context.Context) {
	if window.Validate(a.history) == nil {
		return
	}
	// Find the last assistant message with tool calls and the results after it.
	for i := len(a.history) - 1; i >= 0; i-- {
		m := a.history[i]
		if m.Role != chat.Assistant || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for _, r := range a.history[i+1:] {
			if r.Role == chat.Tool {
				answered[r.ToolCallID] = true
			}
		}
		for _, tc := range m.ToolCalls {
			if !answered[tc.ID] {
				res := chat.ToolResult(tc, window.Interrupted+" (Polly stopped while it ran; check its effects before repeating it)")
				res.Kind = chat.KindNote
				res.Output = &chat.Output{Failed: true}
				a.append(ctx, res)
			}
		}
		break
	}
}

// BoundToolNames are the tools every agent binds itself (on top of the
// registry in Deps), so that config rules may name them.
func BoundToolNames() []string {
	names := []string{tools.TaskPlanTool(nil).Name(), (&Agent{}).delegateTool().Name()}
	for _, t := range tools.OutputTools(nil) {
		names = append(names, t.Name())
	}
	return names
}

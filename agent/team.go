package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"polly/agent/hooks"
	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/task"
	"polly/personas"
	"polly/tools"
)

// team tracks the sub-agents of one session: which agent ids are running
// (a second concurrent run of a persona gets "#2"), so checkpoints and
// events never collide, and what untrusted content any agent of the
// session has read.
type team struct {
	mu        sync.Mutex
	running   map[string]bool // agent ids in use
	untrusted []string        // sources of untrusted data read in this session, first maxSources
	readCount int             // how many distinct sources were read
}

// maxSources bounds the untrusted sources a session remembers by name.
const maxSources = 8

// readUntrusted records that the session read data from source.
func (t *team) readUntrusted(source string) {
	if source == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Contains(t.untrusted, source) {
		return
	}
	t.readCount++
	if len(t.untrusted) < maxSources {
		t.untrusted = append(t.untrusted, source)
	}
}

// untrustedRead lists the untrusted sources the session has read (nil:
// none), with "… N more" when there were more than maxSources.
func (t *team) untrustedRead() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.untrusted) == 0 {
		return nil
	}
	out := slices.Clone(t.untrusted)
	if more := t.readCount - len(out); more > 0 {
		out = append(out, fmt.Sprintf("… %d more", more))
	}
	return out
}

// claim returns a free agent id for a persona: "coder", then "coder#2"…
func (t *team) claim(persona string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running == nil {
		t.running = map[string]bool{}
	}
	id := persona
	for n := 2; t.running[id]; n++ {
		id = fmt.Sprintf("%s#%d", persona, n)
	}
	t.running[id] = true
	return id
}

func (t *team) release(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.running, id)
}

// DelegateResult is what delegate_task returns to the parent, as JSON.
type DelegateResult struct {
	Status       string     `json:"status"` // completed, failed, cancelled, max_turns
	Agent        string     `json:"agent"`  // agent id that ran, e.g. "web_scraper#2"
	Persona      string     `json:"persona"`
	Summary      string     `json:"summary"` // the sub-agent's final answer
	FilesTouched []string   `json:"files_touched"`
	Artifacts    []string   `json:"artifacts"` // files it created
	ToolCalls    int        `json:"tool_calls"`
	Usage        chat.Usage `json:"usage"`
	Cost         float64    `json:"cost_usd"`
	Transcript   string     `json:"transcript"` // the child session id holding its full transcript
	Error        string     `json:"error,omitempty"`
}

type delegateArgs struct {
	Agent   string `json:"agent" jsonschema:"the specialist to run: persona id or name (web_scraper/scraper, coder, b2b_leadgen/leadgen)"`
	Task    string `json:"task" jsonschema:"what to do, concrete and self-contained, with the expected result"`
	Context string `json:"context,omitempty" jsonschema:"everything the specialist needs that is not in the task: paths, URLs, constraints, what was already tried (it starts with a fresh context)"`
}

// summaryCap bounds the final answer a child hands back to its parent.
const summaryCap = 6000

// delegateTool is delegate_task bound to a parent agent.
func (a *Agent) delegateTool() tools.Tool {
	return tools.New("delegate_task", tools.Describe(descriptions, "delegate_task", nil)+a.addedSpecialists(),
		func(ctx context.Context, args delegateArgs) (tools.Result, error) {
			return a.delegate(ctx, args)
		}, nil)
}

// delegate runs one sub-agent to completion and reports its result. A
// child's failure is a failed result, never an error of the parent's loop.
func (a *Agent) delegate(ctx context.Context, args delegateArgs) (tools.Result, error) {
	p, ok := a.deps.Personas.Find(strings.TrimSpace(args.Agent))
	if !ok {
		return tools.Result{}, fmt.Errorf("unknown agent %q. Valid agents: %s", args.Agent, a.validAgents())
	}
	if p.ID == a.persona.ID {
		return tools.Result{}, fmt.Errorf("%s cannot delegate to itself; do the work directly or pick a specialist: %s", p.ID, a.validAgents())
	}
	if strings.TrimSpace(args.Task) == "" {
		return tools.Result{}, fmt.Errorf("task is empty; say what %s should do and what result you expect", p.Name)
	}
	child := newAgent(a.root, p, "", a.id, "", nil, a.team, a.depth+1)
	if err := child.bind(); err != nil {
		return tools.Result{}, err
	}
	id := a.team.claim(p.ID)
	defer a.team.release(id)
	child.id = id

	childSession := ""
	if a.deps.Store != nil {
		sess, err := a.deps.Store.CreateSession(context.WithoutCancel(ctx), store.Session{ParentID: a.session, Persona: p.ID,
			Title: args.Task, Model: child.model(), Status: store.StatusActive})
		if err != nil {
			return tools.Result{}, fmt.Errorf("start %s: %w", p.Name, err)
		}
		childSession = sess.ID
	}
	start := time.Now()
	callID := callIDFrom(ctx)
	a.send(SubAgentStarted{Header: a.childHeader(id, p), CallID: callID, Task: args.Task, ChildSession: childSession, Model: child.model()})

	child.session = childSession
	child.mainSession = a.mainSessionID()
	child.turn = a.turn // its edits are undone with the turn that asked for them
	child.emit = a.progressRelay(child, start)
	defer child.closeTranscript()
	if res := child.hook(ctx, hooks.Input{HookEventName: hooks.SubagentStart}, p.ID); len(res.Context) > 0 {
		child.pendingHookContext = "[SubagentStart hook output]\n" + strings.Join(res.Context, "\n\n")
	}

	out, err := child.Run(ctx, childPrompt(a.persona, args))
	res := DelegateResult{Status: out.Reason, Agent: id, Persona: p.ID, Summary: task.Clip(out.Final, summaryCap),
		FilesTouched: child.task.Files, Artifacts: child.created, ToolCalls: child.task.ToolCalls, Usage: child.usage,
		Cost: child.cost, Transcript: childSession}
	if err != nil {
		res.Error = err.Error()
		if res.Status == "error" {
			res.Status = "failed"
		}
	}
	if res.FilesTouched == nil {
		res.FilesTouched = []string{}
	}
	if res.Artifacts == nil {
		res.Artifacts = []string{}
	}
	if a.deps.Store != nil && childSession != "" {
		status := store.StatusDone
		if res.Status != "completed" {
			status = store.StatusFailed
		}
		_ = a.deps.Store.SetSessionStatus(context.WithoutCancel(ctx), childSession, status)
	}
	a.send(SubAgentFinished{Header: a.childHeader(id, p), CallID: callID, Status: res.Status, Summary: task.Clip(out.Final, 500),
		Elapsed: time.Since(start), ToolCalls: res.ToolCalls, Usage: res.Usage, Cost: res.Cost, ChildSession: childSession})

	b, jerr := json.MarshalIndent(res, "", "  ")
	if jerr != nil {
		return tools.Result{}, fmt.Errorf("encode result: %w", jerr)
	}
	return tools.Result{Output: string(b), IsError: res.Status != "completed", Files: res.FilesTouched, Created: res.Artifacts,
		Meta: map[string]any{"subagent": res}}, nil
}

// childHeader stamps events about a child with the child's identity.
func (a *Agent) childHeader(id string, p personas.Persona) Header {
	return Header{Session: a.session, Agent: id, Persona: p.ID, Parent: a.id, Time: a.deps.now()}
}

// progressRelay forwards a child's own events and adds its live line.
func (a *Agent) progressRelay(child *Agent, start time.Time) func(Event) {
	var mu sync.Mutex
	tool, brief := "", ""
	calls := 0
	var usage chat.Usage
	var cost float64
	return func(e Event) {
		a.send(e)
		mu.Lock()
		switch e := e.(type) {
		case ToolStarted:
			tool, brief = e.Tool, e.Brief
		case ToolFinished:
			tool, brief = "", ""
			calls++
		case Usage:
			usage = usage.Add(e.Usage)
			cost += e.Cost
		default:
			mu.Unlock()
			return
		}
		p := SubAgentProgress{Header: e.Head(), Tool: tool, Brief: brief, Elapsed: time.Since(start), ToolCalls: calls, Usage: usage, Cost: cost}
		mu.Unlock()
		a.send(p)
	}
}

// childPrompt is the sub-agent's first message (prompts/subagent_task.md).
func childPrompt(parent personas.Persona, args delegateArgs) string {
	var b strings.Builder
	err := subagentTask().Execute(&b, struct{ Parent, Task, Context string }{
		parent.Name, strings.TrimSpace(args.Task), strings.TrimSpace(args.Context)})
	if err != nil {
		panic(fmt.Sprintf("prompts/subagent_task.md: %v", err)) // the fields are fixed: a broken template file
	}
	return promptText(b.String())
}

// addedSpecialists names the personas the user added (persona files,
// .claude/agents/*.md…), which the built-in prompts cannot know, with what
// each is for: "" when there are none.
func (a *Agent) addedSpecialists() string {
	if a.deps == nil || a.deps.Personas == nil {
		return ""
	}
	var lines []string
	for _, p := range a.deps.Personas.All() {
		if p.Source == personas.BuiltinSource || p.ID == a.persona.ID {
			continue
		}
		line := "- " + p.ID
		if d := strings.TrimSpace(p.Description); d != "" {
			line += ": " + task.Clip(d, 200)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return ""
	}
	return "\nMore specialists (agent = the id):\n" + strings.Join(lines, "\n")
}

func (a *Agent) validAgents() string {
	var names []string
	for _, p := range a.deps.Personas.All() {
		if p.ID != a.persona.ID {
			names = append(names, fmt.Sprintf("%s (%s)", p.ID, p.Name))
		}
	}
	return strings.Join(names, ", ")
}

type callIDKey struct{}

// callIDFrom returns the id of the tool call being run, for events.
func callIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// runParallel runs consecutive delegate_task calls at once (bounded by
// MaxParallel) and returns their results in call order.
func (a *Agent) runParallel(ctx context.Context, calls []chat.ToolCall) []timedResult {
	limit := a.deps.MaxParallel
	if limit <= 0 {
		limit = 4
	}
	sem := make(chan struct{}, limit)
	results := make([]timedResult, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		a.send(ToolStarted{Header: a.header(), CallID: call.ID, Tool: call.Name, Args: call.Arguments, Brief: call.Brief()})
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i] = timedResult{res: tools.Result{Output: "cancelled before it started", IsError: true}}
				return
			}
			defer func() { <-sem }()
			start := time.Now()
			ran, res := a.execute(ctx, a.callContext(ctx, call), call, nil)
			results[i] = timedResult{call: ran, res: res, dur: time.Since(start)}
		}()
	}
	wg.Wait()
	return results
}

type timedResult struct {
	call chat.ToolCall // as it ran (a PreToolUse hook may rewrite it); zero when it never started
	res  tools.Result
	dur  time.Duration
}

// canDelegate reports whether this agent gets delegate_task: its persona
// allows it and the team's depth limit is not reached.
func canDelegate(deps *Deps, p personas.Persona, depth int) bool {
	maxDepth := deps.MaxDepth
	if maxDepth == 0 {
		maxDepth = 1
	}
	return depth < maxDepth && (p.Tools == nil || slices.Contains(p.Tools, "delegate_task"))
}

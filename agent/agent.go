// Package agent runs Polly's personas: the step loop (prepare the context,
// stream a reply, run its tool calls, store everything, repeat), the
// sessions that hold one conversation per persona, and the team
// (delegate_task). It emits one typed event stream that the headless
// printer and the TUI both consume, and knows nothing about either.
package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"polly/agent/hooks"
	"polly/agent/llm"
	"polly/agent/redact"
	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/task"
	"polly/memory/tokens"
	"polly/memory/window"
	"polly/personas"
	"polly/tools"
	"polly/workspace"
)

// ErrMaxTurns ends a run that used its turn budget without a final answer.
var ErrMaxTurns = errors.New("stopped after the maximum number of turns without a final answer")

// ErrLoop ends a run whose model kept making the same call with the same
// result (the loop detector; there is no turn cap by default).
var ErrLoop = errors.New("stopped: the model is repeating itself")

// Model describes the model an agent talks to.
type Model struct {
	Name          string
	Provider      string   // the configured provider it is reached through; "" when not known
	ContextWindow int      // tokens; 0 when unknown
	MaxOutput     int      // tokens reserved for (and sent as) the reply's max; 0: not sent, 4,096 reserved
	SafetyMargin  int      // tokens kept free for estimate errors; 0: 2% of the window
	InputPrice    float64  // USD per 1M prompt tokens; 0 when unknown
	OutputPrice   float64  // USD per 1M completion tokens
	CachedPrice   float64  // USD per 1M cached prompt tokens; 0 = InputPrice
	Tools         []string // the only tools this model is given (MCP ones by pattern); nil: every tool
}

// Cost prices a usage; 0 when prices are unknown.
func (m Model) Cost(u chat.Usage) float64 {
	if m.InputPrice == 0 && m.OutputPrice == 0 {
		return 0
	}
	cached := m.CachedPrice
	if cached == 0 {
		cached = m.InputPrice
	}
	fresh := u.PromptTokens - u.CachedTokens
	return (float64(fresh)*m.InputPrice + float64(u.CachedTokens)*cached + float64(u.CompletionTokens)*m.OutputPrice) / 1e6
}

// HasPrices reports whether costs can be computed.
func (m Model) HasPrices() bool { return m.InputPrice != 0 || m.OutputPrice != 0 }

// PromptSource assembles the system prompt for a persona; it is called
// before every request so edits to the workspace files take effect.
type PromptSource interface {
	SystemPrompt(p personas.Persona) (string, error)
}

// PromptParts is a PromptSource that also says how many bytes of the
// prompt it built come from the workspace memory files (MEMORY.md,
// learnings, daily logs), for the token breakdown of `polly inspect` and
// /context.
type PromptParts interface {
	SystemPromptParts(p personas.Persona) (text string, memoryBytes int, err error)
}

// Journal is where the harness itself writes what happened: the daily log
// entry when a task ends, and errors the model recovered from (the
// workspace memory implements it).
type Journal interface {
	LogTaskEnd(t workspace.TaskEntry) (string, error)
	LogToolError(p workspace.Provenance, tool, brief, errText, fix string) (string, error)
}

// FactStore keeps the durable facts summaries extract (the workspace's
// MEMORY.md "Learned" sections). LearnEdit builds the write (added lists
// the new facts once it is previewed or applied); the permission gate
// sees its diff before Apply makes it.
type FactStore interface {
	LearnEdit(p workspace.Provenance, facts []string) (e workspace.Edit, added *[]string)
	Preview(e workspace.Edit) (before, after string, err error)
	Apply(e workspace.Edit) (string, error)
}

// ToolSource provides tools that appear while Polly runs (MCP servers that
// finish starting); Generation changes whenever Tools would.
type ToolSource interface {
	Generation() uint64
	Tools() []tools.Tool
}

// SessionOwner tells the sessions this install made in this project from
// the others (agent/owner.Checker): a shipped or copied store is data, not
// a conversation to continue or files to restore. Check returns nil for an
// own session and an error saying what the session is otherwise.
type SessionOwner interface {
	Check(s store.Session) error
}

// Deps are the long-lived parts every agent of a process shares.
type Deps struct {
	Store    *store.Store
	Owner    SessionOwner // required to resume a stored session
	LLM      llm.Streamer
	Tools    *tools.Registry // the shared tools; agents add their own bound tools
	Prompts  PromptSource
	Journal  Journal          // nil: no daily log or learnings
	Facts    FactStore        // nil: durable facts from summaries are not kept
	Limits   LimitStore       // learned context limits; nil: kept in memory for this process
	Redactor *redact.Redactor // API keys in any encoding: hidden from tool outputs before they are stored or sent; nil hides nothing
	Personas *personas.Set
	Model    Model
	Context  window.Settings
	Gate     tools.Gate
	Hooks    *hooks.Set // nil: no hooks
	Extra    ToolSource // tools that come and go (MCP servers); nil: none
	Mode     string     // the permission mode, for hooks' permission_mode
	// NotifyAfter: a turn that ran at least this long fires the
	// Notification hooks (idle_prompt) when it ends; 0: every turn.
	NotifyAfter time.Duration
	ProjectDir  string // tools resolve relative paths here
	StateDir    string // .agent: checkpoints and archives
	MaxTurns    int    // 0: no cap
	// MaxParallel bounds sub-agents running at once (0: 4). MaxDepth is how
	// many levels of sub-agents may exist below the agent the user talks to
	// (0: 1, so sub-agents cannot delegate; negative: no delegation at all).
	MaxParallel int
	MaxDepth    int
	Now         func() time.Time
	// KillPoint, when set, is called at each named point of the summary
	// swap; kill -9 tests end the process there. nil in normal runs.
	KillPoint func(point string)

	// Models resolves each persona's model (nil: all use LLM, Model and
	// Context above).
	Models ModelResolver
}

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Outcome is how a run ended.
type Outcome struct {
	Reason    string // completed, max_turns, cancelled, error, blocked (by a UserPromptSubmit hook), stopped (a hook's "continue": false)
	Final     string // the last assistant text
	Turns     int
	ToolCalls int
	Usage     chat.Usage
	Cost      float64
}

// Agent is one persona's conversation inside a session.
type Agent struct {
	deps    *Deps  // root with this agent's model bound (see bind)
	root    *Deps  // the shared deps, for sub-agents and rebinding
	id      string // agent instance id: persona id, "coder#2" for a second concurrent run
	persona personas.Persona
	session string
	parent  string // parent agent id for sub-agents
	emit    func(Event)

	history  []chat.Message // live conversation, without the system prompt
	task     task.State
	counter  tokens.Counter
	calib    tokens.Calibration
	usage    chat.Usage
	cost     float64
	registry *tools.Registry
	allowed  []string
	bound    []tools.Tool    // the tools bound to this agent (task_plan, delegate_task…)
	extraGen uint64          // the ToolSource generation the registry was built from
	deferred *deferredTools  // MCP tools held back until a search loads them; nil when all are sent
	warned   map[string]bool // warnings already shown once
	toolTok  int             // cached token estimate of the tool schemas

	retrySummaryAt     int    // after a rejected summary: context size at which to try again
	sysText            string // the last system prompt and its token count
	sysTok             int
	sysBase, sysFull   string                 // the last assembled prompt, and it with the untrusted-data rule
	memText            string                 // the last system prompt assembled…
	memBytes           int                    // … and its bytes from the workspace memory files (PromptParts)
	hashedText, hashed string                 // the last system prompt hashed for a request record, and its hash
	toolsJSON          string                 // the tool set as sent, as JSON, for request records
	toolsHash          string                 //
	toolsFor           []llm.ToolSpec         // the specs toolsJSON was made from
	textsSaved         map[string]bool        // hashes of the prompt and tool texts already sent to the store with a record
	toolSpecs          []llm.ToolSpec         // built once
	wire               *llm.WireCache         // the encoded messages and tools of the last request, reused by the next
	recordEntries      int                    // entries of the last request record
	recordPrev         store.RecordedMessages // the messages of the last main request's record…
	recordSeq          uint64                 // … and that request's number on the wire cache
	recordJSON         []byte                 // the last main record's messages as JSON…
	recordEnds         []int                  // … and where each of its entries ends in it
	pendingCalls       []store.LLMCall        // model calls accounted, stored with the next write
	savedState         []byte                 // the task state as this agent last stored it
	checkpointed       checkpointMark         // the checkpoint this agent last wrote
	pendingHandoff     string                 // a handoff card to give with the next user message
	pendingResume      string                 // the checkpoint of an interrupted task, given with the next user message
	lastContext        int                    // tokens of the last context sent
	lastThreshold      int                    // the summarization threshold of the last context built
	lastBlock          string                 // the task block of the last request
	ctxBuf             []chat.Message         // the last context's array, overwritten by the next (window.Input.Reuse)
	argsChecked        window.ArgsMemo        // tool-call arguments known to be valid JSON (window.Input.Checked)
	failures           map[string]failure     // failed calls by operation (tool + key arguments), until it succeeds
	team               *team                  // the session's running agents
	depth              int                    // 0 for the agent the user talks to
	created            []string               // files this agent created (artifacts)
	loop               loopState              // identical calls in a row, this run
	run                runNotes               // what the current Run did, for its daily-log entry
	turn               turnRef                // the user turn its file changes belong to (a sub-agent's is its parent's)
	pendingHookContext string                 // what SessionStart and UserPromptSubmit hooks added, given after the prompt
	streamed           strings.Builder        // the text of the reply streaming now, kept if the user cancels it
	hookMu             sync.Mutex             // guards hookStop
	hookStop           string                 // a hook's "continue": false (its stopReason): the run ends at the next check
	mainSession        string                 // a sub-agent's: the session the user talks in (hooks' session_id); "": its own
	transcript         *os.File               // the JSONL export hooks read (transcript_path); nil until first written
	transcriptOff      bool                   // the export failed once: not tried again
}

// header stamps an event.
func (a *Agent) header() Header {
	return Header{Session: a.session, Agent: a.id, Persona: a.persona.ID, Parent: a.parent, Time: a.deps.now()}
}

func (a *Agent) send(e Event) {
	if a.emit != nil {
		a.emit(e)
	}
}

// warnOnce shows a warning the first time a kind of problem happens, so a
// broken disk does not flood the screen but is never silent.
func (a *Agent) warnOnce(key, text string) {
	if a.warned == nil {
		a.warned = map[string]bool{}
	}
	if a.warned[key] {
		return
	}
	a.warned[key] = true
	a.send(Notice{Header: a.header(), Level: "warn", Text: text})
}

// ID is the agent instance id.
func (a *Agent) ID() string { return a.id }

// Persona is the persona this agent speaks as.
func (a *Agent) Persona() personas.Persona { return a.persona }

// Task returns a copy of the task state.
func (a *Agent) Task() task.State { return a.task }

// History returns a copy of the live conversation.
func (a *Agent) History() []chat.Message { return append([]chat.Message(nil), a.history...) }

// Usage returns the tokens and cost this agent has used.
func (a *Agent) Usage() (chat.Usage, float64) { return a.usage, a.cost }

// append stores a completed message, then adds it to the live history. A
// store failure is shown once and the run goes on in memory.
func (a *Agent) append(ctx context.Context, m chat.Message) chat.Message {
	if m.Tokens == 0 {
		m.Tokens = tokens.Message(a.counter, m)
	}
	if a.deps.Store != nil {
		if !a.storeBatch(ctx, func(ctx context.Context) {
			stored, err := a.deps.Store.AppendMessage(ctx, a.session, a.persona.ID, m)
			if err != nil {
				a.warnOnce("store", fmt.Sprintf("could not save to %s: %v — the run goes on, but this part of the session will not be resumable", a.deps.StateDir, err))
			} else {
				m = stored
			}
		}) {
			m.ID = 0 // not committed after all
		}
	}
	a.history = append(a.history, m)
	a.exportMessage(m)
	return m
}

// Run sends one user message and works until the model answers without
// tool calls, the turn budget runs out, or ctx is cancelled.
func (a *Agent) Run(ctx context.Context, prompt string) (out Outcome, err error) {
	start := a.usage
	startCost := a.cost
	startCalls := a.task.ToolCalls
	defer func() {
		out.Usage = subUsage(a.usage, start)
		out.Cost = a.cost - startCost
		out.ToolCalls = a.task.ToolCalls - startCalls
		a.finish(ctx, prompt, out, err)
	}()

	a.run = runNotes{}
	a.takeHookStop()
	if a.task.IsNewTask(prompt) {
		if a.task.Active() {
			a.checkpoint(ctx, "end")
			a.closeTask(ctx)
		}
		a.task.Begin(prompt, a.deps.now())
		a.task.RequestID = a.storeLongText(ctx, prompt, "user_request")
	} else {
		a.task.FollowUp(prompt)
		a.task.SetLastFollowUpID(a.storeLongText(ctx, prompt, "user_follow_up"))
	}
	startCalls = a.task.ToolCalls // a new task starts counting from 0
	// Mark the task as running before anything else is stored: a crash from
	// here on leaves Finished false, and the next start resumes it.
	a.task.Finished = false
	a.saveState(ctx)
	if a.pendingResume != "" {
		a.append(ctx, chat.Message{Role: chat.User, Kind: chat.KindResume, Content: a.pendingResume})
		a.pendingResume = ""
		// active_task.md may hold another session's task since: this
		// task's checkpoint is current again.
		a.checkpoint(ctx, "resume")
	}
	if a.pendingHandoff != "" {
		a.append(ctx, chat.Message{Role: chat.User, Kind: chat.KindHandoff, Content: a.pendingHandoff})
		a.pendingHandoff = ""
	}
	a.beginTurn(ctx, a.append(ctx, a.userMessage(ctx, prompt)))
	if a.pendingHookContext != "" {
		a.append(ctx, chat.Message{Role: chat.User, Kind: chat.KindNote, Content: a.pendingHookContext})
		a.pendingHookContext = ""
	}

	maxTurns := a.deps.MaxTurns
	a.loop = loopState{}
	stopContinues := 0
	for turn := 1; ; turn++ {
		if maxTurns > 0 && turn > maxTurns {
			out.Reason = "max_turns"
			return out, ErrMaxTurns
		}
		out.Turns = turn
		a.deliverAsync(ctx)
		resp, err := a.step(ctx)
		if err != nil {
			if ctx.Err() != nil || llm.KindOf(err) == llm.KindCanceled {
				a.keepPartial(ctx)
				out.Reason = "cancelled"
				return out, context.Canceled
			}
			out.Reason = "error"
			return out, err
		}
		msg := a.append(ctx, resp.Message)
		a.task.Observe(msg.Content)
		a.send(MessageDone{Header: a.header(), Message: msg})
		if strings.TrimSpace(msg.Content) != "" {
			out.Final = msg.Content
		}
		if len(msg.ToolCalls) == 0 {
			if a.stopHooks(ctx, stopContinues, msg.Content) {
				stopContinues++
				continue
			}
			if stop := a.takeHookStop(); stop != "" {
				out.Reason = "stopped"
				a.send(Notice{Header: a.header(), Level: "warn", Text: "stopped by a hook: " + stop})
				return out, nil
			}
			out.Reason = "completed"
			return out, nil
		}
		a.runTools(ctx, msg.ToolCalls)
		a.saveState(ctx)
		if ctx.Err() != nil {
			out.Reason = "cancelled"
			return out, context.Canceled
		}
		if stop := a.takeHookStop(); stop != "" {
			out.Reason = "stopped"
			a.send(Notice{Header: a.header(), Level: "warn", Text: "stopped by a hook: " + stop})
			return out, nil
		}
		if a.loop.stopped != "" {
			out.Reason = "loop"
			return out, fmt.Errorf("%w: %s", ErrLoop, a.loop.stopped)
		}
	}
}

// storeLongText keeps a user text too long for the task block whole in
// tool_executions, so read_tool_output(id) reads it; 0 when it is short or
// there is no store.
func (a *Agent) storeLongText(ctx context.Context, text, kind string) int64 {
	if a.deps.Store == nil || len(text) <= a.settings().RequestChars {
		return 0
	}
	id, err := a.deps.Store.SaveToolExecution(context.WithoutCancel(ctx), store.ToolExecution{
		SessionID: a.session, Persona: a.persona.ID, Tool: kind, Arguments: "{}", Output: text, Status: store.ExecOK,
	})
	if err != nil {
		a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
		return 0
	}
	return id
}

// closeTask ends the previous task at a task boundary: its summaries leave
// the live conversation (they stay in the summaries table), so the new
// task never sees them as current or merges them.
func (a *Agent) closeTask(ctx context.Context) {
	var ids []int64
	kept := a.history[:0]
	for _, m := range a.history {
		if m.Kind == chat.KindSummary {
			if m.ID != 0 {
				ids = append(ids, m.ID)
			}
			continue
		}
		kept = append(kept, m)
	}
	a.history = kept
	if a.deps.Store == nil {
		return
	}
	// The summary rows keep the text; only their place in the live
	// conversation goes.
	for _, id := range ids {
		if err := a.deps.Store.DeleteMessage(context.WithoutCancel(ctx), id); err != nil {
			a.warnOnce("store", fmt.Sprintf("could not store the task boundary: %v", err))
		}
	}
}

// finish closes a run: task state, checkpoint, the harness's daily-log
// entry, events.
func (a *Agent) finish(ctx context.Context, prompt string, out Outcome, err error) {
	a.task.Finished = out.Reason == "completed"
	a.task.LastReplyAsked = strings.HasSuffix(strings.TrimSpace(out.Final), "?")
	a.saveState(ctx)
	a.checkpoint(ctx, "end")
	a.logTaskEnd(prompt, out, err)
	if out.Reason == "loop" {
		a.send(Notice{Header: a.header(), Level: "warn", Text: err.Error() + "; send a message to go on differently"})
	}
	if err != nil && out.Reason == "error" {
		ev := ErrorEvent{Header: a.header(), Kind: llm.KindOf(err).String(), Message: err.Error(), Hint: hint(err)}
		a.send(ev)
	}
	a.send(Done{Header: a.header(), Reason: out.Reason, Final: out.Final, Turns: out.Turns, ToolCalls: out.ToolCalls, Usage: out.Usage, Cost: out.Cost})
}

func subUsage(a, b chat.Usage) chat.Usage {
	return chat.Usage{PromptTokens: a.PromptTokens - b.PromptTokens, CompletionTokens: a.CompletionTokens - b.CompletionTokens, CachedTokens: a.CachedTokens - b.CachedTokens}
}

// hint tells the user what to do about a provider error.
func hint(err error) string {
	switch llm.KindOf(err) {
	case llm.KindAuth:
		return "check the API key: set OPENAI_API_KEY or --api-key (polly config shows where the key comes from)"
	case llm.KindRateLimit:
		return "the provider is rate limiting; wait a minute and resume with --continue"
	case llm.KindNetwork:
		return "the endpoint is unreachable; check --base-url / OPENAI_BASE_URL and that the server is running"
	case llm.KindContextLength:
		return "the conversation is too long for this model even after compaction; start a new session or use a model with a bigger window"
	case llm.KindServer, llm.KindStream:
		return "the provider failed; try again with --continue (nothing before this point was lost)"
	case llm.KindBadRequest:
		return "the provider rejected the request; check the model name (polly config)"
	}
	return ""
}

// logTaskEnd writes the harness's entry to today's daily log, so the log
// exists even when the model forgets to write one. A run that did no work
// (no tool calls besides lookups: a greeting, a question answered from
// memory) leaves no entry unless the model saved something to memory.
func (a *Agent) logTaskEnd(prompt string, out Outcome, err error) {
	if a.deps.Journal == nil || (!a.run.worked && !a.run.saved) {
		return
	}
	asked := prompt
	if a.task.OriginalRequest != "" && a.task.OriginalRequest != prompt {
		asked = a.task.OriginalRequest + " — follow-up: " + prompt
	}
	outcome := out.Reason
	if out.Final != "" {
		outcome += ": " + out.Final
	} else if err != nil {
		outcome += ": " + err.Error()
	}
	if _, jerr := a.deps.Journal.LogTaskEnd(workspace.TaskEntry{
		Persona: a.persona.Name, Asked: asked, Outcome: outcome, Files: a.task.Files, ToolCalls: out.ToolCalls, Session: a.session,
		Provenance: a.provenance(),
	}); jerr != nil {
		a.warnOnce("journal", fmt.Sprintf("could not write the daily log: %v", jerr))
	}
}

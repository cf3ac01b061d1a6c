package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"polly/agent/hooks"
	"polly/memory/chat"
	"polly/tools"
	"polly/tools/permission"
)

// HookRan is one hook that ran (a small line in the transcript, a "hook"
// event in stream-json).
type HookRan struct {
	Header
	hooks.Run
}

func (HookRan) Type() string { return "hook" }

// maxStopContinues bounds how often Stop hooks may send the agent back to
// work within one run, so two hooks cannot keep it busy for ever (Claude
// Code ends the turn after 8 consecutive blocks).
const maxStopContinues = 8

// hook fires an event's hooks for this agent and reports every run. Hooks
// that failed or timed out are shown as warnings; they never stop a run.
// A "continue": false is kept in a.hookStop for the loop to act on.
func (a *Agent) hook(ctx context.Context, in hooks.Input, names ...string) hooks.Result {
	if !a.deps.Hooks.Has(in.HookEventName) {
		return hooks.Result{}
	}
	a.fillHookInput(&in)
	res := a.deps.Hooks.Fire(ctx, in, names...)
	a.reportHooks(res.Runs, res.Messages)
	if res.Stop {
		a.setHookStop(res.StopReason)
	}
	return res
}

// setHookStop records a "continue": false; parallel delegate_task calls
// may fire hooks at once.
func (a *Agent) setHookStop(reason string) {
	a.hookMu.Lock()
	defer a.hookMu.Unlock()
	a.hookStop = reason
}

// takeHookStop returns and clears the recorded stop reason.
func (a *Agent) takeHookStop() string {
	a.hookMu.Lock()
	defer a.hookMu.Unlock()
	r := a.hookStop
	a.hookStop = ""
	return r
}

// fillHookInput sets the fields every event carries.
func (a *Agent) fillHookInput(in *hooks.Input) {
	main := a.mainSessionID()
	in.SessionID, in.TranscriptPath = main, TranscriptPath(a.deps.StateDir, main)
	mode := a.deps.Mode
	if m, ok := a.deps.Gate.(interface{ CurrentMode() permission.Mode }); ok {
		mode = string(m.CurrentMode()) // switched in the TUI since the start
	}
	in.Cwd, in.PermissionMode = a.deps.ProjectDir, claudeMode(mode)
	if a.depth > 0 {
		in.AgentID, in.AgentType = a.id, a.persona.ID
		if in.HookEventName == hooks.SubagentStop {
			in.AgentTranscriptPath = TranscriptPath(a.deps.StateDir, a.session)
		}
	}
}

// mainSessionID is the session the user talks in (a sub-agent's parent's).
func (a *Agent) mainSessionID() string {
	if a.mainSession != "" {
		return a.mainSession
	}
	return a.session
}

func (a *Agent) reportHooks(runs []hooks.Run, messages []string) {
	for _, r := range runs {
		a.send(HookRan{Header: a.header(), Run: r})
		if r.Outcome == "warning" || r.Outcome == "timeout" {
			a.send(Notice{Header: a.header(), Level: "warn", Text: fmt.Sprintf("%s hook `%s`: %s (ignored; the run goes on)", r.Event, r.Command, r.Message)})
		}
	}
	for _, m := range messages {
		a.send(Notice{Header: a.header(), Level: "info", Text: "hook: " + m})
	}
}

// deliverAsync hands what finished async hooks said to the model (their
// additionalContext) and to the user (their systemMessage), before the
// next request.
func (a *Agent) deliverAsync(ctx context.Context) {
	for _, d := range a.deps.Hooks.TakeAsync() {
		a.reportHooks([]hooks.Run{d.Run}, d.Messages)
		if len(d.Context) > 0 {
			a.append(ctx, chat.Message{Role: chat.User, Kind: chat.KindNote,
				Content: fmt.Sprintf("[%s hook, finished in the background]\n%s", d.Run.Event, strings.Join(d.Context, "\n\n"))})
		}
	}
}

// argsJSON is a call's arguments as JSON for a hook's tool_input (a
// string when the model sent invalid JSON).
func argsJSON(call chat.ToolCall) json.RawMessage {
	raw := strings.TrimSpace(call.Arguments)
	if raw == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(raw)) {
		return json.RawMessage(raw)
	}
	b, _ := json.Marshal(raw)
	return b
}

// preToolUse runs the PreToolUse hooks of a call. blocked is the result to
// record instead of running it. Otherwise call is the call to run (with a
// hook's updatedInput applied), ctx carries the hooks' permission
// decision to the gate, and notes is their additionalContext, to put next
// to the result.
func (a *Agent) preToolUse(ctx context.Context, call chat.ToolCall) (context.Context, chat.ToolCall, *tools.Result, string) {
	if !a.deps.Hooks.Has(hooks.PreToolUse) {
		return ctx, call, nil, ""
	}
	cc := toClaude(call, a.deps.ProjectDir)
	res := a.hook(ctx, hooks.Input{HookEventName: hooks.PreToolUse, ToolName: cc.name, ToolInput: cc.input, ToolUseID: call.ID}, cc.names...)
	notes := hookNotes(hooks.PreToolUse, res.Context)
	switch {
	case res.Block:
		return ctx, call, &tools.Result{Output: "permission denied by a PreToolUse hook: " + res.Reason + notes, IsError: true}, ""
	case res.Stop:
		return ctx, call, &tools.Result{Output: "not run: a PreToolUse hook stopped the run" + notes, IsError: true}, ""
	}
	if res.UpdatedInput != nil {
		args, err := fromClaude(call.Name, res.UpdatedInput)
		if err != nil {
			a.send(Notice{Header: a.header(), Level: "warn", Text: "a PreToolUse hook's updatedInput was ignored: " + err.Error()})
		} else {
			call.Arguments = args
		}
	}
	if res.Permission != "" {
		ctx = tools.WithHookDecision(ctx, res.Permission)
	}
	return ctx, call, nil, notes
}

// hookNotes renders additionalContext to put after a tool's result.
func hookNotes(event string, context []string) string {
	var b strings.Builder
	for _, c := range context {
		fmt.Fprintf(&b, "\n\n[%s hook] %s", event, c)
	}
	return b.String()
}

// postToolUse gives a call that ran to the PostToolUse hooks (or, when it
// failed, PostToolUseFailure); what they say is added to the result for
// the model. A call that never ran (denied, invalid) fires neither.
func (a *Agent) postToolUse(ctx context.Context, call chat.ToolCall, r tools.Result, dur time.Duration) tools.Result {
	event := hooks.PostToolUse
	if r.IsError {
		event = hooks.PostToolUseFailure
	}
	if !a.deps.Hooks.Has(event) {
		return r
	}
	cc := toClaude(call, a.deps.ProjectDir)
	ms := dur.Milliseconds()
	in := hooks.Input{HookEventName: event, ToolName: cc.name, ToolInput: cc.input, ToolUseID: call.ID, DurationMS: &ms}
	if r.IsError {
		interrupted := ctx.Err() != nil
		in.Error, in.IsInterrupt = claudeError(r), &interrupted
	} else {
		in.ToolResponse = claudeResponse(call, cc, r)
	}
	res := a.hook(ctx, in, cc.names...)
	var notes []string
	if res.Block {
		notes = append(notes, res.Reason)
	}
	notes = append(notes, res.Context...)
	r.Output = strings.TrimRight(r.Output, "\n") + hookNotes(event, notes)
	return r
}

// stopHooks asks the Stop (or SubagentStop) hooks whether the agent may
// stop; a block (or additionalContext) sends it back to work with the
// reason, unless a hook said "continue": false.
func (a *Agent) stopHooks(ctx context.Context, continues int, final string) bool {
	ev := hooks.Stop
	if a.depth > 0 {
		ev = hooks.SubagentStop
	}
	if !a.deps.Hooks.Has(ev) {
		return false
	}
	if continues >= maxStopContinues {
		a.send(Notice{Header: a.header(), Level: "warn", Text: fmt.Sprintf("%s hooks sent the agent back %d times; stopping anyway", ev, continues)})
		return false
	}
	active := continues > 0
	var names []string // Stop has no matcher; SubagentStop matches the agent type
	if a.depth > 0 {
		names = []string{a.persona.ID}
	}
	res := a.hook(ctx, hooks.Input{HookEventName: ev, StopHookActive: &active, LastAssistantMessage: &final}, names...)
	if res.Stop || (!res.Block && len(res.Context) == 0) {
		return false
	}
	var parts []string
	if res.Block {
		parts = append(parts, "Do not stop yet: "+res.Reason)
	}
	parts = append(parts, res.Context...)
	a.append(ctx, chat.Message{Role: chat.User, Kind: chat.KindNote, Content: "[" + ev + " hook] " + strings.Join(parts, "\n\n")})
	return true
}

// admit runs the SessionStart hooks (first message of the session) and the
// UserPromptSubmit hooks for a user's message, before anything is stored.
// A blocked prompt is dropped: it is not stored, not even as the session
// title, and the model is not called. The hooks get the id the session
// will have (reserved now, created with the first stored message).
func (s *Session) admit(ctx context.Context, a *Agent, prompt string) (blocked bool) {
	if !a.deps.Hooks.Has(hooks.SessionStart) && !a.deps.Hooks.Has(hooks.UserPromptSubmit) {
		return false
	}
	a.session = s.reserveID()
	var notes []string
	s.mu.Lock()
	first := !s.started
	s.started = true
	s.mu.Unlock()
	if first {
		source := "startup"
		switch {
		case s.resumed:
			source = "resume"
		case s.source != "":
			source = s.source
		}
		res := a.hook(ctx, hooks.Input{HookEventName: hooks.SessionStart, Source: source, Model: a.model()}, source)
		if len(res.Context) > 0 {
			notes = append(notes, "[SessionStart hook output]\n"+strings.Join(res.Context, "\n\n"))
		}
	}
	res := a.hook(ctx, hooks.Input{HookEventName: hooks.UserPromptSubmit, Prompt: prompt})
	if stop := a.takeHookStop(); res.Block || stop != "" {
		why := res.Reason
		if !res.Block {
			why = stop
		}
		a.send(Notice{Header: a.header(), Level: "warn", Text: "prompt blocked by a UserPromptSubmit hook: " + why})
		a.send(Done{Header: a.header(), Reason: "blocked"})
		return true
	}
	if len(res.Context) > 0 {
		notes = append(notes, "[UserPromptSubmit hook output]\n"+strings.Join(res.Context, "\n\n"))
	}
	a.pendingHookContext = strings.Join(notes, "\n\n")
	return false
}

// sessionHook fires hooks that belong to the session rather than to one
// agent (Notification, SessionEnd) and reports their runs.
func (s *Session) sessionHook(ctx context.Context, in hooks.Input, names ...string) hooks.Result {
	if !s.deps.Hooks.Has(in.HookEventName) {
		return hooks.Result{}
	}
	id := s.reserveID()
	in.SessionID, in.TranscriptPath = id, TranscriptPath(s.deps.StateDir, id)
	in.Cwd, in.PermissionMode = s.deps.ProjectDir, claudeMode(s.deps.Mode)
	res := s.deps.Hooks.Fire(ctx, in, names...)
	h := Header{Session: id, Time: s.deps.now()}
	for _, r := range res.Runs {
		s.send(HookRan{Header: h, Run: r})
		if r.Outcome == "warning" || r.Outcome == "timeout" {
			s.send(Notice{Header: h, Level: "warn", Text: fmt.Sprintf("%s hook `%s`: %s", r.Event, r.Command, r.Message)})
		}
	}
	return res
}

func (s *Session) send(e Event) {
	if s.emit != nil {
		s.emit(e)
	}
}

// Notify fires the Notification hooks: kind is Claude Code's
// notification_type (permission_prompt when a permission dialog opens,
// idle_prompt when a long turn ends and Polly waits for the user).
func (s *Session) Notify(ctx context.Context, kind, title, message string) {
	s.sessionHook(ctx, hooks.Input{HookEventName: hooks.Notification, NotificationType: kind, Title: title, Message: message}, kind)
}

// End fires the SessionEnd hooks once, if the session began (a message
// was sent, or it was resumed): reason is clear, resume, prompt_input_exit or
// other, as in Claude Code.
func (s *Session) End(ctx context.Context, reason string) {
	s.mu.Lock()
	run := (s.started || s.id != "") && !s.ended
	s.ended = true
	s.mu.Unlock()
	if run {
		s.sessionHook(ctx, hooks.Input{HookEventName: hooks.SessionEnd, Reason: reason}, reason)
	}
	s.closeTranscripts()
}

// closeTranscripts releases the agents' transcript exports.
func (s *Session) closeTranscripts() {
	s.mu.Lock()
	agents := slices.Collect(maps.Values(s.agents))
	s.mu.Unlock()
	for _, a := range agents {
		a.closeTranscript()
	}
}

// Continue carries over what prev knew of the session's hooks when the
// same session is opened again (after a model switch): SessionStart does
// not fire twice.
func (s *Session) Continue(prev *Session) {
	prev.mu.Lock()
	started, reserved := prev.started, prev.reserved
	prev.ended = true // prev is replaced, not ended
	prev.mu.Unlock()
	prev.closeTranscripts()
	s.mu.Lock()
	s.started, s.reserved = started, reserved
	s.mu.Unlock()
}

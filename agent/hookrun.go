package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"polly/agent/hooks"
	"polly/memory/chat"
	"polly/tools"
	"polly/tools/permission"
)

// HookRan is one hook command that ran (a small line in the transcript,
// a "hook" event in stream-json).
type HookRan struct {
	Header
	hooks.Run
}

func (HookRan) Type() string { return "hook" }

// maxStopContinues bounds how often Stop hooks may send the agent back to
// work within one run, so two hooks cannot keep it busy for ever.
const maxStopContinues = 5

// hook fires an event's hooks for this agent and reports every run. Hooks
// that failed or timed out are shown as warnings; they never stop a run.
func (a *Agent) hook(ctx context.Context, in hooks.Input, target string) hooks.Result {
	if !a.deps.Hooks.Has(in.HookEventName) {
		return hooks.Result{}
	}
	in.SessionID, in.Cwd, in.Agent, in.PermissionMode = a.session, a.deps.ProjectDir, a.id, a.deps.Mode
	if m, ok := a.deps.Gate.(interface{ CurrentMode() permission.Mode }); ok {
		in.PermissionMode = string(m.CurrentMode()) // switched in the TUI since the start
	}
	res := a.deps.Hooks.Fire(ctx, in, target)
	for _, r := range res.Runs {
		a.send(HookRan{Header: a.header(), Run: r})
		if r.Outcome == "warning" || r.Outcome == "timeout" {
			a.send(Notice{Header: a.header(), Level: "warn", Text: fmt.Sprintf("%s hook `%s`: %s (ignored; the run goes on)", r.Event, r.Command, r.Message)})
		}
	}
	return res
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

// preToolUse runs the PreToolUse hooks of a call. blocked is the result
// to record instead of running it; otherwise ctx carries the hooks'
// permission decision to the gate.
func (a *Agent) preToolUse(ctx context.Context, call chat.ToolCall) (context.Context, *tools.Result) {
	res := a.hook(ctx, hooks.Input{HookEventName: hooks.PreToolUse, ToolName: call.Name, ToolInput: argsJSON(call)}, call.Name)
	if res.Block {
		return ctx, &tools.Result{Output: "permission denied by a PreToolUse hook: " + res.Reason, IsError: true}
	}
	if res.Permission != "" {
		ctx = tools.WithHookDecision(ctx, res.Permission)
	}
	return ctx, nil
}

// postToolUse gives the tool's response to the PostToolUse hooks; what a
// blocking hook says is added to the result for the model.
func (a *Agent) postToolUse(ctx context.Context, call chat.ToolCall, r tools.Result) tools.Result {
	if !a.deps.Hooks.Has(hooks.PostToolUse) {
		return r
	}
	resp, _ := json.Marshal(struct {
		Output   string   `json:"output"`
		IsError  bool     `json:"is_error"`
		ExitCode *int     `json:"exit_code,omitempty"`
		Files    []string `json:"files,omitempty"`
	}{r.Output, r.IsError, r.ExitCode, r.Files})
	res := a.hook(ctx, hooks.Input{HookEventName: hooks.PostToolUse, ToolName: call.Name, ToolInput: argsJSON(call), ToolResponse: resp}, call.Name)
	var notes []string
	if res.Block {
		notes = append(notes, "[PostToolUse hook] "+res.Reason)
	}
	for _, c := range res.Context {
		notes = append(notes, "[PostToolUse hook] "+c)
	}
	if len(notes) > 0 {
		r.Output = strings.TrimRight(r.Output, "\n") + "\n\n" + strings.Join(notes, "\n")
	}
	return r
}

// stopHooks asks the Stop (or SubagentStop) hooks whether the agent may
// stop; a block sends it back to work with the reason.
func (a *Agent) stopHooks(ctx context.Context, continues int) bool {
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
	res := a.hook(ctx, hooks.Input{HookEventName: ev, StopHookActive: &active}, "")
	if !res.Block {
		return false
	}
	a.append(ctx, chat.Message{Role: chat.User, Kind: chat.KindNote, Content: "[" + ev + " hook] Do not stop yet: " + res.Reason})
	return true
}

// admit runs the SessionStart hooks (first message of the session) and the
// UserPromptSubmit hooks for a user's message, before anything is stored.
// A blocked prompt is dropped: it is not stored, not even as the session
// title, and the model is not called.
func (s *Session) admit(ctx context.Context, a *Agent, prompt string) (blocked bool) {
	if !a.deps.Hooks.Has(hooks.SessionStart) && !a.deps.Hooks.Has(hooks.UserPromptSubmit) {
		return false
	}
	a.session = s.ID()
	var notes []string
	s.mu.Lock()
	first := !s.started
	s.started = true
	s.mu.Unlock()
	if first {
		source := "startup"
		if s.resumed {
			source = "resume"
		}
		if res := a.hook(ctx, hooks.Input{HookEventName: hooks.SessionStart, Source: source}, source); len(res.Context) > 0 {
			notes = append(notes, "[SessionStart hook output]\n"+strings.Join(res.Context, "\n\n"))
		}
	}
	res := a.hook(ctx, hooks.Input{HookEventName: hooks.UserPromptSubmit, Prompt: prompt}, "")
	if res.Block {
		a.send(Notice{Header: a.header(), Level: "warn", Text: "prompt blocked by a UserPromptSubmit hook: " + res.Reason})
		a.send(Done{Header: a.header(), Reason: "blocked"})
		return true
	}
	if len(res.Context) > 0 {
		notes = append(notes, "[UserPromptSubmit hook output]\n"+strings.Join(res.Context, "\n\n"))
	}
	a.pendingHookContext = strings.Join(notes, "\n\n")
	return false
}

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/task"
	"polly/memory/tokens"
	"polly/memory/window"
	"polly/tools"
	"polly/workspace"
)

// runTools runs one reply's tool calls in order and stores each result as
// soon as it exists. After a cancel, the calls that did not run get a
// "cancelled" result so the history stays valid for the API.
// Consecutive delegate_task calls run in parallel; their results are
// recorded in call order once all have finished.
func (a *Agent) runTools(ctx context.Context, calls []chat.ToolCall) {
	for i := 0; i < len(calls); {
		if ctx.Err() != nil {
			for _, rest := range calls[i:] {
				a.recordResult(ctx, rest, tools.Result{Output: "cancelled by the user before it ran", IsError: true}, 0, store.ExecInterrupted)
			}
			return
		}
		j := i
		for j < len(calls) && calls[j].Name == "delegate_task" {
			j++
		}
		if j-i > 1 {
			for k, r := range a.runParallel(ctx, calls[i:j]) {
				call := calls[i+k]
				if r.call.ID != "" {
					call = r.call
				}
				a.finishTool(ctx, call, r.res, r.dur)
			}
			i = j
			continue
		}
		a.runTool(ctx, calls[i])
		i++
	}
}

// runTool executes one call and records it.
func (a *Agent) runTool(ctx context.Context, call chat.ToolCall) {
	a.send(ToolStarted{Header: a.header(), CallID: call.ID, Tool: call.Name, Args: call.Arguments, Brief: call.Brief()})
	start := time.Now()
	// The output's goroutine uses only copies: call itself is assigned
	// again below, when execute returns, while a flush may still run.
	h, callID, tool := a.header(), call.ID, call.Name
	out := newOutputStream(func(text string, skipped int) {
		h.Time = a.deps.now()
		a.send(ToolOutput{Header: h, CallID: callID, Tool: tool, Text: text, Skipped: skipped})
	})
	// The clock starts once the call is allowed: a permission question's
	// wait is the user's time, not the tool's.
	call, res := a.execute(ctx, tools.WithProgress(a.callContext(ctx, call), out), call, func() { start = time.Now() })
	out.close()
	a.finishTool(ctx, call, res, time.Since(start))
}

// execute runs one call: its PreToolUse hooks (which may block it or
// rewrite its arguments), the permission gate and the tool, then the
// PostToolUse (or PostToolUseFailure) hooks of a call that ran. It
// returns the call as it ran.
func (a *Agent) execute(ctx, cctx context.Context, call chat.ToolCall, running func()) (chat.ToolCall, tools.Result) {
	cctx, call, blocked, notes := a.preToolUse(cctx, call)
	if blocked != nil {
		return call, *blocked
	}
	cctx = a.granted(cctx, call)
	ran, start := false, time.Now()
	res := a.registry.Execute(cctx, call, tools.Exec{Gate: a.deps.Gate, Allowed: a.allowed, Running: func() {
		ran, start = true, time.Now()
		if running != nil {
			running()
		}
	}})
	if ran {
		res = a.postToolUse(ctx, call, res, time.Since(start))
	}
	if notes != "" {
		res.Output = strings.TrimRight(res.Output, "\n") + notes
	}
	return call, res
}

// finishTool classifies a finished call and records it.
func (a *Agent) finishTool(ctx context.Context, call chat.ToolCall, res tools.Result, dur time.Duration) {
	if r, ok := res.Meta["subagent"].(DelegateResult); ok {
		// The parent pays for its children: their usage counts in its
		// totals (added here, on the parent's goroutine).
		a.usage = a.usage.Add(r.Usage)
		a.cost += r.Cost
	}
	a.recordResult(ctx, call, res, dur, execStatus(ctx, res))
}

// execStatus is how a call ended: interrupted by a cancel, denied by the
// permission gate, failed, or ok.
func execStatus(ctx context.Context, res tools.Result) store.ExecStatus {
	switch {
	case ctx.Err() != nil && res.IsError:
		return store.ExecInterrupted
	case res.IsError && strings.HasPrefix(res.Output, "permission denied"):
		return store.ExecDenied
	case res.IsError:
		return store.ExecError
	}
	return store.ExecOK
}

// recordResult stores the whole output in tool_executions, puts the output
// — or, past the offload limit, a preview — into the context, and updates
// the task state, checkpointing every CheckpointEvery calls.
func (a *Agent) recordResult(ctx context.Context, call chat.ToolCall, res tools.Result, dur time.Duration, status store.ExecStatus) {
	s := a.settings()
	// From here on the session has read untrusted data: what it writes to
	// the workspace memory says so, and asks (issue 25).
	a.team.readUntrusted(res.Untrusted)
	output := a.deps.Redactor.String(res.Output)
	chars := len([]rune(output))
	lines := chat.CountLines(output)
	note := ""
	if res.IsError {
		note = firstLine(output, 120)
	} else if res.ExitCode != nil {
		note = fmt.Sprintf("exit %d", *res.ExitCode)
	}
	suffix := ""
	if res.IsError && status == store.ExecError {
		suffix += a.knownFix(call.Name, output)
	}
	suffix += a.loop.observe(call, output, s)
	// An output that stays whole is counted now, outside the transaction
	// below: other writers need not wait for the tokenizer.
	var tokenCount int
	if chars <= s.OffloadLimit(call.Name) || res.Keep {
		tokenCount = tokens.Message(a.counter, chat.ToolResult(call, wholeContent(output, suffix)))
	}
	// The output, the message the model sees and the task state go to the
	// store in one transaction.
	var (
		execID    int64
		content   string
		offloaded bool
		msg       chat.Message
	)
	write := func(ctx context.Context) {
		if a.deps.Store != nil {
			id, err := a.deps.Store.SaveToolExecution(ctx, store.ToolExecution{
				SessionID: a.session, Persona: a.persona.ID, CallID: call.ID, Tool: call.Name,
				Arguments: call.Arguments, Output: output, Status: status, ExitCode: res.ExitCode, Duration: dur,
			})
			if err != nil {
				a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
			} else {
				execID = id
				if res.Diff != "" { // shown again when the session resumes
					if err := a.deps.Store.SetToolDiff(ctx, id, res.Diff); err != nil {
						a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
					}
				}
			}
		}
		content = output
		if !res.Keep { // a loaded skill is never offloaded
			content, offloaded = window.OutputContent(output, chars, execID, call.Name, s)
		}
		if offloaded {
			// What the model saw in place of the output, for the output browser and audits.
			if err := a.deps.Store.SetToolPreview(ctx, execID, content); err != nil {
				a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
			}
		}
		content = wholeContent(content, suffix)
		msg = chat.ToolResult(call, content)
		if !offloaded {
			msg.Tokens = tokenCount // 0 when not counted yet: append counts
		}
		msg.Output = &chat.Output{ExecID: execID, Chars: chars, Lines: lines, Offloaded: offloaded, Failed: res.IsError, Keep: res.Keep}
		if execID != 0 {
			msg.Output.Stub = window.Stub(msg, call)
		}
		msg = a.append(ctx, msg)
		a.task.Record(task.Action{Tool: call.Name, Brief: call.Brief(), OK: !res.IsError, Note: note, At: a.deps.now()}, res.Files, filesRead(call, res))
		if name := skillName(call); res.Keep && name != "" {
			a.task.LoadedSkill(name)
		}
		a.saveState(ctx)
	}
	if a.deps.Store == nil {
		write(ctx)
	} else if !a.storeBatch(ctx, write) {
		// Not committed after all: the history keeps the message unstored.
		a.history[len(a.history)-1].ID, a.savedState = 0, nil
	}
	if offloaded {
		a.send(OutputOffloaded{Header: a.header(), ExecID: execID, Tool: call.Name, Chars: chars, Lines: lines})
	}

	for _, f := range res.Created {
		if !slices.Contains(a.created, f) {
			a.created = append(a.created, f)
		}
	}
	a.learn(call, res, status)
	a.run.note(call.Name, res.IsError)
	a.send(ToolFinished{
		Header: a.header(), CallID: call.ID, Tool: call.Name, Brief: call.Brief(), Duration: dur,
		OutputChars: chars, OutputLines: lines, IsError: res.IsError, ExecID: execID, Offloaded: offloaded,
		ExitCode: res.ExitCode, Diff: res.Diff, Preview: content, Status: string(status), FilesChanged: filesChanged(res),
	})
	if a.task.ToolCalls-a.task.LastCheckpointAt >= s.CheckpointEvery {
		a.task.LastCheckpointAt = a.task.ToolCalls
		a.checkpoint(ctx, "periodic")
	}
	a.sendStatus()
}

// wholeContent is a tool message's content: the output (or its preview)
// and the harness's notes after it.
func wholeContent(output, suffix string) string {
	if output == "" {
		output = "(no output)"
	}
	return output + suffix
}

// filesRead is the file a successful read_file call read.
func filesRead(call chat.ToolCall, res tools.Result) []string {
	if call.Name != "read_file" || res.IsError {
		return nil
	}
	var args struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(call.Arguments), &args) != nil || args.Path == "" {
		return nil
	}
	return []string{filepath.Clean(args.Path)}
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(strings.TrimPrefix(s, "error: "))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return task.Clip(s, max)
}

// callContext carries the call id and the calling agent to the tool and the
// permission gate, and the recorder file-writing tools back up through.
func (a *Agent) callContext(ctx context.Context, call chat.ToolCall) context.Context {
	ctx = tools.WithProvenance(ctx, a.provenance())
	return a.withRecorder(tools.WithCaller(context.WithValue(ctx, callIDKey{}, call.ID), a.id), call)
}

// provenance is who writes to the workspace memory now: this session, its
// project, this persona, and the untrusted sources the session has read.
func (a *Agent) provenance() workspace.Provenance {
	return workspace.Provenance{Session: a.session, Project: a.deps.ProjectDir, Persona: a.persona.ID, Untrusted: a.team.untrustedRead()}
}

// skillName is the skill a call loaded: the skill tool's name, or the
// folder of the SKILL.md read_file read.
func skillName(call chat.ToolCall) string {
	var a struct{ Name, Path string }
	if json.Unmarshal([]byte(call.Arguments), &a) != nil {
		return ""
	}
	if call.Name == "skill" {
		return strings.TrimSpace(a.Name)
	}
	if a.Path != "" {
		return filepath.Base(filepath.Dir(a.Path))
	}
	return ""
}

package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/task"
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
				a.finishTool(ctx, calls[i+k], r.res, r.dur)
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
	h := a.header()
	out := newOutputStream(func(text string, skipped int) {
		h.Time = a.deps.now() // on the output's goroutine: only a copy of the header is used
		a.send(ToolOutput{Header: h, CallID: call.ID, Tool: call.Name, Text: text, Skipped: skipped})
	})
	cctx := tools.WithProgress(a.callContext(ctx, call), out)
	// The clock starts once the call is allowed: a permission question's
	// wait is the user's time, not the tool's.
	res := a.registry.Execute(cctx, call, tools.Exec{Gate: a.deps.Gate, Allowed: a.allowed, Running: func() { start = time.Now() }})
	out.close()
	a.finishTool(ctx, call, res, time.Since(start))
}

// finishTool classifies a finished call and records it.
func (a *Agent) finishTool(ctx context.Context, call chat.ToolCall, res tools.Result, dur time.Duration) {
	if r, ok := res.Meta["subagent"].(DelegateResult); ok {
		// The parent pays for its children: their usage counts in its
		// totals (added here, on the parent's goroutine).
		a.usage = a.usage.Add(r.Usage)
		a.cost += r.Cost
	}
	status := store.ExecOK
	switch {
	case ctx.Err() != nil && res.IsError:
		status = store.ExecInterrupted
	case res.IsError && strings.HasPrefix(res.Output, "permission denied"):
		status = store.ExecDenied
	case res.IsError:
		status = store.ExecError
	}
	a.recordResult(ctx, call, res, dur, status)
}

// recordResult stores the whole output in tool_executions, puts the output
// — or, past the offload limit, a preview — into the context, and updates
// the task state, checkpointing every CheckpointEvery calls.
func (a *Agent) recordResult(ctx context.Context, call chat.ToolCall, res tools.Result, dur time.Duration, status store.ExecStatus) {
	s := a.settings()
	output := redact(res.Output, a.deps.Secrets)
	chars := len([]rune(output))
	lines := chat.CountLines(output)
	var execID int64
	if a.deps.Store != nil {
		id, err := a.deps.Store.SaveToolExecution(context.WithoutCancel(ctx), store.ToolExecution{
			SessionID: a.session, Persona: a.persona.ID, CallID: call.ID, Tool: call.Name,
			Arguments: call.Arguments, Output: output, Status: status, ExitCode: res.ExitCode, Duration: dur,
		})
		if err != nil {
			a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
		} else {
			execID = id
		}
	}
	content := output
	offloaded := false
	if chars > s.OffloadLimit(call.Name) {
		if execID != 0 {
			content = window.Preview(output, execID, s.PreviewHead, s.PreviewTail)
			offloaded = true
		} else {
			// Nowhere to offload to: keep head and tail, say it is cut.
			content = window.Preview(output, 0, s.PreviewHead, s.PreviewTail)
		}
	}
	if content == "" {
		content = "(no output)"
	}
	if res.IsError && status == store.ExecError {
		content += a.knownFix(output)
	}
	msg := chat.ToolResult(call, content)
	msg.Output = &chat.Output{ExecID: execID, Chars: chars, Lines: lines, Offloaded: offloaded, Failed: res.IsError}
	if execID != 0 {
		msg.Output.Stub = window.Stub(msg, call)
	}
	msg = a.append(ctx, msg)
	if offloaded {
		a.send(OutputOffloaded{Header: a.header(), ExecID: execID, Tool: call.Name, Chars: chars, Lines: lines})
	}

	note := ""
	if res.IsError {
		note = firstLine(output, 120)
	} else if res.ExitCode != nil {
		note = fmt.Sprintf("exit %d", *res.ExitCode)
	}
	a.task.Record(task.Action{Tool: call.Name, Brief: call.Brief(), OK: !res.IsError, Note: note, At: a.deps.now()}, res.Files)
	for _, f := range res.Created {
		if !slices.Contains(a.created, f) {
			a.created = append(a.created, f)
		}
	}
	a.learn(call, res, status)
	a.send(ToolFinished{
		Header: a.header(), CallID: call.ID, Tool: call.Name, Brief: call.Brief(), Duration: dur,
		OutputChars: chars, OutputLines: lines, IsError: res.IsError, ExecID: execID, Offloaded: offloaded,
		ExitCode: res.ExitCode, Diff: res.Diff, Preview: content, Status: string(status),
	})
	if a.task.ToolCalls-a.task.LastCheckpointAt >= s.CheckpointEvery {
		a.task.LastCheckpointAt = a.task.ToolCalls
		a.checkpoint(ctx, "periodic")
	}
	a.sendStatus()
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(strings.TrimPrefix(s, "error: "))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return task.Clip(s, max)
}

// failure is a failed call remembered until the same tool succeeds.
type failure struct {
	brief, err string
}

// learn turns "a call failed, then the same tool succeeded" into an entry of
// .learnings/ERRORS.md (PRODUCT §3.9): the error and what worked instead.
// Refusals and cancellations are not mistakes and are not recorded.
func (a *Agent) learn(call chat.ToolCall, res tools.Result, status store.ExecStatus) {
	if status == store.ExecDenied || status == store.ExecInterrupted {
		return
	}
	if res.IsError {
		if a.failures == nil {
			a.failures = map[string]failure{}
		}
		a.failures[call.Name] = failure{brief: call.Brief(), err: firstLine(res.Output, 300)}
		return
	}
	f, ok := a.failures[call.Name]
	if !ok {
		return
	}
	delete(a.failures, call.Name)
	if a.deps.Journal == nil {
		return
	}
	errText := fmt.Sprintf("%s %s failed: %s", call.Name, f.brief, f.err)
	fix := fmt.Sprintf("a later %s call succeeded with %s", call.Name, task.Clip(call.Arguments, 300))
	if _, err := a.deps.Journal.LogError(errText, fix); err != nil {
		a.warnOnce("journal", fmt.Sprintf("could not write .learnings/ERRORS.md: %v", err))
	}
}

// redact replaces every occurrence of a secret (an API key a tool printed,
// e.g. from a .env file) so it reaches neither the store nor the model.
func redact(s string, secrets []string) string {
	for _, k := range secrets {
		if len(k) >= 8 && strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, "[REDACTED API KEY]")
		}
	}
	return s
}

// callContext carries the call id and the calling agent to the tool and the
// permission gate.
func (a *Agent) callContext(ctx context.Context, call chat.ToolCall) context.Context {
	return tools.WithCaller(context.WithValue(ctx, callIDKey{}, call.ID), a.id)
}

// fixFinder is the part of the workspace that remembers solved errors.
type fixFinder interface {
	KnownFix(errText string) (workspace.Fix, bool)
}

// knownFix appends the fix of a matching solved error from
// .learnings/ERRORS.md to a failed call's result, so the model does not
// rediscover it (PEERS idea 7).
func (a *Agent) knownFix(output string) string {
	ff, ok := a.deps.Journal.(fixFinder)
	if !ok {
		return ""
	}
	f, ok := ff.KnownFix(strings.TrimPrefix(output, "error: "))
	if !ok {
		return ""
	}
	return fmt.Sprintf("\n[known fix from .learnings/ERRORS.md (%s): %s]", f.When, task.Clip(f.Fix, 400))
}

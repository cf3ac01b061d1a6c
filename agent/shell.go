package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/window"
	"polly/tools"
)

// ShellPrefix starts the message that records a command the user ran;
// ShellOutputPrefix starts the one with its output.
const (
	ShellPrefix       = "! "
	ShellOutputPrefix = "Output of the command I ran myself"
)

// Shell runs a command the user typed (the TUI's ! mode) exactly as the
// persona's run_command would run it — the same permission policy (a
// command that asks asks the user), sandbox, undo tracking and output
// store — and adds it to the persona's conversation as two user messages,
// the command and then its output (a preview past the offload limit), so
// the model sees both with the next message. The caller must not run the
// persona meanwhile.
func (s *Session) Shell(ctx context.Context, persona, command string) (ShellResult, error) {
	a, err := s.Agent(ctx, persona)
	if err != nil {
		return ShellResult{}, err
	}
	id, err := s.ensureID(ctx, a.persona.ID, a.model(), ShellPrefix+command)
	if err != nil {
		return ShellResult{}, err
	}
	a.session = id
	if err := a.bind(); err != nil {
		return ShellResult{}, err
	}
	return a.shell(ctx, command), nil
}

// ShellResult is how a user's command ended.
type ShellResult struct {
	ExitCode *int
	IsError  bool
	Output   string // what the conversation got: the output, or its preview
}

func (a *Agent) shell(ctx context.Context, command string) ShellResult {
	args, _ := json.Marshal(map[string]string{"command": command})
	call := chat.ToolCall{ID: fmt.Sprintf("user-shell-%d", a.deps.now().UnixNano()), Name: "run_command", Arguments: string(args)}
	a.beginTurn(ctx, a.append(ctx, chat.Message{Role: chat.User, Kind: chat.KindShell, Content: ShellPrefix + command}))
	a.send(ToolStarted{Header: a.header(), CallID: call.ID, Tool: call.Name, Args: call.Arguments, Brief: command, ByUser: true})
	h := a.header()
	out := newOutputStream(func(text string, skipped int) {
		h.Time = a.deps.now()
		a.send(ToolOutput{Header: h, CallID: call.ID, Tool: call.Name, Text: text, Skipped: skipped})
	})
	start := time.Now()
	cctx := tools.WithProgress(a.callContext(ctx, call), out)
	// The user asked for run_command whatever the persona's tool list.
	res := a.registry.Execute(cctx, call, tools.Exec{Gate: a.deps.Gate, Running: func() { start = time.Now() }})
	out.close()
	dur := time.Since(start)
	status := execStatus(ctx, res)
	output := a.deps.Redactor.String(res.Output)
	chars, lines := len([]rune(output)), chat.CountLines(output)
	var execID int64
	bg := context.WithoutCancel(ctx) // what ran is stored even after Esc
	if a.deps.Store != nil {
		id, err := a.deps.Store.SaveToolExecution(bg, store.ToolExecution{
			SessionID: a.session, Persona: a.persona.ID, CallID: call.ID, Tool: call.Name,
			Arguments: call.Arguments, Output: output, Status: status, ExitCode: res.ExitCode, Duration: dur,
		})
		if err != nil {
			a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
		}
		execID = id
	}
	content, offloaded := window.OutputContent(output, chars, execID, call.Name, a.settings())
	if offloaded {
		if err := a.deps.Store.SetToolPreview(bg, execID, content); err != nil {
			a.warnOnce("store", fmt.Sprintf("could not save to %s: %v", a.deps.StateDir, err))
		}
	}
	if content == "" {
		content = "(no output)"
	}
	how := "exit " + fmt.Sprint(0)
	switch {
	case res.ExitCode != nil:
		how = fmt.Sprintf("exit %d", *res.ExitCode)
	case status == store.ExecInterrupted:
		how = "cancelled"
	case res.IsError:
		how = "failed"
	}
	msg := chat.Message{Role: chat.User, Kind: chat.KindShell,
		Content: fmt.Sprintf("%s (`%s`, %s):\n%s", ShellOutputPrefix, command, how, content),
		Output:  &chat.Output{ExecID: execID, Chars: chars, Lines: lines, Offloaded: offloaded, Failed: res.IsError}}
	a.append(bg, msg)
	a.send(ToolFinished{Header: a.header(), CallID: call.ID, Tool: call.Name, Brief: command, Duration: dur,
		OutputChars: chars, OutputLines: lines, IsError: res.IsError, ExecID: execID, Offloaded: offloaded,
		ExitCode: res.ExitCode, Preview: content, Status: string(status), FilesChanged: filesChanged(res)})
	return ShellResult{ExitCode: res.ExitCode, IsError: res.IsError, Output: content}
}

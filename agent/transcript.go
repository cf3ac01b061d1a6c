package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"polly/memory/chat"
)

// Hooks get a transcript_path: a JSONL export of the conversation in the
// shape of Claude Code's transcripts (one object per message; assistant
// text and tool calls as content blocks, tool results as tool_result
// blocks), appended as each message is stored, so a hook reading it sees
// everything up to the moment it fires. It is written only when hooks are
// configured, under .agent/transcripts/.

// TranscriptPath is where a session's export lives.
func TranscriptPath(stateDir, session string) string {
	if stateDir == "" || session == "" {
		return ""
	}
	return filepath.Join(stateDir, "transcripts", session+".jsonl")
}

// transcriptLine is one exported message.
type transcriptLine struct {
	Type      string         `json:"type"` // user or assistant
	Summary   bool           `json:"isCompactSummary,omitempty"`
	SessionID string         `json:"sessionId"`
	Agent     string         `json:"agentId,omitempty"`
	Cwd       string         `json:"cwd"`
	Timestamp string         `json:"timestamp"`
	Message   transcriptBody `json:"message"`
}

type transcriptBody struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// exportMessage appends m to the agent's transcript, opening it on first
// use (a resumed conversation is written whole then). A failure is shown
// once and the export stops; the run goes on.
func (a *Agent) exportMessage(m chat.Message) {
	if a.deps.Hooks.Len() == 0 || a.session == "" || a.transcriptOff {
		return
	}
	path := TranscriptPath(a.deps.StateDir, a.session)
	if path == "" {
		return
	}
	if a.transcript == nil {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			a.transcriptFailed(err)
			return
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			a.transcriptFailed(err)
			return
		}
		a.transcript = f
		if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
			for _, old := range a.history {
				if !a.writeLine(old) {
					return
				}
			}
			return // m is the last of the history
		}
	}
	a.writeLine(m)
}

func (a *Agent) writeLine(m chat.Message) bool {
	line, ok := a.transcriptEntry(m)
	if !ok {
		return true
	}
	b, err := json.Marshal(line)
	if err == nil {
		_, err = a.transcript.Write(append(b, '\n'))
	}
	if err != nil {
		a.transcriptFailed(err)
		return false
	}
	return true
}

func (a *Agent) transcriptFailed(err error) {
	a.transcriptOff = true
	a.warnOnce("transcript", fmt.Sprintf("hooks get no up-to-date transcript_path: %v", err))
}

// closeTranscript releases the export file (at the end of a sub-agent's run).
func (a *Agent) closeTranscript() {
	if a.transcript != nil {
		a.transcript.Close()
		a.transcript = nil
	}
}

// transcriptEntry renders a message as Claude Code's transcripts do.
func (a *Agent) transcriptEntry(m chat.Message) (transcriptLine, bool) {
	line := transcriptLine{SessionID: a.session, Cwd: a.deps.ProjectDir, Timestamp: a.deps.now().UTC().Format(time.RFC3339Nano)}
	if a.depth > 0 {
		line.Agent = a.id
	}
	switch m.Role {
	case chat.User:
		line.Type, line.Message = "user", transcriptBody{Role: "user", Content: m.Content}
		line.Summary = m.Kind == chat.KindSummary
	case chat.Assistant:
		var blocks []any
		if m.Content != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": m.Content})
		}
		for _, tc := range m.ToolCalls {
			cc := toClaude(tc, a.deps.ProjectDir)
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": tc.ID, "name": cc.name, "input": cc.input})
		}
		line.Type, line.Message = "assistant", transcriptBody{Role: "assistant", Content: blocks}
	case chat.Tool:
		failed := m.Output != nil && m.Output.Failed
		line.Type, line.Message = "user", transcriptBody{Role: "user", Content: []any{
			map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": m.Content, "is_error": failed}}}
	default:
		return line, false
	}
	return line, true
}

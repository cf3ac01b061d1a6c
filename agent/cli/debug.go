package cli

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"polly/agent"
)

// openDebugLog opens .agent/polly.log for --debug: a log/slog text log of
// every agent event (streamed deltas by size only), appended across runs.
func openDebugLog(projectDir string) (*slog.Logger, func() error, error) {
	dir := filepath.Join(projectDir, ".agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("--debug: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "polly.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("--debug: %w", err)
	}
	l := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l.Info("polly started", "pid", os.Getpid(), "dir", projectDir)
	return l, f.Close, nil
}

// LogEvents wraps an event callback so every event is also logged; a nil
// logger returns emit unchanged.
func LogEvents(l *slog.Logger, emit func(agent.Event)) func(agent.Event) {
	if l == nil {
		return emit
	}
	return func(e agent.Event) {
		h := e.Head()
		switch ev := e.(type) {
		case agent.TextDelta:
			l.Debug("event", "type", e.Type(), "agent", h.Agent, "bytes", len(ev.Text))
		case agent.ReasoningDelta:
			l.Debug("event", "type", e.Type(), "agent", h.Agent, "bytes", len(ev.Text))
		case agent.ToolOutput:
			l.Debug("event", "type", e.Type(), "agent", h.Agent, "call", ev.CallID, "bytes", len(ev.Text))
		default:
			b, err := agent.MarshalEvent(e)
			if err != nil {
				l.Warn("event not encodable", "type", e.Type(), "err", err)
				break
			}
			if len(b) > 4000 {
				b = append(b[:4000:4000], "…"...)
			}
			l.Info("event", "type", e.Type(), "agent", h.Agent, "json", string(b))
		}
		if emit != nil {
			emit(e)
		}
	}
}

package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"polly/memory/chat"
	"polly/memory/store"
)

// exportPreviewLines is how much of each tool output an export shows.
const exportPreviewLines = 20

// ExportMarkdown renders a stored session as Markdown: per persona that
// spoke (name gives its display name), the user's messages whole, the
// replies, each tool call with its status, exit code and duration and the
// start of its output as the model saw it, the user's ! commands, and the
// harness's notes. Archived (summarized) messages are included: an export
// is the whole conversation.
func ExportMarkdown(ctx context.Context, st *store.Store, sessionID string, name func(persona string) string, now time.Time) (string, error) {
	sess, err := st.Session(ctx, sessionID)
	if err != nil {
		return "", fmt.Errorf("export session %s: %w", sessionID, err)
	}
	personas, err := st.Personas(ctx, sessionID)
	if err != nil {
		return "", fmt.Errorf("export session %s: %w", sessionID, err)
	}
	var b strings.Builder
	title := sess.Title
	if title == "" {
		title = "(untitled)"
	}
	fmt.Fprintf(&b, "# Polly session %s: %s\n\n", sess.ID, oneLine(title))
	fmt.Fprintf(&b, "Exported %s", now.Format("2006-01-02 15:04"))
	if sess.Cwd != "" {
		fmt.Fprintf(&b, " from %s", sess.Cwd)
	}
	b.WriteString(".\n")
	for _, p := range personas {
		msgs, err := st.AllMessages(ctx, sessionID, p)
		if err != nil {
			return "", fmt.Errorf("export session %s: %w", sessionID, err)
		}
		var ids []int64
		for _, m := range msgs {
			if m.Output != nil && m.Output.ExecID != 0 {
				ids = append(ids, m.Output.ExecID)
			}
		}
		recs, err := st.ToolRecords(ctx, ids)
		if err != nil {
			return "", fmt.Errorf("export session %s: %w", sessionID, err)
		}
		fmt.Fprintf(&b, "\n## %s\n", name(p))
		exportMessages(&b, msgs, recs, name(p))
	}
	return b.String(), nil
}

func exportMessages(b *strings.Builder, msgs []chat.Message, recs map[int64]store.ToolRecord, who string) {
	calls := map[string]chat.ToolCall{}
	for _, m := range msgs {
		switch {
		case m.Kind == chat.KindShell && strings.HasPrefix(m.Content, ShellPrefix):
			fmt.Fprintf(b, "\n**You ran** `%s`\n", oneLine(strings.TrimPrefix(m.Content, ShellPrefix)))
		case m.Kind == chat.KindShell:
			_, out, _ := strings.Cut(m.Content, "\n")
			b.WriteString("\n" + outcome(m, recs) + "\n\n" + fenced(out))
		case m.Kind == chat.KindSummary:
			b.WriteString("\n> Earlier messages were summarized here (their originals follow the summary's place in the store).\n")
		case m.Kind == chat.KindAnchor || m.Kind == chat.KindActiveTask || m.Kind == chat.KindResume || m.Kind == chat.KindHandoff:
		case m.Kind == chat.KindNote:
			fmt.Fprintf(b, "\n> %s\n", oneLine(strings.TrimSuffix(strings.TrimPrefix(m.Content, "[NOTE from Polly, not the user: "), "]")))
		case m.Role == chat.User:
			fmt.Fprintf(b, "\n### You\n\n%s\n", strings.TrimRight(m.Content, "\n"))
		case m.Role == chat.Assistant:
			text := strings.TrimSuffix(m.Content, PartialMark)
			if strings.TrimSpace(text) != "" {
				fmt.Fprintf(b, "\n### %s\n\n%s\n", who, strings.TrimRight(text, "\n"))
			}
			if m.Kind == chat.KindPartial {
				b.WriteString("\n_(cancelled while it was being written)_\n")
			}
			for _, tc := range m.ToolCalls {
				calls[tc.ID] = tc
			}
		case m.Role == chat.Tool:
			tc := calls[m.ToolCallID]
			arg := tc.Brief()
			if arg != "" {
				arg = " `" + oneLine(arg) + "`"
			}
			fmt.Fprintf(b, "\n**%s**%s: %s\n\n%s", m.ToolName, arg, outcome(m, recs), fenced(m.Content))
		}
	}
}

// outcome is a stored call's status, exit code and duration.
func outcome(m chat.Message, recs map[int64]store.ToolRecord) string {
	status := "done"
	if m.Output != nil && m.Output.Failed {
		status = "failed"
	}
	var parts []string
	if m.Output != nil {
		if r, ok := recs[m.Output.ExecID]; ok {
			switch r.Status {
			case store.ExecInterrupted:
				status = "cancelled"
			case store.ExecDenied:
				status = "denied"
			}
			if r.ExitCode != nil {
				parts = append(parts, fmt.Sprintf("exit %d", *r.ExitCode))
			}
			if r.Duration > 0 {
				parts = append(parts, r.Duration.String())
			}
		}
		if m.Output.Offloaded {
			parts = append(parts, fmt.Sprintf("%d lines, #%d offloaded (the model saw a preview)", m.Output.Lines, m.Output.ExecID))
		}
	}
	return strings.Join(append([]string{status}, parts...), ", ")
}

// fenced is the start of an output in a code fence long enough for it.
func fenced(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > exportPreviewLines {
		lines = append(lines[:exportPreviewLines], fmt.Sprintf("… (%d more lines)", len(lines)-exportPreviewLines))
	}
	body := strings.Join(lines, "\n")
	fence := "```"
	for strings.Contains(body, fence) {
		fence += "`"
	}
	return fence + "text\n" + body + "\n" + fence + "\n"
}

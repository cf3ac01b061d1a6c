package window

import (
	"fmt"
	"strings"

	"polly/memory/chat"
	"polly/memory/task"
)

// BlockHeader starts every task block; tests and the TUI find it by this.
const BlockHeader = "[TASK — anchor #"

// TaskBlock renders the live task block (PRODUCT §12, amending §3.1 and
// §3.6): rebuilt from the task state for every request and placed at the
// end of the context, never stored, so no copy of the task state goes
// stale in the history. It carries the whole request (or its head and
// tail and the id to read it), every follow-up, the model's expanded
// understanding, the plan with its live statuses, the files read and
// written, the tool-call count and the latest checkpoint.
func TaskBlock(st *task.State, s Settings) chat.Message {
	s = s.WithDefaults()
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d — the live task state, rebuilt by the harness for this request; it supersedes any older plan or reminder above]\n", BlockHeader, st.ToolCalls/s.AnchorEvery)
	if st.Previous != "" {
		b.WriteString(st.Previous + "\n")
	}
	b.WriteString("\nOriginal request:\n")
	b.WriteString(longText(strings.TrimSpace(st.OriginalRequest), st.RequestID, "request", s) + "\n")
	for i, f := range st.FollowUps {
		var id int64
		if i < len(st.FollowUpIDs) {
			id = st.FollowUpIDs[i]
		}
		fmt.Fprintf(&b, "\nFollow-up %d from the user:\n%s\n", i+1, longText(strings.TrimSpace(f), id, "follow-up", s))
	}
	b.WriteString("\nYour expanded understanding:\n")
	if st.Understanding != "" {
		b.WriteString(task.Clip(st.Understanding, s.UnderstandingChars) + "\n")
	} else {
		b.WriteString("(you have not stated a plan yet — state one, or set it with task_plan)\n")
	}
	if len(st.Plan) > 0 {
		b.WriteString("\nPlan (live statuses):\n" + task.PlanText(st.Plan))
		if i, step, ok := st.CurrentStep(); ok {
			fmt.Fprintf(&b, "Current step: %d. %s\n", i+1, step.Title)
		} else {
			b.WriteString("Every step is done.\n")
		}
	}
	if len(st.FilesRead) > 0 {
		b.WriteString("\nFiles read: " + fileList(st.FilesRead, s.BlockFiles) + "\n")
	}
	if len(st.Files) > 0 {
		b.WriteString("Files written: " + fileList(st.Files, s.BlockFiles) + "\n")
	}
	fmt.Fprintf(&b, "\nTool calls so far: %d.", st.ToolCalls)
	if st.Checkpoint != "" {
		fmt.Fprintf(&b, " Latest checkpoint: %s.", st.Checkpoint)
	}
	b.WriteString(" Stay focused. What is the NEXT step?")
	return chat.Message{Role: chat.User, Kind: chat.KindTaskBlock, Content: b.String()}
}

// longText quotes a user text whole, or past RequestChars its head and
// tail with the id that reads it all.
func longText(text string, id int64, what string, s Settings) string {
	if len(text) <= s.RequestChars {
		return text
	}
	head := headLines(text, s.RequestHead)
	tail := tailLines(text[len(head):], s.RequestTail)
	omitted := len(text) - len(head) - len(tail)
	how := "the rest is not stored"
	if id != 0 {
		how = fmt.Sprintf("read_tool_output(id=%d) shows the whole %s", id, what)
	}
	return fmt.Sprintf("[%s #%d: %s chars; you see its start and its end — %s]\n%s\n[… %s chars omitted …]\n%s",
		what, id, commas(len(text)), how, strings.TrimRight(head, "\n"), commas(omitted), tail)
}

// fileList names up to max files, most recent last.
func fileList(files []string, max int) string {
	if len(files) <= max {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("(%d earlier) ", len(files)-max) + strings.Join(files[len(files)-max:], ", ")
}

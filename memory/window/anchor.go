package window

import (
	"fmt"
	"strings"

	"polly/memory/chat"
	"polly/memory/task"
)

// Caps keep the harness's own messages small: an anchor is a reminder, not
// a second copy of the conversation.
const (
	anchorRequestCap       = 2000
	anchorUnderstandingCap = 1500
	anchorFollowUpCap      = 300
)

// Anchor renders the smart task anchor (PRODUCT §3.1).
func Anchor(st *task.State) chat.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "[TASK ANCHOR — Reminder #%d]\n", st.Anchors+1)
	b.WriteString("Original request:\n")
	b.WriteString(task.Clip(strings.TrimSpace(st.OriginalRequest), anchorRequestCap) + "\n\n")
	b.WriteString("Your expanded understanding:\n")
	if st.Understanding != "" {
		b.WriteString(task.Clip(st.Understanding, anchorUnderstandingCap) + "\n\n")
	} else {
		b.WriteString("(you have not stated a plan yet — state one, or set it with task_plan)\n\n")
	}
	if len(st.Plan) > 0 {
		b.WriteString("Plan:\n" + task.PlanText(st.Plan))
		if i, step, ok := st.CurrentStep(); ok {
			fmt.Fprintf(&b, "Current step: %d. %s\n", i+1, step.Title)
		}
		b.WriteString("\n")
	}
	if n := len(st.FollowUps); n > 0 {
		b.WriteString("Latest follow-up from the user:\n" + task.Clip(st.FollowUps[n-1], anchorFollowUpCap) + "\n\n")
	}
	fmt.Fprintf(&b, "Tool calls so far: %d. Stay focused. What is the NEXT step?", st.ToolCalls)
	return chat.Message{Role: chat.User, Kind: chat.KindAnchor, Content: b.String()}
}

// ActiveTask renders the message injected right after a summary (PRODUCT
// §3.6 step 5), so the task survives even a poor summary.
func ActiveTask(st *task.State, checkpointPath string) chat.Message {
	var b strings.Builder
	b.WriteString("[ACTIVE TASK — DO NOT FORGET]\n")
	b.WriteString("Your context was just compacted: the messages before this point were replaced by the summary above.\n\n")
	b.WriteString("Original request:\n" + task.Clip(strings.TrimSpace(st.OriginalRequest), anchorRequestCap) + "\n\n")
	if st.Understanding != "" {
		b.WriteString("Your expanded understanding:\n" + task.Clip(st.Understanding, anchorUnderstandingCap) + "\n\n")
	}
	if len(st.Plan) > 0 {
		b.WriteString("Plan:\n" + task.PlanText(st.Plan) + "\n")
	}
	fmt.Fprintf(&b, "You have made %d tool calls so far. The task state is in %s.", st.ToolCalls, checkpointPath)
	b.WriteString(" Check the summary's IN PROGRESS / NEXT section and continue from there; do not redo completed work.")
	return chat.Message{Role: chat.User, Kind: chat.KindActiveTask, Content: b.String()}
}

package window

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"text/template"

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
	in := blockInput{
		Header: BlockHeader, Anchor: st.ToolCalls / s.AnchorEvery, Previous: st.Previous,
		Request:   longText(strings.TrimSpace(st.OriginalRequest), st.RequestID, "request", s),
		ToolCalls: st.ToolCalls, Checkpoint: st.Checkpoint,
	}
	for i, f := range st.FollowUps {
		var id int64
		if i < len(st.FollowUpIDs) {
			id = st.FollowUpIDs[i]
		}
		in.FollowUps = append(in.FollowUps, followUp{N: i + 1, Text: longText(strings.TrimSpace(f), id, "follow-up", s)})
	}
	if st.Understanding != "" {
		in.Understanding = task.Clip(st.Understanding, s.UnderstandingChars)
	}
	if len(st.Plan) > 0 {
		in.Plan = task.PlanText(st.Plan)
		if i, step, ok := st.CurrentStep(); ok {
			in.Step = fmt.Sprintf("%d. %s", i+1, step.Title)
		}
	}
	if len(st.FilesRead) > 0 {
		in.FilesRead = fileList(st.FilesRead, s.BlockFiles)
	}
	if len(st.Files) > 0 {
		in.FilesWritten = fileList(st.Files, s.BlockFiles)
	}
	in.Skills = strings.Join(st.Skills, ", ")
	var b strings.Builder
	if err := taskBlock().Execute(&b, in); err != nil {
		panic(fmt.Sprintf("prompts/task_block.md: %v", err)) // the fields are fixed: a broken template file
	}
	return chat.Message{Role: chat.User, Kind: chat.KindTaskBlock, Content: strings.TrimRight(b.String(), "\n")}
}

// taskBlockText is the task block's wording (prompts/task_block.md).
//
//go:embed prompts/task_block.md
var taskBlockText string

// taskBlock is parsed on first use, not at start-up.
var taskBlock = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("task_block").Option("missingkey=error").Parse(taskBlockText))
})

// blockInput is what prompts/task_block.md is filled with.
type blockInput struct {
	Header                                       string
	Anchor, ToolCalls                            int
	Previous, Request, Understanding, Plan, Step string
	FilesRead, FilesWritten, Checkpoint, Skills  string
	FollowUps                                    []followUp
}

type followUp struct {
	N    int
	Text string
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

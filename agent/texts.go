package agent

import (
	"embed"
	"strings"
	"text/template"
)

// What this package says to a model lives in files next to the code, so it
// is reviewed as text: descriptions/<tool>.md for the tools the agent binds
// itself, prompts/ for the notes and messages it writes into a
// conversation.

//go:embed descriptions/*.md
var descriptions embed.FS

// resumedNote goes with the first message after a resume of an unfinished
// task.
//
//go:embed prompts/resumed.md
var resumedNote string

//go:embed prompts/handoff.md
var handoffText string

// handoffTemplate is the card a persona gets when the user switches to it
// in the middle of another persona's task.
var handoffTemplate = template.Must(template.New("handoff").Option("missingkey=error").Parse(handoffText))

//go:embed prompts/repeated_call.md
var repeatedCallText string

// repeatedCall is the note appended to the result of a call the model
// repeated with the same arguments and the same result.
var repeatedCall = template.Must(template.New("repeated_call").Option("missingkey=error").Parse(repeatedCallText))

//go:embed prompts/subagent_task.md
var subagentTaskText string

// subagentTask is a sub-agent's first message: the task, the context, and
// what to hand back.
var subagentTask = template.Must(template.New("subagent_task").Option("missingkey=error").Parse(subagentTaskText))

// promptText returns an embedded prompt without its final newline.
func promptText(s string) string { return strings.TrimRight(s, "\n") }

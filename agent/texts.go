package agent

import (
	"embed"
	"strings"
	"sync"
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
var handoffTemplate = parsedOnFirstUse("handoff", handoffText)

//go:embed prompts/repeated_call.md
var repeatedCallText string

// repeatedCall is the note appended to the result of a call the model
// repeated with the same arguments and the same result.
var repeatedCall = parsedOnFirstUse("repeated_call", repeatedCallText)

//go:embed prompts/subagent_task.md
var subagentTaskText string

// subagentTask is a sub-agent's first message: the task, the context, and
// what to hand back.
var subagentTask = parsedOnFirstUse("subagent_task", subagentTaskText)

// parsedOnFirstUse parses a prompt template the first time it is needed,
// not at start-up: `polly --version` and the TUI's first frame never use it.
func parsedOnFirstUse(name, text string) func() *template.Template {
	return sync.OnceValue(func() *template.Template {
		return template.Must(template.New(name).Option("missingkey=error").Parse(text))
	})
}

// promptText returns an embedded prompt without its final newline.
func promptText(s string) string { return strings.TrimRight(s, "\n") }

// Command fakeopenai serves a scripted OpenAI-compatible model for trying
// Polly by hand, with no network and no key:
//
//	go run ./agent/llmtest/fakeopenai -addr 127.0.0.1:8089
//	OPENAI_BASE_URL=http://127.0.0.1:8089/v1 OPENAI_API_KEY=x polly
//
// Run Polly in a directory holding a hello.go. Any prompt plays the demo:
// a short reply and read_file on hello.go, then edit_file (a diff), then
// run_command, then a streamed Markdown answer with a code block. A prompt
// containing "team" delegates two tasks in parallel (coder and scraper),
// so the team panel has rows; one containing "build" sets a plan and runs
// a slow command whose output streams into its block; one containing
// "markdown" streams a reply with every kind of Markdown element (headings,
// lists, task boxes, a quote, links, tables, code in five languages); one
// containing "rewrite" rewrites big.txt (120 lines: a long diff for the
// permission dialog).
// Replies stream slowly enough to watch.
// -context-limit N refuses prompts over N tokens the way OpenAI does, so a
// small local window (16k, 20k) can be tried without one.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"polly/agent/llmtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8089", "listen `ADDR`")
	delay := flag.Duration("delay", 40*time.Millisecond, "pause between streamed chunks")
	limit := flag.Int("context-limit", 0, "refuse requests over `TOKENS` prompt tokens (about 4 characters each) with OpenAI's context_length_exceeded error, as a small local model would; 0: no limit")
	flag.Parse()
	d := demo{delay: *delay}
	srv, err := llmtest.Start(*addr, llmtest.Repeat(100000, d.step)...)
	if err != nil {
		log.Fatal(err)
	}
	srv.Strict(false)
	srv.SetContextLimit(*limit)
	fmt.Printf("fake OpenAI server on %s\n", srv.URL())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
	srv.Close()
}

type demo struct{ delay time.Duration }

// step answers one request from where the conversation stands.
func (d demo) step(req llmtest.Request) llmtest.Step {
	if len(req.Tools) == 0 { // the summarizer (/compact) asks without tools
		return d.slow("## Summary\n- The user asked for a demo of Polly.\n- hello.go was read, edited and run.\n", 40)
	}
	last := -1
	for i, m := range req.Messages {
		if m.Role == "user" && !strings.HasPrefix(m.Content, "[") { // not a harness note (anchor, handoff)
			last = i
		}
	}
	if last < 0 {
		return llmtest.Text("Hello! Ask me anything.")
	}
	prompt := req.Messages[last].Content
	done := 0 // tool results since the last user message
	for _, m := range req.Messages[last+1:] {
		if m.Role == "tool" {
			done++
		}
	}
	if strings.HasPrefix(prompt, "Task from") { // a sub-agent
		return d.child(prompt, done)
	}
	if strings.Contains(strings.ToLower(prompt), "team") {
		return d.team(done)
	}
	if strings.Contains(strings.ToLower(prompt), "build") {
		return d.build(done)
	}
	if strings.Contains(strings.ToLower(prompt), "markdown") {
		return d.slow(markdownTour, 24)
	}
	if strings.Contains(strings.ToLower(prompt), "rewrite") {
		if done == 0 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: bigRewrite()}}}
		}
		return d.slow("big.txt is rewritten: every line renumbered.", 5)
	}
	switch done {
	case 0:
		r := d.slow("Let me look at the project first.", 6)
		r.ToolCalls = []llmtest.ToolCall{{Name: "read_file", Args: `{"path":"hello.go"}`}}
		return r
	case 1:
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "edit_file",
			Args: `{"path":"hello.go","old_string":"Hello, world","new_string":"Hello, Polly"}`}}}
	case 2:
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "run_command", Args: `{"command":"go run hello.go"}`}}}
	}
	return d.slow(finalAnswer, 5)
}

// bigRewrite is write_file's arguments for a 120-line big.txt, each line
// changed, one of them 230 columns long.
func bigRewrite() string {
	var b strings.Builder
	for i := 1; i <= 120; i++ {
		if i == 60 {
			b.WriteString("renumbered line 60: " + strings.Repeat("a long line ", 18) + "END\n")
			continue
		}
		fmt.Fprintf(&b, "renumbered line %d\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "big.txt", "content": b.String()})
	return string(args)
}

func (d demo) team(done int) llmtest.Step {
	if done == 0 {
		r := d.slow("I'll split this: **coder** reviews `hello.go`, **scraper** lists the project files.", 6)
		r.ToolCalls = []llmtest.ToolCall{
			{Name: "delegate_task", Args: `{"agent":"coder","task":"Review hello.go and say what it prints","context":"the project root holds hello.go"}`},
			{Name: "delegate_task", Args: `{"agent":"web_scraper","task":"List the files of the project","context":"work in the project root"}`},
		}
		return r
	}
	return d.slow("Both specialists are done:\n\n| who | result |\n|---|---|\n| coder | `hello.go` prints a greeting |\n| scraper | the project has one Go file |\n", 5)
}

// build plans, then runs a slow command whose output streams into its
// block, then answers.
func (d demo) build(done int) llmtest.Step {
	switch done {
	case 0:
		r := d.slow("I'll plan the build first.", 6)
		r.ToolCalls = []llmtest.ToolCall{{Name: "task_plan", Args: `{"steps":[{"title":"plan the build","status":"done"},{"title":"compile every package","status":"in_progress"},{"title":"report","status":"todo"}]}`}}
		return r
	case 1:
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "run_command",
			Args: `{"command":"for i in 1 2 3 4 5 6 7 8; do echo \"compiling package $i of 8\"; sleep 1; done; echo build ok"}`}}}
	}
	return d.slow("The build passed: **8 packages** compiled.", 5)
}

func (d demo) child(prompt string, done int) llmtest.Step {
	if done == 0 {
		call := llmtest.ToolCall{Name: "read_file", Args: `{"path":"hello.go"}`}
		if strings.Contains(prompt, "List the files") {
			call = llmtest.ToolCall{Name: "list_dir", Args: `{"path":"."}`}
		}
		r := d.slow("Looking…", 3)
		r.ToolCalls = []llmtest.ToolCall{call}
		return r
	}
	return llmtest.Reply{Text: "Done: checked it. Everything looks fine; nothing was changed.", ChunkSize: 3, Delay: 3 * d.delay}
}

func (d demo) slow(text string, chunk int) llmtest.Reply {
	return llmtest.Reply{Text: text, ChunkSize: chunk, Delay: d.delay}
}

const finalAnswer = "## What I did\n\n" +
	"1. **Read** `hello.go` to see what it prints.\n" +
	"2. **Edited** the greeting (see the diff above).\n" +
	"3. **Ran** it with `go run`.\n\n" +
	"The program now reads:\n\n" +
	"```go\npackage main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"Hello, Polly\")\n}\n```\n\n" +
	"> Tip: press **ctrl+x** to expand the last tool block, **ctrl+o** to browse tool outputs.\n\n" +
	"Anything else you would like to change?"

// markdownTour has one of every Markdown element the TUI draws.
const markdownTour = "# Markdown tour\n\n" +
	"Text with **bold**, *italics*, ~~strike~~, `inline code` and a [link](https://go.dev/doc).\n\n" +
	"## Lists\n\n" +
	"- first\n- second\n  - nested\n- [x] a task done\n- [ ] a task to do\n\n" +
	"1. one\n2. two\n\n" +
	"> A quote with **emphasis**.\n\n" +
	"## Tables\n\n" +
	"| file | lines | status |\n|---|--:|:-:|\n| `main.go` | 42 | ok |\n| `parse.go` | 310 | changed |\n\n" +
	"| step | what happens |\n|---|---|\n| 1 | the parser reads every line of the input and keeps the tokens it finds, skipping comments and blank lines on the way |\n\n" +
	"## Code\n\n" +
	"```go\nfunc parse(s string) (*Node, error) {\n\tif s == \"\" {\n\t\treturn nil, errEmpty // nothing to read\n\t}\n\treturn &Node{text: s}, nil\n}\n```\n\n" +
	"```python\ndef total(xs: list[int]) -> int:\n    \"\"\"Sum of xs.\"\"\"\n    return sum(x for x in xs if x > 0)  # positives\n```\n\n" +
	"```sh\nfor f in *.go; do gofmt -l \"$f\"; done\n```\n\n" +
	"```json\n{\"name\": \"polly\", \"tabs\": 4, \"ok\": true}\n```\n\n" +
	"```diff\n@@ -1,2 +1,2 @@\n-\treturn nil\n+\treturn &Node{}\n```\n\n" +
	"---\n\nThat is every element."

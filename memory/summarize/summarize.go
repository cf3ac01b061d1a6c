// Package summarize builds task-aware summaries (PRODUCT §3.6): the prompt
// that asks a model for a structured summary merging the previous one, the
// mechanical check that every plan step and touched file survived, the
// heuristic summary used when the model call fails, and the archive of the
// replaced messages.
package summarize

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/template"
	"time"

	"polly/memory/chat"
	"polly/memory/task"
	"polly/workspace/atomicfile"
)

// Sections every summary has, in order.
var Sections = []string{"CURRENT TASK", "COMPLETED SO FAR", "IN PROGRESS / NEXT", "KEY FACTS", "BLOCKED / ISSUES"}

// Input is what a summary is made from.
type Input struct {
	AgentID    string
	Task       *task.State
	Checkpoint string         // rendered active_task.md
	Previous   string         // the previous summary, merged into the new one
	Messages   []chat.Message // the messages being replaced (this part of them)
	MaxChars   int            // budget for the transcript in the prompt (0: 80,000)
	Part       int            // 1-based part number when the messages are summarized in parts
	Parts      int            // number of parts (0 or 1: one call)
}

// system is the summarizer's instructions (prompts/system.md).
//
//go:embed prompts/system.md
var system string

// requestText is the summarizer's user message (prompts/request.md): the
// checkpoint, the previous summary and the transcript to merge.
//
//go:embed prompts/request.md
var requestText string

//go:embed prompts/summary_header.md
var summaryHeaderText string

// summaryHeader heads a summary in the conversation
// (prompts/summary_header.md). Both templates are parsed on first use,
// not at start-up.
var summaryHeader = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("summary_header").Option("missingkey=error").Parse(summaryHeaderText))
})

var request = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("request").Option("missingkey=error").Parse(requestText))
})

// Prompt returns the messages of the summarizer call.
func Prompt(in Input) []chat.Message {
	previous := in.Previous
	if strings.TrimSpace(previous) == "" {
		previous = ""
	}
	var b strings.Builder
	err := request().Execute(&b, struct {
		Checkpoint, Previous, Transcript string
		Part, Parts                      int
	}{in.Checkpoint, previous, Transcript(in.Messages, in.MaxChars), in.Part, in.Parts})
	if err != nil {
		panic(fmt.Sprintf("prompts/request.md: %v", err)) // the fields are fixed: a broken template file
	}
	return []chat.Message{chat.SystemText(strings.TrimRight(system, "\n")), chat.UserText(strings.TrimRight(b.String(), "\n"))}
}

// Split cuts the replaced messages into parts whose transcripts fit
// maxChars each, in order, so every message is summarized and none is
// dropped for length (a part never splits a tool call from its results).
func Split(ms []chat.Message, maxChars int) [][]chat.Message {
	if maxChars <= 0 {
		maxChars = 80000
	}
	var parts [][]chat.Message
	start, used := 0, 0
	for i := 0; i < len(ms); {
		// A unit: a message and the tool results that answer it.
		j := i + 1
		for j < len(ms) && ms[j].Role == chat.Tool {
			j++
		}
		size := 0
		for _, m := range ms[i:j] {
			size += len(render(m)) + 1
		}
		if used > 0 && used+size > maxChars {
			parts = append(parts, ms[start:i])
			start, used = i, 0
		}
		used += size
		i = j
	}
	if start < len(ms) {
		parts = append(parts, ms[start:])
	}
	return parts
}

// Transcript renders messages as text for the summarizer, clipping tool
// outputs hardest, and dropping the middle if it is still too long.
func Transcript(ms []chat.Message, maxChars int) string {
	if maxChars <= 0 {
		maxChars = 80000
	}
	blocks := make([]string, 0, len(ms))
	for _, m := range ms {
		blocks = append(blocks, render(m))
	}
	total := 0
	for _, bl := range blocks {
		total += len(bl)
	}
	if total <= maxChars {
		return strings.Join(blocks, "\n")
	}
	// Keep the first fifth of the budget from the start and the rest from
	// the end: the task's start and its latest state matter most.
	headBudget := maxChars / 5
	var head, tail []string
	used := 0
	i := 0
	for ; i < len(blocks) && used+len(blocks[i]) <= headBudget; i++ {
		head = append(head, blocks[i])
		used += len(blocks[i])
	}
	j := len(blocks) - 1
	for ; j >= i && used+len(blocks[j]) <= maxChars; j-- {
		tail = append(tail, blocks[j])
		used += len(blocks[j])
	}
	for l, r := 0, len(tail)-1; l < r; l, r = l+1, r-1 {
		tail[l], tail[r] = tail[r], tail[l]
	}
	mid := fmt.Sprintf("[… %d messages omitted from this transcript for length …]", j-i+1)
	return strings.Join(append(append(head, mid), tail...), "\n")
}

func render(m chat.Message) string {
	switch m.Role {
	case chat.User:
		label := "USER"
		switch m.Kind {
		case chat.KindNormal:
		case chat.KindShell:
			label = "USER (a shell command they ran)"
		default:
			label = "HARNESS NOTE"
		}
		return fmt.Sprintf("%s: %s\n", label, task.Clip(m.Content, 4000))
	case chat.Assistant:
		var b strings.Builder
		b.WriteString("ASSISTANT: " + task.Clip(m.Content, 2000))
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "\n  → called %s(%s)", tc.Name, task.Clip(tc.Arguments, 300))
		}
		return b.String() + "\n"
	case chat.Tool:
		status := "ok"
		id := ""
		if m.Output != nil {
			if m.Output.Failed {
				status = "FAILED"
			}
			if m.Output.ExecID != 0 {
				id = fmt.Sprintf(" #%d", m.Output.ExecID)
			}
		}
		return fmt.Sprintf("TOOL %s%s (%s): %s\n", m.ToolName, id, status, clipMiddle(m.Content, 600))
	}
	return ""
}

// clipMiddle keeps the start and the end of s.
func clipMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	h := task.Clip(s, max/3)
	t := s[len(s)-(max-max/3):]
	for len(t) > 0 && t[0]&0xC0 == 0x80 {
		t = t[1:]
	}
	return strings.TrimSuffix(h, "…") + " […] " + t
}

// Heuristic builds a summary without a model, from the task state and the
// replaced messages: tools used, files touched, commands run, failures.
func Heuristic(in Input) string {
	st := in.Task
	if st == nil {
		st = &task.State{}
	}
	var b strings.Builder
	b.WriteString("## CURRENT TASK\n" + task.Clip(strings.TrimSpace(st.OriginalRequest), 3000) + "\n")
	for _, f := range st.FollowUps {
		b.WriteString("Follow-up: " + task.Clip(f, 500) + "\n")
	}
	if st.Understanding != "" {
		b.WriteString("\nUnderstanding stated earlier:\n" + task.Clip(st.Understanding, 1500) + "\n")
	}

	counts := map[string]int{}
	var commands, failures, texts []string
	calls := map[string]chat.ToolCall{}
	for _, m := range in.Messages {
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = tc
			counts[tc.Name]++
		}
		if m.Role == chat.Assistant && strings.TrimSpace(m.Content) != "" {
			texts = append(texts, firstLine(m.Content, 200))
		}
		if m.Role != chat.Tool {
			continue
		}
		tc := calls[m.ToolCallID]
		failed := m.Output != nil && m.Output.Failed
		if tc.Name == "run_command" {
			status := "ok"
			if failed {
				status = "failed"
			}
			commands = append(commands, fmt.Sprintf("%s → %s", strings.TrimPrefix(tc.Brief(), "command="), status))
		}
		if failed {
			failures = append(failures, fmt.Sprintf("%s %s: %s", tc.Name, tc.Brief(), firstLine(strings.TrimPrefix(m.Content, "error: "), 160)))
		}
	}
	b.WriteString("\n## COMPLETED SO FAR\n")
	if len(counts) > 0 {
		names := make([]string, 0, len(counts))
		for n := range counts {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s ×%d", n, counts[n])
		}
		b.WriteString("- Tool calls in the replaced part: " + strings.Join(parts, ", ") + "\n")
	}
	fmt.Fprintf(&b, "- Tool calls in the whole task: %d\n", st.ToolCalls)
	if len(st.Files) > 0 {
		b.WriteString("- Files touched: " + strings.Join(st.Files, ", ") + "\n")
	}
	for _, c := range last(commands, 10) {
		b.WriteString("- Ran: " + c + "\n")
	}
	b.WriteString("\n## IN PROGRESS / NEXT\n")
	if len(st.Plan) > 0 {
		// By name only: the task block shows their live statuses.
		titles := make([]string, len(st.Plan))
		for i, s := range st.Plan {
			titles[i] = fmt.Sprintf("%d. %s", i+1, s.Title)
		}
		b.WriteString("- Plan steps (statuses in the task block): " + strings.Join(titles, "; ") + "\n")
	}
	if len(texts) > 0 {
		b.WriteString("- Last thing the agent said: " + texts[len(texts)-1] + "\n")
	}
	b.WriteString("\n## KEY FACTS\n")
	b.WriteString("(Heuristic summary built by the harness: the summarizer model was unavailable or its reply unusable.)\n")
	if in.Previous != "" {
		// Quoted, so its headings stay inside this part.
		b.WriteString("Previous summary (carried forward):\n> " + strings.ReplaceAll(task.Clip(in.Previous, 6000), "\n", "\n> ") + "\n")
	}
	for _, t := range last(texts, 5) {
		b.WriteString("- " + t + "\n")
	}
	b.WriteString("\n## BLOCKED / ISSUES\n")
	if len(failures) == 0 {
		b.WriteString("none recorded\n")
	}
	for _, f := range last(failures, 8) {
		b.WriteString("- " + f + "\n")
	}
	return b.String()
}

func last(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return task.Clip(s, max)
}

// Message wraps a summary as the conversation message that replaces the
// older ones.
func Message(summary string, number, replaced int, archivePath string, toolCalls int) chat.Message {
	var head strings.Builder
	err := summaryHeader().Execute(&head, struct {
		Number, Replaced, ToolCalls int
		Archive                     string
	}{number, replaced, toolCalls, archivePath})
	if err != nil {
		panic(fmt.Sprintf("prompts/summary_header.md: %v", err)) // the fields are fixed: a broken template file
	}
	return chat.Message{Role: chat.User, Kind: chat.KindSummary, Content: strings.TrimRight(head.String(), "\n") + "\n\n" + strings.TrimSpace(summary)}
}

// archived is the JSON layout of an archive file.
type archived struct {
	Agent    string         `json:"agent"`
	Session  string         `json:"session"`
	Archived time.Time      `json:"archived_at"`
	Messages []chat.Message `json:"messages"`
}

// Archive writes the replaced messages to
// <dir>/<agent>_<timestamp>.json atomically and returns the path.
func Archive(dir, agentID, session string, ms []chat.Message, now time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("archive dir: %w", err)
	}
	name := fmt.Sprintf("%s_%s.json", safe(agentID), now.UTC().Format("20060102T150405.000Z"))
	path := filepath.Join(dir, name)
	data, err := json.MarshalIndent(archived{Agent: agentID, Session: session, Archived: now.UTC(), Messages: ms}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	return path, nil
}

func safe(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == '#' || r == ':' {
			return '_'
		}
		return r
	}, id)
}

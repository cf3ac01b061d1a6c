package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/task"
	"polly/tools"
	"polly/workspace"
)

// failure is a failed call remembered until the same operation succeeds.
type failure struct {
	tool  string
	brief string
	args  map[string]any
	err   string // the error line
	at    int    // task.ToolCalls when it failed
}

// maxFailures bounds the failed operations remembered at once.
const maxFailures = 64

// keyArgs are the arguments that name what a call operates on. Two calls
// with the same tool and the same values here (after normalising) are the
// same operation on the same target; the others (content, old_string,
// offset…) are how it was attempted.
var keyArgs = []string{"path", "file", "command", "url", "pattern", "glob", "selector", "id", "list", "agent", "query", "section"}

// operation names what a call does to what: its tool and key arguments,
// normalised (paths cleaned and resolved against the project, whitespace
// collapsed). A tool with none of the key arguments is identified by all of
// its arguments.
func operation(call chat.ToolCall, root string) (string, map[string]any) {
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return call.Name + "\x00" + strings.Join(strings.Fields(call.Arguments), " "), nil
	}
	var b strings.Builder
	b.WriteString(call.Name)
	found := false
	for _, k := range keyArgs {
		v, ok := args[k]
		if !ok {
			continue
		}
		found = true
		s := fmt.Sprint(v)
		switch k {
		case "path", "file":
			s = normPath(s, root)
		case "url":
			s = strings.TrimRight(strings.TrimSpace(s), "/")
		default:
			s = strings.Join(strings.Fields(s), " ")
		}
		fmt.Fprintf(&b, "\x00%s=%s", k, s)
	}
	if !found {
		canon, _ := json.Marshal(args) // map keys come out sorted
		b.WriteString("\x00" + string(canon))
	}
	return b.String(), args
}

func normPath(p, root string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) && root != "" {
		p = filepath.Join(root, p)
	}
	return filepath.Clean(p)
}

// learn pairs a failed call with a later success of the same operation on
// the same target (PRODUCT §3.9) and writes the pair to
// .learnings/ERRORS.md: the tool, the error's signature, and what worked.
// A success of another operation pairs with nothing: reading b.txt does not
// fix a missing a.txt. Refusals and cancellations are not mistakes and are
// not recorded.
func (a *Agent) learn(call chat.ToolCall, res tools.Result, status store.ExecStatus) {
	if status == store.ExecDenied || status == store.ExecInterrupted {
		return
	}
	key, args := operation(call, a.deps.ProjectDir)
	if res.IsError {
		if a.failures == nil {
			a.failures = map[string]failure{}
		}
		if len(a.failures) >= maxFailures { // never-fixed failures must not pile up
			clear(a.failures)
		}
		a.failures[key] = failure{tool: call.Name, brief: call.Brief(), args: args, err: strings.TrimPrefix(workspace.ErrorLine(res.Output), "error: "), at: a.task.ToolCalls}
		return
	}
	f, ok := a.failures[key]
	if !ok {
		return
	}
	delete(a.failures, key)
	if a.deps.Journal == nil {
		return
	}
	if _, err := a.deps.Journal.LogToolError(a.provenance(), call.Name, f.brief, f.err, a.howFixed(f, args)); err != nil {
		a.warnOnce("journal", fmt.Sprintf("could not write .learnings/ERRORS.md: %v", err))
	}
}

// howFixed says what changed between the failed call and the successful
// one: the arguments that differ, or else the calls made in between.
func (a *Agent) howFixed(f failure, now map[string]any) string {
	var changed []string
	keys := make([]string, 0, len(now))
	for k := range now {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		// Key arguments name the same target (maybe spelled differently).
		if !slices.Contains(keyArgs, k) && fmt.Sprint(f.args[k]) != fmt.Sprint(now[k]) {
			changed = append(changed, fmt.Sprintf("%s=%s", k, task.Clip(oneLineOf(now[k]), 120)))
		}
	}
	if len(changed) > 0 {
		return fmt.Sprintf("%s on the same target succeeded with %s", f.tool, strings.Join(changed, ", "))
	}
	// Same call, different world: what changed in between made it work.
	var between []string
	recent := a.task.Recent
	n := a.task.ToolCalls - f.at - 1 // calls after the failure, before this success
	if n > 0 && len(recent) > 1 {
		for _, act := range recent[max(len(recent)-1-n, 0) : len(recent)-1] {
			if act.OK && !slices.Contains(lookups, act.Tool) {
				between = append(between, strings.TrimSpace(act.Tool+" "+act.Brief))
			}
		}
	}
	if len(between) > 3 {
		between = between[len(between)-3:]
	}
	if len(between) == 0 {
		return fmt.Sprintf("the same %s call succeeded when retried", f.tool)
	}
	return fmt.Sprintf("the same %s call succeeded after: %s", f.tool, strings.Join(between, "; "))
}

func oneLineOf(v any) string {
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	return strings.Join(strings.Fields(s), " ")
}

// lookups are tools that change nothing: they cannot be what fixed an
// error, so a fix never names them.
var lookups = []string{"read_file", "list_dir", "glob", "grep", "read_tool_output", "grep_tool_output", "workspace_read", "task_plan"}

// fixFinder is the part of the workspace that remembers solved errors.
type fixFinder interface {
	KnownFix(tool, errText string) (workspace.Fix, bool)
}

// knownFix appends the fix of a solved error with the same signature on
// the same tool from .learnings/ERRORS.md to a failed call's result, so
// the model does not rediscover it (PEERS idea 7). It is the model's own
// earlier note — anything that could write ERRORS.md wrote it — so it is
// quoted as that note, unverified, inside an envelope: never a line that
// reads as Polly speaking.
func (a *Agent) knownFix(tool, output string) string {
	ff, ok := a.deps.Journal.(fixFinder)
	if !ok {
		return ""
	}
	f, ok := ff.KnownFix(tool, output)
	if !ok {
		return ""
	}
	note := fmt.Sprintf("%s failed like this before (%s); the note said it was fixed by: %s", tool, f.When, task.Clip(oneLineOf(f.Fix), 400))
	return "\n\n" + tools.Envelope(earlierNote, note)
}

// earlierNote is the source a recalled ERRORS.md entry is quoted under.
const earlierNote = "your earlier note in .learnings/ERRORS.md (unverified)"

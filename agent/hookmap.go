package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"polly/memory/chat"
	"polly/memory/task"
	"polly/tools"
)

// Hooks see Polly's tools under their Claude Code names and shapes, so a
// script written for Claude Code (jq -r .tool_input.file_path) works
// unchanged; a hook's updatedInput comes back through the same table.
// Tools with no Claude Code twin keep their Polly name and arguments;
// MCP tools are already mcp__server__tool.

// twin is the Claude Code side of one Polly tool.
type twin struct {
	name    string
	aliases []string          // other names a matcher may use (Task, the Agent tool's old name)
	rename  map[string]string // Polly argument → Claude Code field
	paths   []string          // Claude Code fields holding a path: made absolute
	// toCC and fromCC reshape what a rename cannot (nil: rename only).
	toCC   func(m map[string]any)
	fromCC func(m map[string]any)
}

var twins = map[string]twin{
	"run_command": {name: "Bash", rename: map[string]string{}, toCC: bashToCC, fromCC: bashFromCC},
	"read_file":   {name: "Read", rename: map[string]string{"path": "file_path"}, paths: []string{"file_path"}},
	"write_file":  {name: "Write", rename: map[string]string{"path": "file_path"}, paths: []string{"file_path"}},
	"edit_file":   {name: "Edit", rename: map[string]string{"path": "file_path"}, paths: []string{"file_path"}},
	"glob":        {name: "Glob", rename: map[string]string{}, paths: []string{"path"}},
	"grep":        {name: "Grep", rename: map[string]string{}, paths: []string{"path"}},
	"fetch_url": {name: "WebFetch", rename: map[string]string{},
		toCC:   func(m map[string]any) { m["prompt"] = "" },
		fromCC: func(m map[string]any) { delete(m, "prompt") }},
	"delegate_task": {name: "Agent", aliases: []string{"Task"}, rename: map[string]string{}, toCC: agentToCC, fromCC: agentFromCC},
	"task_plan":     {name: "TodoWrite", rename: map[string]string{}, toCC: todoToCC, fromCC: todoFromCC},
	"skill":         {name: "Skill", rename: map[string]string{"name": "skill"}},
}

// claudeCall is a tool call as a hook sees it.
type claudeCall struct {
	name  string          // Claude Code's name, or Polly's where there is no twin
	names []string        // every name a matcher may match: Claude Code's, its aliases, Polly's
	input json.RawMessage // tool_input
}

// toClaude maps a call to Claude Code's name and tool_input. Arguments
// that are not a JSON object are passed as they are.
func toClaude(call chat.ToolCall, root string) claudeCall {
	raw := argsJSON(call)
	tw, ok := twins[call.Name]
	if !ok {
		return claudeCall{name: call.Name, names: []string{call.Name}, input: raw}
	}
	cc := claudeCall{name: tw.name, names: append(append([]string{tw.name}, tw.aliases...), call.Name), input: raw}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return cc
	}
	for from, to := range tw.rename {
		if v, ok := m[from]; ok {
			delete(m, from)
			m[to] = v
		}
	}
	for _, f := range tw.paths {
		if p, ok := m[f].(string); ok && p != "" && !filepath.IsAbs(p) {
			m[f] = filepath.Join(root, p)
		}
	}
	if tw.toCC != nil {
		tw.toCC(m)
	}
	if b, err := json.Marshal(m); err == nil {
		cc.input = b
	}
	return cc
}

// fromClaude turns a hook's updatedInput (Claude Code's shape) back into
// the arguments of the Polly tool.
func fromClaude(tool string, updated json.RawMessage) (string, error) {
	var m map[string]any
	if err := json.Unmarshal(updated, &m); err != nil || m == nil {
		return "", fmt.Errorf("updatedInput is not a JSON object: %s", task.Clip(string(updated), 120))
	}
	if tw, ok := twins[tool]; ok {
		if tw.fromCC != nil {
			tw.fromCC(m)
		}
		for from, to := range tw.rename {
			if v, ok := m[to]; ok {
				delete(m, to)
				m[from] = v
			}
		}
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// bashToCC: Polly's timeout is in seconds, Claude Code's in milliseconds;
// Polly has no description, Claude Code's Bash always carries one.
func bashToCC(m map[string]any) {
	if s, ok := m["timeout_seconds"].(float64); ok {
		m["timeout"] = s * 1000
	}
	delete(m, "timeout_seconds")
	if _, ok := m["description"]; !ok {
		m["description"] = ""
	}
}

func bashFromCC(m map[string]any) {
	if ms, ok := m["timeout"].(float64); ok && ms > 0 {
		m["timeout_seconds"] = float64(int64((ms + 999) / 1000))
	}
	delete(m, "timeout")
	delete(m, "description")
	delete(m, "run_in_background")
}

// agentToCC: delegate_task{agent, task, context} is the Agent (Task)
// tool's {subagent_type, description, prompt}.
func agentToCC(m map[string]any) {
	task, _ := m["task"].(string)
	prompt := task
	if c, _ := m["context"].(string); strings.TrimSpace(c) != "" {
		prompt += "\n\n" + c
	}
	m["subagent_type"], m["prompt"], m["description"] = m["agent"], prompt, firstLine(task, 60)
	delete(m, "agent")
	delete(m, "task")
	delete(m, "context")
}

func agentFromCC(m map[string]any) {
	m["agent"], m["task"] = m["subagent_type"], m["prompt"]
	for _, k := range []string{"subagent_type", "prompt", "description", "model", "run_in_background"} {
		delete(m, k)
	}
}

// todoStatus maps task_plan's statuses to TodoWrite's.
var todoStatus = map[string]string{"todo": "pending", "in_progress": "in_progress", "done": "completed"}

func todoToCC(m map[string]any) {
	steps, _ := m["steps"].([]any)
	todos := make([]any, 0, len(steps))
	for _, s := range steps {
		st, _ := s.(map[string]any)
		title, _ := st["title"].(string)
		status, _ := st["status"].(string)
		todos = append(todos, map[string]any{"content": title, "status": firstNonEmptyOf(todoStatus[status], status), "activeForm": title})
	}
	delete(m, "steps")
	m["todos"] = todos
}

func todoFromCC(m map[string]any) {
	todos, _ := m["todos"].([]any)
	steps := make([]any, 0, len(todos))
	for _, t := range todos {
		td, _ := t.(map[string]any)
		content, _ := td["content"].(string)
		status, _ := td["status"].(string)
		for polly, cc := range todoStatus {
			if cc == status {
				status = polly
			}
		}
		steps = append(steps, map[string]any{"title": content, "status": status})
	}
	delete(m, "todos")
	m["steps"] = steps
}

// claudeResponse is a finished call's tool_response in the shape Claude
// Code gives its own tool's result.
func claudeResponse(call chat.ToolCall, cc claudeCall, res tools.Result) json.RawMessage {
	var in map[string]any
	_ = json.Unmarshal(cc.input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	var out any
	switch cc.name {
	case "Bash":
		out = map[string]any{"stdout": res.Output, "stderr": "", "interrupted": false, "isImage": false}
	case "Read":
		out = map[string]any{"type": "text", "file": map[string]any{"filePath": str("file_path"), "content": res.Output,
			"numLines": chat.CountLines(res.Output)}}
	case "Write":
		out = map[string]any{"filePath": str("file_path"), "success": true}
	case "Edit":
		out = map[string]any{"filePath": str("file_path"), "oldString": str("old_string"), "newString": str("new_string"),
			"replaceAll": in["replace_all"] == true, "success": true}
	case "Glob":
		names := nonEmptyLines(res.Output)
		out = map[string]any{"filenames": names, "numFiles": len(names)}
	case "Grep":
		out = map[string]any{"mode": "content", "content": res.Output, "numLines": chat.CountLines(res.Output)}
	case "WebFetch":
		out = map[string]any{"url": str("url"), "result": res.Output, "code": 200, "codeText": "OK"}
	case "Agent":
		r, _ := res.Meta["subagent"].(DelegateResult)
		out = map[string]any{"status": "completed", "agentId": r.Agent, "content": []any{map[string]any{"type": "text", "text": r.Summary}},
			"totalToolUseCount": r.ToolCalls, "totalTokens": r.Usage.PromptTokens + r.Usage.CompletionTokens}
	default:
		if strings.HasPrefix(cc.name, mcpPrefix) {
			out = []any{map[string]any{"type": "text", "text": res.Output}}
		} else {
			resp := map[string]any{"output": res.Output}
			if len(res.Files) > 0 {
				resp["files"] = res.Files
			}
			out = resp
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// claudeError is PostToolUseFailure's "error": what the model receives,
// with Claude Code's "Exit code N" first line for a failed command.
func claudeError(res tools.Result) string {
	if res.ExitCode != nil && *res.ExitCode != 0 {
		return fmt.Sprintf("Exit code %d\n%s", *res.ExitCode, res.Output)
	}
	return res.Output
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func firstNonEmptyOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// claudeMode is Polly's permission mode in Claude Code's words.
func claudeMode(mode string) string {
	return map[string]string{"ask": "default", "auto-edit": "acceptEdits", "yolo": "bypassPermissions"}[mode]
}

package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"polly/agent/hooks"
	"polly/agent/llmtest"
	"polly/personas"
	"polly/tools"
)

type noArgs struct{}

func stubTool(name string) tools.Tool {
	return tools.New(name, "test tool", func(context.Context, noArgs) (tools.Result, error) { return tools.Result{}, nil }, nil)
}

// Personas get MCP tools unless their file restricts them with patterns;
// skill comes with read_file.
func TestAllowedToolsForExtensions(t *testing.T) {
	r := tools.NewRegistry(stubTool("read_file"), stubTool("run_command"), stubTool("skill"),
		stubTool("mcp__github__search"), stubTool("mcp__github__issue"), stubTool("mcp__db__query"))
	for _, tt := range []struct {
		tools []string
		want  string
	}{
		{nil, "mcp__db__query mcp__github__issue mcp__github__search read_file run_command skill"},
		{[]string{"read_file"}, "read_file skill mcp__db__query mcp__github__issue mcp__github__search"},
		{[]string{"run_command"}, "run_command mcp__db__query mcp__github__issue mcp__github__search"},
		{[]string{"read_file", "mcp__github__*"}, "read_file skill mcp__github__issue mcp__github__search"},
		{[]string{"mcp__db__query"}, "mcp__db__query"},
	} {
		got := strings.Join(allowedTools(personas.Persona{Tools: tt.tools}, r), " ")
		if got != tt.want {
			t.Errorf("%v: %s, want %s", tt.tools, got, tt.want)
		}
	}
}

// lateTools is a ToolSource whose tools arrive after the first request, as
// an MCP server that finishes starting late.
type lateTools struct {
	gen   atomic.Uint64
	tools []tools.Tool
	mu    sync.Mutex
}

func (l *lateTools) Generation() uint64 { return l.gen.Load() }
func (l *lateTools) Tools() []tools.Tool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tools
}

// Tools that appear while a run goes on are in the next request.
func TestLateToolsJoinTheNextRequest(t *testing.T) {
	src := &lateTools{}
	h := newHarness(t,
		llmtest.Func(func(req llmtest.Request) llmtest.Step {
			src.mu.Lock()
			src.tools = []tools.Tool{stubTool("mcp__late__ping")}
			src.mu.Unlock()
			src.gen.Add(1)
			return llmtest.Call("list_dir", `{"path":"."}`)
		}),
		llmtest.Call("mcp__late__ping", `{}`),
		llmtest.Text("done"),
	)
	h.deps.Extra = src
	if _, err := h.send(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	reqs := h.srv.Requests()
	if slices.Contains(reqs[0].Tools, "mcp__late__ping") || !slices.Contains(reqs[1].Tools, "mcp__late__ping") {
		t.Fatalf("tools: first %v, second %v", reqs[0].Tools, reqs[1].Tools)
	}
	if got := reqs[2].LastTurn(); got.Role != "tool" || strings.Contains(got.Content, "unknown tool") {
		t.Fatalf("the late tool did not run: %+v", got)
	}
}

// A PreCompact hook that exits 2 keeps the conversation as it is (no
// summarizer call) and says why; the same compaction with a hook that
// exits 0 does call the summarizer.
func TestPreCompactHookBlocks(t *testing.T) {
	var steps []llmtest.Step
	for range 12 {
		steps = append(steps, llmtest.Text("noted"))
	}
	h := newHarness(t, steps...)
	seen := filepath.Join(t.TempDir(), "precompact.json")
	block := filepath.Join(t.TempDir(), "block")
	os.WriteFile(block, nil, 0o644)
	set, _, err := hooks.New([]hooks.Hook{{Event: hooks.PreCompact, Matcher: "manual",
		Command: "cat > " + seen + "; test -e " + block + " || exit 0; echo 'keep it all' >&2; exit 2"}}, hooks.Options{Dir: h.dir})
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Hooks = set
	for i := range 12 {
		if _, err := h.send(context.Background(), "fact number "+strings.Repeat("x", i)); err != nil {
			t.Fatal(err)
		}
	}
	calls := h.srv.Calls()
	ok, err := h.session.Compact(context.Background(), "default")
	if err != nil || ok || h.srv.Calls() != calls {
		t.Fatalf("compact ran: ok=%v err=%v calls %d → %d", ok, err, calls, h.srv.Calls())
	}
	if b, _ := os.ReadFile(seen); !strings.Contains(string(b), `"trigger":"manual"`) {
		t.Fatalf("PreCompact stdin = %s", b)
	}
	if !strings.Contains(noticeText(h), "a PreCompact hook blocked it: keep it all") {
		t.Fatal("no notice for the blocked compaction")
	}
	// The control: the hook lets it through, the summarizer is asked.
	os.Remove(block)
	h.srv.Strict(false)
	h.srv.Push(llmtest.Text("## Summary\nfacts were noted"))
	h.session.Compact(context.Background(), "default")
	if h.srv.Calls() != calls+1 {
		t.Fatalf("without the block the summarizer was not called (%d calls)", h.srv.Calls()-calls)
	}
}

// A hook's "continue": false ends the run after its event (no further
// model request) and says why; SessionStart of a new session already has
// the id the session is stored under; a PostToolUse additionalContext and
// a PreToolUse updatedInput reach the model and the tool.
func TestHookStopsTheRunAndSeesTheSessionID(t *testing.T) {
	h := newHarness(t, llmtest.Call("write_file", `{"path":"a.txt","content":"from the model"}`)) // a second request would fail the test
	started := filepath.Join(t.TempDir(), "start.json")
	set, _, err := hooks.New([]hooks.Hook{
		{Event: hooks.SessionStart, Command: "cat > " + started},
		{Event: hooks.PreToolUse, Matcher: "Write", Command: `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"file_path":"b.txt","content":"from the hook"}}}'`},
		{Event: hooks.PostToolUse, Matcher: "Write", Command: `echo '{"continue":false,"stopReason":"the build is broken","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"b.txt is generated"}}'`},
	}, hooks.Options{Dir: h.dir})
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Hooks = set
	out, err := h.send(context.Background(), "write it")
	if err != nil || out.Reason != "stopped" || h.srv.Calls() != 1 {
		t.Fatalf("reason=%q err=%v calls=%d", out.Reason, err, h.srv.Calls())
	}
	if !strings.Contains(noticeText(h), "stopped by a hook: the build is broken") {
		t.Fatalf("notices: %s", noticeText(h))
	}
	if b, err := os.ReadFile(filepath.Join(h.dir, "b.txt")); err != nil || string(b) != "from the hook" {
		t.Fatalf("updatedInput: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "a.txt")); err == nil {
		t.Fatal("the original arguments ran")
	}
	var in struct {
		SessionID string `json:"session_id"`
	}
	b, _ := os.ReadFile(started)
	if json.Unmarshal(b, &in) != nil || in.SessionID == "" || in.SessionID != h.session.ID() {
		t.Fatalf("SessionStart session_id %q, session %q", in.SessionID, h.session.ID())
	}
	msgs, _ := h.store.Messages(context.Background(), h.session.ID(), "default")
	if last := msgs[len(msgs)-1]; last.Role != "tool" || !strings.Contains(last.Content, "[PostToolUse hook] b.txt is generated") {
		t.Fatalf("the stored tool result: %+v", last)
	}
}

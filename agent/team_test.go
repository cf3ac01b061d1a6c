package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"polly/agent/llmtest"
	"polly/memory/store"
	"polly/tools"
	"polly/tools/sandbox/sandboxtest"
)

// personaOf tells which persona a request is for, from its system prompt.
func personaOf(r llmtest.Request) string {
	sys := r.Messages[0].Content
	for _, p := range []string{"scraper", "coder", "leadgen"} {
		if strings.Contains(sys, "You are **"+p+"**") || strings.Contains(sys, "You are "+p) {
			return p
		}
	}
	return "polly"
}

// Must show (issue 5 #1): Polly delegates to scraper; the sub-agent's
// first request carries the scraper prompt and only its tools; the result
// reaches Polly's next request; the child session has its parent id.
func TestDelegateToScraper(t *testing.T) {
	h := newHarness(t)
	scraperPrompt, _ := h.deps.Personas.Find("web_scraper")
	polly, _ := h.deps.Personas.Find("default")
	if !strings.Contains(scraperPrompt.SystemPrompt, "You are **scraper**") {
		t.Fatalf("scraper prompt does not start as expected: %.80q", scraperPrompt.SystemPrompt)
	}
	h.srv.Push(
		llmtest.Call("delegate_task", `{"agent":"scraper","task":"List the products on the demo page.","context":"The page is at http://127.0.0.1/demo; return names only."}`),
		llmtest.Call("write_file", `{"path":"products.txt","content":"alpha\nbeta\n"}`), // the scraper's first reply
		llmtest.Text("Found 2 products: alpha, beta. Saved to products.txt."),
		llmtest.Text("The scraper found alpha and beta."),
	)
	out, err := h.send(context.Background(), "What products are on the demo page?")
	if err != nil || out.Final != "The scraper found alpha and beta." {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	reqs := h.srv.Requests()
	child := reqs[1]
	if child.Messages[0].Content != scraperPrompt.SystemPrompt+"\n\n"+tools.UntrustedNote || strings.Contains(child.Messages[0].Content, polly.SystemPrompt) {
		t.Fatal("the sub-agent's system prompt is not the scraper's")
	}
	if !strings.Contains(child.Messages[1].Content, "List the products on the demo page.") || !strings.Contains(child.Messages[1].Content, "http://127.0.0.1/demo") {
		t.Fatalf("child task: %q", child.Messages[1].Content)
	}
	if len(child.Messages) != 2 {
		t.Fatalf("the child did not start fresh: %d messages", len(child.Messages))
	}
	for _, tool := range child.Tools {
		if tool == "delegate_task" || (!slices.Contains(scraperPrompt.Tools, tool) && tool != "task_plan" && tool != "read_tool_output" && tool != "grep_tool_output") {
			t.Fatalf("the scraper was offered %s (tools %v)", tool, child.Tools)
		}
	}
	if !slices.Contains(reqs[0].Tools, "delegate_task") {
		t.Fatal("Polly was not offered delegate_task")
	}
	// The structured result reached Polly's next request.
	last := reqs[3].LastTurn()
	var res DelegateResult
	if err := json.Unmarshal([]byte(last.Content), &res); err != nil {
		t.Fatalf("result is not JSON: %q", last.Content)
	}
	if res.Status != "completed" || res.Persona != "web_scraper" || !strings.Contains(res.Summary, "alpha, beta") ||
		!slices.Equal(res.FilesTouched, []string{"products.txt"}) || !slices.Equal(res.Artifacts, []string{"products.txt"}) || res.Transcript == "" {
		t.Fatalf("result = %+v", res)
	}
	sess, err := h.store.Session(context.Background(), res.Transcript)
	if err != nil || sess.ParentID != h.session.ID() || sess.Persona != "web_scraper" {
		t.Fatalf("child session = %+v, %v", sess, err)
	}
	msgs, _ := h.store.Messages(context.Background(), res.Transcript, "web_scraper")
	if len(msgs) != 4 {
		t.Fatalf("child transcript has %d messages", len(msgs))
	}
	if s := eventsOf[SubAgentStarted](h); len(s) != 1 || s[0].Parent != "default" || s[0].Agent != "web_scraper" {
		t.Fatalf("started events = %+v", s)
	}
}

// Must show (issue 5 #2): two delegate_task calls in one reply overlap in
// time. Each child's first request waits until the other child's has
// arrived; run one after the other, the first would time out.
func TestParallelDelegationsOverlap(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	arrived := map[string]bool{}
	both := make(chan struct{})
	overlapped := map[string]bool{}
	step := func(r llmtest.Request) llmtest.Step {
		who := personaOf(r)
		if who == "polly" {
			if r.LastTurn().Role == "tool" {
				return llmtest.Text("both done")
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate_task", Args: `{"agent":"coder","task":"count lines"}`},
				{Name: "delegate_task", Args: `{"agent":"leadgen","task":"find leads"}`},
			}}
		}
		mu.Lock()
		arrived[who] = true
		if len(arrived) == 2 {
			select {
			case <-both:
			default:
				close(both)
			}
		}
		mu.Unlock()
		select {
		case <-both:
			mu.Lock()
			overlapped[who] = true
			mu.Unlock()
			return llmtest.Text(who + " finished")
		case <-time.After(3 * time.Second):
			return llmtest.Text(who + " ran alone")
		}
	}
	h.srv.Push(llmtest.Repeat(4, step)...)
	start := time.Now()
	out, err := h.send(context.Background(), "do both")
	if err != nil || out.Final != "both done" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if len(overlapped) != 2 {
		t.Fatalf("sub-agents did not overlap: %v", overlapped)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	// Results come back in call order.
	last := h.srv.Last().Messages
	var agents []string
	for _, m := range last {
		if m.Role == "tool" {
			var r DelegateResult
			json.Unmarshal([]byte(m.Content), &r)
			agents = append(agents, r.Persona)
		}
	}
	if fmt.Sprint(agents) != "[coder b2b_leadgen]" {
		t.Fatalf("result order = %v", agents)
	}
}

// Must show (issue 5 #3): cancel during delegation stops both children and
// leaves no running command.
func TestCancelStopsChildren(t *testing.T) {
	h := newHarness(t)
	step := func(r llmtest.Request) llmtest.Step {
		switch who := personaOf(r); who {
		case "polly":
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate_task", Args: `{"agent":"coder","task":"wait"}`},
				{Name: "delegate_task", Args: `{"agent":"scraper","task":"wait"}`},
			}}
		default:
			return llmtest.Call("run_command", fmt.Sprintf(`{"command":"echo started > %s.pid; sleep 30.%d"}`, who, len(who)))
		}
	}
	h.srv.Push(llmtest.Repeat(3, step)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := h.send(ctx, "wait for both"); done <- err }()
	// Each child's sleep, found by its unique argument (a command's pids
	// are those of its own PID namespace).
	sleeps := func() []sandboxtest.Proc {
		return sandboxtest.Living(func(p sandboxtest.Proc) bool {
			return p.Cmdline == "sleep\x0030.5\x00" || p.Cmdline == "sleep\x0030.7\x00"
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sleeps()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("children never started their commands")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("run did not return within 2s of cancel")
	}
	if live := sleeps(); len(live) > 0 {
		time.Sleep(200 * time.Millisecond) // the kill is on its way when the run returns
		if live = sleeps(); len(live) > 0 {
			t.Fatalf("children's commands still run: %+v", live)
		}
	}
	fin := eventsOf[SubAgentFinished](h)
	if len(fin) != 2 {
		t.Fatalf("finished events = %+v", fin)
	}
	for _, f := range fin {
		if f.Status != "cancelled" {
			t.Fatalf("child %s ended %s", f.Agent, f.Status)
		}
	}
}

// Must show (issue 5 #4): an unknown persona gives an error result listing
// the valid ones; a failing child is a failed result and the parent goes on.
func TestUnknownAgentAndFailingChild(t *testing.T) {
	h := newHarness(t)
	h.deps.MaxTurns = 3
	h.srv.Push(
		llmtest.Call("delegate_task", `{"agent":"wizard","task":"x"}`),
		llmtest.Call("delegate_task", `{"agent":"coder","task":"loop forever"}`),
		llmtest.Call("list_dir", `{}`), llmtest.Call("list_dir", `{}`), llmtest.Call("list_dir", `{}`), // coder hits max turns
		llmtest.Text("the coder failed; I will do it myself"),
	)
	out, err := h.send(context.Background(), "go")
	if err != nil || !strings.Contains(out.Final, "do it myself") {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	reqs := h.srv.Requests()
	unknown := reqs[1].LastTurn().Content
	for _, want := range []string{`unknown agent "wizard"`, "web_scraper (scraper)", "coder (coder)", "b2b_leadgen (leadgen)"} {
		if !strings.Contains(unknown, want) {
			t.Fatalf("unknown-agent result lacks %q: %s", want, unknown)
		}
	}
	var res DelegateResult
	json.Unmarshal([]byte(reqs[len(reqs)-1].LastTurn().Content), &res)
	if res.Status != "max_turns" || res.Error == "" {
		t.Fatalf("failed child result = %+v", res)
	}
}

// Must show (issue 5 #5): per-sub-agent token accounting adds up to the
// session total.
func TestSubAgentAccountingAddsUp(t *testing.T) {
	h := newHarness(t)
	h.deps.Model.InputPrice, h.deps.Model.OutputPrice = 2, 8
	u := func(p, c int) *llmtest.Usage { return &llmtest.Usage{Prompt: p, Completion: c} }
	step := func(r llmtest.Request) llmtest.Step {
		switch personaOf(r) {
		case "polly":
			if r.LastTurn().Role == "tool" {
				return llmtest.Reply{Text: "done", Usage: u(3000, 50)}
			}
			return llmtest.Reply{Usage: u(1000, 40), ToolCalls: []llmtest.ToolCall{
				{Name: "delegate_task", Args: `{"agent":"coder","task":"a"}`},
				{Name: "delegate_task", Args: `{"agent":"scraper","task":"b"}`},
			}}
		case "coder":
			return llmtest.Reply{Text: "coder done", Usage: u(700, 70)}
		default:
			return llmtest.Reply{Text: "scraper done", Usage: u(500, 20)}
		}
	}
	h.srv.Push(llmtest.Repeat(4, step)...)
	out, err := h.send(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	totals, err := h.store.Usage(context.Background(), h.session.ID(), true)
	if err != nil {
		t.Fatal(err)
	}
	if totals.Total.PromptTokens != 5200 || totals.Total.CompletionTokens != 180 {
		t.Fatalf("store totals = %+v", totals.Total)
	}
	if out.Usage.PromptTokens != 5200 || out.Usage.CompletionTokens != 180 {
		t.Fatalf("run usage = %+v, want the store's totals", out.Usage)
	}
	var sub int
	for _, f := range eventsOf[SubAgentFinished](h) {
		sub += f.Usage.PromptTokens + f.Usage.CompletionTokens
	}
	if sub != 700+70+500+20 {
		t.Fatalf("sub-agent usage = %d", sub)
	}
	per := map[string]int{}
	for _, p := range totals.ByPersona {
		per[p.Persona] = p.PromptTokens
	}
	if per["default"] != 4000 || per["coder"] != 700 || per["web_scraper"] != 500 {
		t.Fatalf("per persona = %v", per)
	}
	wantCost := (5200*2.0 + 180*8.0) / 1e6
	if d := out.Cost - wantCost; d > 1e-9 || d < -1e-9 {
		t.Fatalf("cost = %v, want %v", out.Cost, wantCost)
	}
}

// Must show (issue 5 #6): a persona switch gives the new persona a small
// handoff card (task, plan step, files, last result) and checkpoints the
// persona left.
func TestHandoffCardOnSwitch(t *testing.T) {
	h := newHarness(t,
		llmtest.Call("task_plan", `{"steps":[{"title":"Write the parser","status":"done"},{"title":"Write the tests","status":"in_progress"}]}`),
		llmtest.Call("write_file", `{"path":"parser.go","content":"package p\n"}`),
		llmtest.Text(strings.Repeat("I wrote the parser and started on the tests. ", 100)),
		llmtest.Text("coder here, continuing"),
	)
	if _, err := h.send(context.Background(), strings.Repeat("Build a parser for the config language with tests. ", 200)); err != nil {
		t.Fatal(err)
	}
	card, err := h.session.Switch(context.Background(), "default", "coder")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[HANDOFF from Polly (default)", "Current task: Build a parser", "Plan step: 2 of 2. [IN PROGRESS] Write the tests", "Files touched: parser.go", "Last result: I wrote the parser", "active_task.md"} {
		if !strings.Contains(card, want) {
			t.Errorf("card lacks %q:\n%s", want, card)
		}
	}
	if len(card) > MaxHandoffCard {
		t.Fatalf("card is %d bytes > %d", len(card), MaxHandoffCard)
	}
	t.Logf("handoff card (%d bytes):\n%s", len(card), card)
	if _, err := os.Stat(filepath.Join(h.deps.StateDir, "default", "active_task.md")); err != nil {
		t.Fatal("the persona left was not checkpointed")
	}
	if _, err := h.session.Send(context.Background(), "coder", "carry on"); err != nil {
		t.Fatal(err)
	}
	msgs := h.srv.Last().Messages
	if len(msgs) != 3 || !strings.HasPrefix(msgs[1].Content, "[HANDOFF") || msgs[2].Content != "carry on" {
		t.Fatalf("coder's first request: %+v", msgs)
	}
	// The transcript never travels: the coder's request is small.
	if n := len(chars2(msgs[1:])); n > MaxHandoffCard+100 {
		t.Fatalf("coder got %d chars of conversation", n)
	}
	if stored, _ := h.store.Messages(context.Background(), h.session.ID(), "coder"); len(stored) != 3 || stored[0].Kind != "handoff" {
		t.Fatalf("coder's stored conversation = %+v", stored)
	}
	_ = store.ErrNotFound
}

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"polly/agent/llmtest"
)

// smallTask scripts a model working through a task of `steps` tool calls
// the way a local coding model does: a plan first (task_plan), then ~5 KB
// file reads, a command every fifth step, a plan update every ninth, and
// ~300 characters of narration per step, each marked ITEM-n. At pauseAt
// calls it asks the user a question (the run ends; the test answers with a
// follow-up). Summarizer requests get a structured summary that names the
// plan steps with the statuses they had when it was written, as models do.
type smallTask struct {
	steps, pauseAt int

	mu          sync.Mutex
	done        int
	paused      bool
	plan        []map[string]string
	sums        int      // summarizer requests
	mainAt      []int    // per main request: calls made when it arrived
	sumBefore   []int    // per main request: summaries made before it
	tokens      []int    // per main request: prompt tokens as the server counts them
	planAt      []string // per main request: the live plan ("1. [DONE] …" lines)
	asked       []bool   // per main request: the follow-up had been given
	gotFollowUp bool
}

const smallRequest = "Refactor the handlers under src/ so that every error is wrapped with context. Check each file, run the checks every few files, and keep a list of what changed. REQUEST-MARKER-5521"

const smallFollowUp = "FOLLOW-UP-MARKER-8830: yes, go on, and also list the handlers that ignore an error."

func (w *smallTask) setPlan(cur int) llmtest.ToolCall {
	w.plan = nil
	for k := 0; k < 5; k++ {
		status := "todo"
		switch {
		case k < cur:
			status = "done"
		case k == cur:
			status = "in_progress"
		}
		w.plan = append(w.plan, map[string]string{"title": fmt.Sprintf("PLAN-%c refactor part %d", 'A'+k, k+1), "status": status})
	}
	b, _ := json.Marshal(map[string]any{"steps": w.plan})
	return llmtest.ToolCall{Name: "task_plan", Args: string(b)}
}

// planText is the live plan as the task block shows it.
func (w *smallTask) planText() string {
	var b strings.Builder
	for i, s := range w.plan {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, strings.ToUpper(strings.ReplaceAll(s["status"], "_", " ")), s["title"])
	}
	return b.String()
}

// followUpSeen: the request comes after the user's follow-up (its run).
func (w *smallTask) followUpSeen(r llmtest.Request) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, smallFollowUp) {
			return true
		}
	}
	return false
}

func (w *smallTask) step(r llmtest.Request) llmtest.Step {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(r.Messages) > 0 && strings.Contains(r.Messages[0].Content, "You are compacting") {
		w.sums++
		var plan strings.Builder
		for _, s := range w.plan {
			fmt.Fprintf(&plan, "- %s [%s]\n", s["title"], strings.ToUpper(strings.ReplaceAll(s["status"], "_", " ")))
		}
		return llmtest.Text(fmt.Sprintf("## CURRENT TASK\nRefactor the handlers under src/ (REQUEST-MARKER-5521).\n\n## COMPLETED SO FAR\n- SUMMARY-%d: checked files up to ITEM-%d.\n%s\n## IN PROGRESS / NEXT\n- keep going through src/.\n\n## KEY FACTS\n- handlers return fmt.Errorf without %%w.\n\n## BLOCKED / ISSUES\nnone\n", w.sums, w.done, plan.String()))
	}
	w.mainAt = append(w.mainAt, w.done)
	w.sumBefore = append(w.sumBefore, w.sums)
	w.tokens = append(w.tokens, r.PromptTokens())
	w.planAt = append(w.planAt, w.planText())
	w.gotFollowUp = w.gotFollowUp || w.followUpSeen(r)
	w.asked = append(w.asked, w.gotFollowUp)
	if w.done >= w.steps {
		return llmtest.Text("All handlers wrap their errors now; the list of changes is above.")
	}
	if w.done == w.pauseAt && !w.paused {
		w.paused = true
		return llmtest.Text(fmt.Sprintf("I have checked %d files. Should I go on the same way?", w.done))
	}
	w.done++
	n := w.done
	var text strings.Builder
	fmt.Fprintf(&text, "ITEM-%d: ", n)
	for text.Len() < 300 {
		fmt.Fprintf(&text, "handler%d returns its error without context; ", text.Len())
	}
	var call llmtest.ToolCall
	switch {
	case n == 1:
		text.Reset()
		text.WriteString("ITEM-1: I'll refactor it in five parts: A) the read handlers, B) the write handlers, C) the auth handlers, D) the admin handlers, E) a final check with the list of changes.")
		call = w.setPlan(0)
	case n%9 == 0:
		call = w.setPlan(min(4, n/9))
	case n%5 == 0:
		call = llmtest.ToolCall{Name: "run_command", Args: fmt.Sprintf(`{"command":"for i in $(seq 1 60); do echo \"check %d: handler $i ok, error paths wrapped\"; done"}`, n)}
	default:
		call = llmtest.ToolCall{Name: "read_file", Args: fmt.Sprintf(`{"path":"src/f%02d.go"}`, n%40)}
	}
	return llmtest.Reply{Text: text.String(), ToolCalls: []llmtest.ToolCall{call}}
}

// writeHandlers writes 40 files of ~5 KB under dir/src.
func writeHandlers(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		var b strings.Builder
		for j := 0; b.Len() < 5000; j++ {
			fmt.Fprintf(&b, "func handler%d_%d() error { return fmt.Errorf(\"load: %%v\", err) }\n", i, j)
		}
		if err := os.WriteFile(filepath.Join(dir, "src", fmt.Sprintf("f%02d.go", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type smallRun struct {
	w     *smallTask
	reqs  []llmtest.Request
	limit int
	env   Env
	polly func(args ...string) runResult
}

// runSmallWindow runs the 45-step task through the real CLI (the real
// workspace template, tools and system prompt) against a fake server that
// refuses prompts over limit tokens; Polly is told nothing of the window and
// learns it from the first refusal.
func runSmallWindow(t *testing.T, limit int) smallRun {
	t.Helper()
	w := &smallTask{steps: 45, pauseAt: 20}
	srv := llmtest.NewServer(t)
	srv.SetContextLimit(limit)
	srv.Serve(w.step)
	env, polly := cliEnv(t, srv.URL(), nil)
	writeHandlers(t, env.Dir)
	if r := polly("-p", smallRequest, "--yolo"); r.code != 0 {
		t.Fatalf("first run: code %d: %s", r.code, r.stderr)
	}
	if r := polly("-p", smallFollowUp, "--continue", "--yolo"); r.code != 0 {
		t.Fatalf("follow-up run: code %d: %s", r.code, r.stderr)
	}
	if w.done != w.steps {
		t.Fatalf("%d of %d steps made", w.done, w.steps)
	}
	return smallRun{w: w, reqs: srv.Requests(), limit: limit, env: env, polly: polly}
}

// curve is the prompt tokens of each main request, "|" before the ones a
// summary preceded.
func (r smallRun) curve() string {
	var b strings.Builder
	for i, n := range r.w.tokens {
		if i > 0 && r.w.sumBefore[i] > r.w.sumBefore[i-1] {
			b.WriteString("| ")
		}
		fmt.Fprintf(&b, "%d ", n)
	}
	return b.String()
}

// Issue 27 #1: a 45-step task at a 16k and a 20k window.
func TestSmallWindowFortyFiveSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("long task")
	}
	for _, limit := range []int{16000, 20000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			r := runSmallWindow(t, limit)
			refused := 0
			for _, q := range r.reqs {
				if q.PromptTokens() > limit {
					refused++
				}
			}
			t.Logf("limit %d: %d steps, %d summaries, %d requests (%d refused); prompt tokens per request: %s", limit, r.w.done, r.w.sums, len(r.reqs), refused, r.curve())
			if r.w.sums > r.w.done/8 {
				t.Errorf("%d summaries for %d steps: more than one per 8 steps", r.w.sums, r.w.done)
			}
			if refused > 1 {
				t.Errorf("%d requests refused as too long: the learned limit was not kept to", refused)
			}
			r.checkNothingLost(t)
			// What the model received on the first call after a summary, as
			// polly inspect shows it.
			for i, q := range r.reqs {
				if i > 0 && strings.Contains(r.reqs[i-1].Messages[0].Content, "You are compacting") && !strings.Contains(q.Messages[0].Content, "You are compacting") && q.PromptTokens() <= limit {
					sessions := r.polly("sessions")
					id := regexp.MustCompile(`\b[0-9a-f]{8}\b`).FindString(sessions.stdout)
					out := r.polly("inspect", id, fmt.Sprint(i+1))
					if out.code != 0 || !strings.Contains(out.stdout, "user [summary]") {
						t.Fatalf("polly inspect %s %d: %d %s\n%s", id, i+1, out.code, out.stderr, out.stdout)
					}
					t.Logf("polly inspect %s %d:\n%s", id, i+1, out.stdout)
					break
				}
			}
		})
	}
}

// checkNothingLost asserts on every request the server received: each
// main request after the first tool call ends with one task block holding
// the whole request, the follow-up once given, and the live plan; every
// item the model wrote is in the request or was in a summarizer request
// before it.
func (r smallRun) checkNothingLost(t *testing.T) {
	t.Helper()
	covered := map[string]bool{}
	main := 0
	for i, q := range r.reqs {
		if strings.Contains(q.Messages[0].Content, "You are compacting") {
			for _, item := range itemsIn(q.LastMessage().Content) {
				covered[item] = true
			}
			continue
		}
		if q.PromptTokens() > r.limit {
			continue // refused: the script never saw it
		}
		done, plan, asked := r.w.mainAt[main], r.w.planAt[main], r.w.asked[main]
		main++
		if done == 0 {
			continue
		}
		blocks := q.TaskBlocks()
		if len(blocks) != 1 || !llmtest.IsTaskBlock(q.LastMessage()) {
			t.Fatalf("request %d: %d task blocks", i, len(blocks))
		}
		b := blocks[0].Content
		if !strings.Contains(b, "Original request:\n"+smallRequest) {
			t.Fatalf("request %d: the block lacks the request:\n%s", i, b)
		}
		if asked && !strings.Contains(b, smallFollowUp) {
			t.Fatalf("request %d: the block lacks the follow-up:\n%s", i, b)
		}
		if !strings.Contains(b, "Plan (live statuses):\n"+plan) {
			t.Fatalf("request %d: the block's plan is not the live plan\n%s\nwant\n%s", i, b, plan)
		}
		sent := map[string]bool{}
		for _, m := range q.Messages {
			if m.Role == "assistant" {
				for _, item := range itemsIn(m.Content) {
					sent[item] = true
				}
			}
		}
		for n := 1; n <= done; n++ {
			item := fmt.Sprintf("ITEM-%d:", n)
			if !sent[item] && !covered[item] {
				t.Fatalf("request %d: %s is neither sent nor summarized", i, item)
			}
		}
	}
	if main != len(r.w.mainAt) {
		t.Fatalf("matched %d of %d answered requests", main, len(r.w.mainAt))
	}
}

func itemsIn(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "ITEM-") && strings.HasSuffix(f, ":") {
			out = append(out, f)
		}
	}
	return out
}

// Issue 27 #9: one threshold. For a 32k model, `polly config`, the agent's
// usage events (what the status bar shows) and the request record report
// the same number, derived from the fixed cost the agent measured; before
// any call, config says the fixed cost is not measured yet.
func TestOneThresholdEverywhere(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("list_dir", `{"path":"."}`), llmtest.Text("empty"))
	env, polly := cliEnv(t, srv.URL(), nil)
	cfg := filepath.Join(env.Home, ".config", "polly", "config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`{"providers": {"openai": {"models": {"gpt-4.1": {"context_window": 32000}}}}}`), 0o644)
	threshold := func(out string) int {
		t.Helper()
		m := regexp.MustCompile(`(?m)^summarize_threshold +(\d+) +(.*)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no threshold in polly config:\n%s", out)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	r := polly("config")
	if before := threshold(r.stdout); before != 27360*3/4 || !strings.Contains(r.stdout, "fixed cost not measured yet") {
		t.Fatalf("before any call: %d\n%s", before, r.stdout)
	}
	r = polly("-p", "what is here?", "--output-format", "stream-json")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	var events []int
	lastUsage, lastStatus := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct {
			Type      string `json:"type"`
			Threshold int    `json:"threshold"`
			Status    struct {
				Threshold int `json:"threshold"`
			} `json:"status"`
		}
		json.Unmarshal([]byte(line), &e)
		switch {
		case e.Type == "usage":
			events = append(events, e.Threshold)
			lastUsage = e.Threshold
		case e.Type == "status" && e.Status.Threshold > 0:
			events = append(events, e.Status.Threshold)
			lastStatus = e.Status.Threshold
		}
	}
	// The threshold moves with the fixed cost (the task block comes with
	// the first tool call); at each moment the three agree.
	r = polly("config")
	shown := threshold(r.stdout)
	if shown != lastUsage || shown != lastStatus || shown <= 27360*3/4 || shown >= 27360 {
		t.Fatalf("polly config shows %d; the agent's usage events and status (the status bar's) %v\n%s", shown, events, r.stdout)
	}
	if !strings.Contains(r.stdout, "measured on call 2 of session") {
		t.Fatalf("config does not say where the fixed cost comes from:\n%s", r.stdout)
	}
}

// Issue 27 #6: a one-word headless run in a new session no longer
// overwrites the long task's checkpoint: active_task.md is the current
// task's, the unfinished one is kept beside it by session, and is current
// again when its session resumes. The daily log's entries carry the
// project.
func TestCheckpointPerTaskAcrossSessions(t *testing.T) {
	w := &itemWorker{steps: 10}
	srv := llmtest.NewServer(t)
	srv.Serve(w.step)
	env, polly := cliEnv(t, srv.URL(), nil)
	for k := 0; k < 4; k++ {
		os.WriteFile(filepath.Join(env.Dir, fmt.Sprintf("note%d.txt", k)), []byte("a note\n"), 0o644)
	}
	r := polly("-p", "LONG-TASK: read every note and report", "--max-turns", "3")
	if r.code == 0 {
		t.Fatalf("the long task was expected to stop at its turn cap: %s", r.stderr)
	}
	longSession, _ := storedMessages(t, env.Dir)
	srv.Serve(func(llmtest.Request) llmtest.Step { return llmtest.Text("hello!") })
	if r := polly("-p", "hi"); r.code != 0 {
		t.Fatalf("hi: %d %s", r.code, r.stderr)
	}
	dir := filepath.Join(env.Dir, ".agent", "default")
	cur, _ := os.ReadFile(filepath.Join(dir, "active_task.md"))
	kept, err := os.ReadFile(filepath.Join(dir, "active_task."+longSession+".md"))
	if err != nil || !strings.Contains(string(kept), "LONG-TASK") || !strings.Contains(string(kept), "The task is not finished.") || !strings.Contains(string(cur), "> hi") {
		t.Fatalf("after the one-word run: active_task.md\n%s\nkept beside it (%v):\n%s", cur, err, kept)
	}
	w.mu.Lock()
	w.steps = w.done
	w.mu.Unlock()
	srv.Serve(w.step)
	if r := polly("-p", "go on", "--session", longSession); r.code != 0 {
		t.Fatalf("resume: %d %s", r.code, r.stderr)
	}
	cur, _ = os.ReadFile(filepath.Join(dir, "active_task.md"))
	if !strings.Contains(string(cur), "LONG-TASK") {
		t.Fatalf("the resumed task's checkpoint is not current:\n%s", cur)
	}
	if _, err := os.Stat(filepath.Join(dir, "active_task."+longSession+".md")); err == nil {
		t.Fatal("the copy kept beside it outlived its task's return")
	}
	// The daily log: a task that did work is logged with this project's tag.
	srv.Serve(nil)
	srv.Push(llmtest.Call("write_file", `{"path":"done.txt","content":"done\n"}`), llmtest.Text("## Result\n\nWrote done.txt."))
	if r := polly("-p", "WRITE-TASK: write done.txt", "--yolo"); r.code != 0 {
		t.Fatalf("write task: %d %s", r.code, r.stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(env.Home, ".agent", "workspace", "memory", "*.md"))
	var log []byte
	for _, l := range logs {
		if b, _ := os.ReadFile(l); strings.Contains(string(b), "WRITE-TASK") {
			log = b
		}
	}
	if want := "[" + filepath.Base(env.Dir) + "] Polly: WRITE-TASK: write done.txt → completed: Wrote done.txt."; !strings.Contains(string(log), want) {
		t.Fatalf("the daily log lacks %q:\n%s", want, log)
	}
}

// The context numbers of the config reach the request: anchor_every 2 in
// the user's file makes the block's anchor advance every second call (the
// default, 5, would still show #0 after four).
func TestConfigAnchorCadenceReachesTheWire(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Call("list_dir", `{"path":"."}`), llmtest.Call("list_dir", `{"path":"."}`),
		llmtest.Call("list_dir", `{"path":"."}`), llmtest.Call("list_dir", `{"path":"."}`), llmtest.Text("done"))
	env, polly := cliEnv(t, srv.URL(), nil)
	cfg := filepath.Join(env.Home, ".config", "polly", "config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`{"context": {"anchor_every": 2}}`), 0o644)
	if r := polly("-p", "look around"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	blocks := srv.Last().TaskBlocks()
	if len(blocks) != 1 || !strings.HasPrefix(blocks[0].Content, "[TASK — anchor #2 —") {
		t.Fatalf("the last request's block: %+v", blocks)
	}
}

// A lighter tool set for a small model: the config's per-model "tools"
// allow-list is what the requests carry, and polly config shows it.
func TestModelToolAllowList(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("hi"))
	env, polly := cliEnv(t, srv.URL(), nil)
	cfg := filepath.Join(env.Home, ".config", "polly", "config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`{"providers": {"openai": {"models": {"gpt-4.1": {"context_window": 16000, "tools": ["read_file", "list_dir", "task_plan"]}}}}}`), 0o644)
	if r := polly("-p", "hello"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	if got := strings.Join(srv.Last().Tools, ","); got != "read_file,list_dir,task_plan" {
		t.Fatalf("tools sent: %s", got)
	}
	r := polly("config")
	if !regexp.MustCompile(`(?m)^tools +read_file, list_dir, task_plan +user `).MatchString(r.stdout) {
		t.Fatalf("polly config:\n%s", r.stdout)
	}
}

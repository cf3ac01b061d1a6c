package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/window"
)

// mapLimits is a LimitStore in memory.
type mapLimits struct {
	mu sync.Mutex
	m  map[string]int
}

func (l *mapLimits) Limit(model string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.m[model]
	return n, ok
}

func (l *mapLimits) SaveLimit(model string, n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]int{}
	}
	l.m[model] = n
	return nil
}

func (l *mapLimits) Where() string { return "the test's map" }

// limited wraps a scripted model in a provider with a real context limit:
// a request whose body exceeds limit tokens (≈ 4 bytes per token, counted
// on the whole JSON body) is refused the way OpenAI refuses it; the others
// report that count as their prompt tokens.
type limited struct {
	limit int
	inner llmtest.Func

	mu       sync.Mutex
	rejected int
	peak     int
}

func (l *limited) step(r llmtest.Request) llmtest.Step {
	n := len(r.Raw) / 4
	l.mu.Lock()
	if n > l.limit {
		l.rejected++
		l.mu.Unlock()
		return llmtest.Fail{Status: 400, Code: "context_length_exceeded",
			Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", l.limit, n)}
	}
	l.peak = max(l.peak, n)
	l.mu.Unlock()
	st := l.inner(r)
	if rep, ok := st.(llmtest.Reply); ok && rep.Usage == nil {
		rep.Usage = &llmtest.Usage{Prompt: n, Completion: max(1, (len(rep.Text)+40)/4)}
		return rep
	}
	return st
}

// narrate is a model that reports ~chars of findings with every call, so
// the context grows by its own replies, not only by tool outputs.
func narrate(chars int) func(n int) string {
	return func(n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Item %d: findings so far. ", n)
		for b.Len() < chars {
			fmt.Fprintf(&b, "handler%d wraps its error with %%w and returns it to the caller without logging; ", b.Len())
		}
		return b.String()
	}
}

// writeSrc writes n files of ~6 KB under src/.
func writeSrc(t *testing.T, dir string, n int) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	for i := 0; i < n; i++ {
		var b strings.Builder
		for j := 0; b.Len() < 6000; j++ {
			fmt.Fprintf(&b, "func handler%d_%d() error { return fmt.Errorf(\"wrap: %%w\", err) }\n", i, j)
		}
		if err := os.WriteFile(filepath.Join(dir, "src", fmt.Sprintf("f%02d.go", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 12 #3: a provider that accepts 30k tokens behind a configured 128k
// window. The first refusal teaches the limit (stored for the model), the
// budget and thresholds follow it, and a 150-call task gets at most 2
// refusals.
func TestLearnedContextLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("long task")
	}
	h := newHarness(t)
	h.deps.MaxTurns = 0 // the default: no cap (issue 12 #5: a 150-call task finishes)
	h.deps.Model = Model{Name: "local-model", ContextWindow: 128000}
	limits := &mapLimits{}
	h.deps.Limits = limits
	writeSrc(t, h.dir, 40)
	w := &planWorker{calls: 150, steps: 5, final: "audit done", text: narrate(1200),
		readArgs:  func(n int) string { return fmt.Sprintf(`{"path":"src/f%02d.go"}`, n%40) },
		onSummary: func(llmtest.Request) llmtest.Step { return llmtest.Text(boldSummary("audited")) }}
	lim := &limited{limit: 30000, inner: w.step}
	h.srv.Serve(lim.step)
	out, err := h.send(context.Background(), "Audit every file under src/ for error handling.")
	if err != nil || out.Reason != "completed" || out.ToolCalls != 150 {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if n, _ := limits.Limit("local-model"); n != 30000 {
		t.Fatalf("stored limit = %d", n)
	}
	sums := 0
	for _, s := range eventsOf[SummaryFinished](h) {
		if s.Accepted {
			sums++
		}
	}
	t.Logf("150 calls at a 30k limit: %d requests, %d rejected, %d summaries, peak %d tokens", h.srv.Calls(), lim.rejected, sums, lim.peak)
	if lim.rejected > 2 || lim.rejected == 0 {
		t.Fatalf("%d requests rejected, want 1–2", lim.rejected)
	}
	st := h.session.agents["default"].Status()
	if st.Threshold > 30000*3/4 {
		t.Fatalf("threshold %d does not follow the learned limit", st.Threshold)
	}
	// A new session starts with the stored limit: no refusal at all.
	h2 := newHarness(t)
	h2.deps.MaxTurns = 0
	h2.deps.Model = Model{Name: "local-model", ContextWindow: 128000}
	h2.deps.Limits = limits
	writeSrc(t, h2.dir, 40)
	w2 := &planWorker{calls: 60, steps: 3, final: "done", text: w.text, readArgs: w.readArgs, onSummary: w.onSummary}
	lim2 := &limited{limit: 30000, inner: w2.step}
	h2.srv.Serve(lim2.step)
	if out, err := h2.send(context.Background(), "Audit src/ again."); err != nil || out.ToolCalls != 60 {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if lim2.rejected != 0 {
		t.Fatalf("%d rejected with the stored limit", lim2.rejected)
	}
}

// Bad input: a learned limit smaller than the system prompt is a clear
// error naming the model and the numbers.
func TestLimitSmallerThanSystemPrompt(t *testing.T) {
	h := newHarness(t)
	h.deps.Model = Model{Name: "tiny-model", ContextWindow: 128000}
	h.srv.Push(llmtest.Fail{Status: 400, Message: "This model's maximum context length is 512 tokens. However, you requested 4000 tokens."})
	_, err := h.send(context.Background(), "hello")
	if err == nil || !strings.Contains(err.Error(), "model tiny-model: the limit its provider stated is 512 tokens") || !strings.Contains(err.Error(), "system prompt and tool schemas alone take") {
		t.Fatalf("err = %v", err)
	}
}

// Issue 12 #4: a 10 MB write_file argument. The call runs with the whole
// value; every later request stays under the hard limit; the session on
// disk resumes (--continue) under it too.
func TestHugeToolArgumentDoesNotRideAlong(t *testing.T) {
	h := newHarness(t)
	h.deps.Model = Model{Name: "gpt-4.1", ContextWindow: 128000}
	content := strings.Repeat("0123456789abcdef", (10<<20)/16)
	args := fmt.Sprintf(`{"path":"huge.txt","content":%q}`, content)
	h.srv.Push(
		llmtest.Reply{Text: "Writing the file.", ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: args}}, ChunkSize: 1 << 20},
		llmtest.Call("read_file", `{"path":"huge.txt","limit":3}`),
		llmtest.Call("run_command", `{"command":"wc -c huge.txt"}`),
		llmtest.Text("written"),
	)
	if out, err := h.send(context.Background(), "write a 10 MB file"); err != nil || out.Final != "written" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if fi, err := os.Stat(filepath.Join(h.dir, "huge.txt")); err != nil || fi.Size() != int64(len(content)) {
		t.Fatalf("huge.txt: %v", err)
	}
	hard := window.Settings{}.WithDefaults().Hard(h.session.agents["default"].budget())
	check := func(reqs []llmtest.Request) {
		t.Helper()
		for i, r := range reqs {
			if n := len(r.Raw) / 4; n > hard {
				t.Fatalf("request %d: ≈%d tokens > hard limit %d", i, n, hard)
			}
		}
	}
	check(h.srv.Requests()[1:])

	resumed, err := OpenSession(context.Background(), h.deps, h.record, SessionOptions{ID: h.session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	before := h.srv.Calls()
	h.srv.Push(llmtest.Text("still here"))
	if out, err := resumed.Send(context.Background(), "default", "continue"); err != nil || out.Final != "still here" {
		t.Fatalf("resume: out=%+v err=%v", out, err)
	}
	check(h.srv.Requests()[before:])
}

package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/memory/store"
	"polly/memory/task"
	"polly/memory/window"
	"polly/personas"
	"polly/tools"
	"polly/workspace"
)

// The per-step benchmark talks to the project's fake server over real
// HTTP, but in a child process (this test binary again, see TestMain): the
// server decodes and validates every request it receives, and that work —
// the model's side — must not count in Polly's time, bytes or allocations.
const stepServerEnv = "POLLY_STEP_BENCH_SERVER"

// serveStepModelIfAsked runs the scripted model of the step benchmark when
// this binary was started as its server: it prints the base URL and serves
// until stdin closes.
func serveStepModelIfAsked() {
	if os.Getenv(stepServerEnv) == "" {
		return
	}
	srv, err := llmtest.Start("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	srv.Serve(stepModel)
	srv.KeepLastOnly()
	fmt.Println(srv.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Close()
	os.Exit(0)
}

// stepModel is a model working through "work: N" — N steps, each some
// prose and one call (read_file of a source file, or grep), then a short
// answer. It reads only the request, so any number of agents and runs can
// share it.
func stepModel(r llmtest.Request) llmtest.Step {
	want, calls, total := 0, 0, 0
	for _, m := range r.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "work: ") {
			want, _ = strconv.Atoi(strings.TrimPrefix(m.Content, "work: "))
			calls = 0
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			calls++
			total++
		}
	}
	if calls >= want {
		return llmtest.Text("Done: the files are read and the pattern is where I said.")
	}
	// Prose of 350–1,000 characters, as a model explains its next move;
	// its length depends on the step of the run, not on the history.
	prose := strings.Repeat("Looking at how the loop hands results back, the next thing to check is the accumulator. ", 4+calls*2)
	// A measured run (of any size but warmUpSteps) reads and greps the same files
	// at every context size: the tools' own work is left out of the
	// harness's time, but not out of a profile or an instruction count
	// of the whole run, which compare sizes. The warm-up's tasks read
	// their way through all the files.
	n := total
	if want != warmUpSteps {
		n = calls
	}
	call := llmtest.ToolCall{Name: "read_file", Args: fmt.Sprintf(`{"path":"src/file%d.go"}`, n%benchFiles)}
	if n%3 == 2 {
		call = llmtest.ToolCall{Name: "grep", Args: fmt.Sprintf(`{"pattern":"func step%d","path":"src"}`, n%50)}
	}
	return llmtest.Reply{Text: prose, ToolCalls: []llmtest.ToolCall{call}, ChunkSize: 64}
}

const benchFiles = 24

// writeBenchSources fills dir/src with Go-like files of about 5 KB each
// (under read_file's offload limit, so they enter the context whole).
func writeBenchSources(tb testing.TB, dir string) {
	tb.Helper()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		tb.Fatal(err)
	}
	for f := range benchFiles {
		var b strings.Builder
		fmt.Fprintf(&b, "package src\n\n// File %d of the benchmark project.\n\n", f)
		for i := 0; b.Len() < 5000; i++ {
			n := f*100 + i
			fmt.Fprintf(&b, "// step%d advances the state by one and reports whether it moved.\nfunc step%d(s *state) bool {\n\tif s.n > %d {\n\t\treturn false\n\t}\n\ts.n += %d\n\treturn true\n}\n\n", n, n, n*7, i+1)
		}
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("file%d.go", f)), []byte(b.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// startStepServer starts the scripted model in a child process and returns
// its base URL.
func startStepServer(tb testing.TB) string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), stepServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("step server did not start: %v", err)
	}
	return strings.TrimSpace(line)
}

// stepClock measures, on the client side of the wire, what a step costs
// Polly: from the first byte of a reply to the moment the next request is
// written, minus the tools' own run time. The server's time (from a
// request written to its reply's first byte) is the model's and is left
// out; decoding the stream is Polly's and is in. It keeps wall time and
// this process's CPU time: on a loaded machine the wall clock also counts
// the time other processes had the cores, the CPU time does not.
type stepClock struct {
	next      http.RoundTripper // the transport a client makes for itself (llm.NewTransport)
	mu        sync.Mutex
	firstByte time.Time     // of the previous reply; zero at the start of a run
	firstCPU  time.Duration // process CPU time then
	firstSys  time.Duration // … of it in the kernel
	spent     time.Duration // harness time of the finished steps
	spentCPU  time.Duration
	spentSys  time.Duration // … of it in the kernel (getrusage's split)
	builtCPU  time.Duration // … up to the request built and handed to net/http, before the kernel copies it out
	steps     int
	toolTime  time.Duration
	toolCPU   time.Duration
	toolSys   time.Duration
	dials     int // connections opened (not reused from the pool)
}

// processCPU is the CPU time (user and system) this process has used, by
// CLOCK_PROCESS_CPUTIME_ID: getrusage's sum lags by up to a tick.
func processCPU() time.Duration {
	const clockProcessCPUTime = 2
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// processSys is the CPU time this process has spent in the kernel.
// getrusage splits its total by the ticks it sampled, so it is exact only
// over many steps.
func processSys() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Stime.Nano())
}

// timedTool measures a tool's own run, to leave it out of the step.
type timedTool struct {
	tools.Tool
	clock *stepClock
}

func (t timedTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	start, cpu, sys := time.Now(), processCPU(), processSys()
	res, err := t.Tool.Run(ctx, args)
	t.clock.mu.Lock()
	t.clock.toolTime += time.Since(start)
	t.clock.toolCPU += processCPU() - cpu
	t.clock.toolSys += processSys() - sys
	t.clock.mu.Unlock()
	return res, err
}

func (c *stepClock) RoundTrip(req *http.Request) (*http.Response, error) {
	// The step this request ends began at the previous reply's first byte;
	// taken now, since this reply's first byte may come before the
	// transport reports the request written.
	c.mu.Lock()
	from, fromCPU, fromSys := c.firstByte, c.firstCPU, c.firstSys
	if !from.IsZero() {
		c.builtCPU += processCPU() - fromCPU
	}
	c.mu.Unlock()
	trace := &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) {
			if from.IsZero() {
				return
			}
			c.mu.Lock()
			c.spent += time.Since(from)
			c.spentCPU += processCPU() - fromCPU
			c.spentSys += processSys() - fromSys
			c.steps++
			c.mu.Unlock()
		},
		GotConn: func(i httptrace.GotConnInfo) {
			if !i.Reused {
				c.mu.Lock()
				c.dials++
				c.mu.Unlock()
			}
		},
		GotFirstResponseByte: func() {
			c.mu.Lock()
			c.firstByte, c.firstCPU, c.firstSys = time.Now(), processCPU(), processSys()
			c.mu.Unlock()
		},
	}
	return c.next.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
}

// newRun forgets the last reply, so the gap between two runs is not a step.
func (c *stepClock) newRun() {
	c.mu.Lock()
	c.firstByte = time.Time{}
	c.mu.Unlock()
}

// observe keeps the context size of a run's first request.
func (r *stepRig) observe(e Event) {
	if u, ok := e.(Usage); ok && r.ctx == 0 {
		r.ctx = u.ContextTokens
	}
}

// perStep is the harness time per step so far: wall and CPU until the
// next request is written, CPU until it is built and handed over, and the
// kernel's part of the CPU.
func (c *stepClock) perStep() (wall, cpu, built, sys time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.steps == 0 {
		return 0, 0, 0, 0
	}
	n := time.Duration(c.steps)
	return (c.spent - c.toolTime) / n, (c.spentCPU - c.toolCPU) / n, (c.builtCPU - c.toolCPU) / n, (c.spentSys - c.toolSys) / n
}

func (c *stepClock) reset() {
	c.mu.Lock()
	c.spent, c.spentCPU, c.spentSys, c.builtCPU, c.steps, c.toolTime, c.toolCPU, c.toolSys, c.firstByte, c.dials = 0, 0, 0, 0, 0, 0, 0, 0, time.Time{}, 0
	c.mu.Unlock()
}

// stepRig is one agent in a temp project with a history of about the given
// number of tokens of context, talking to the step server.
type stepRig struct {
	agent *Agent
	clock *stepClock
	steps int    // tool-call steps a measured run makes
	base  int    // history length the measured runs start from
	ctx   int    // tokens of context of the first request of the last run
	task  []byte // the task state the measured runs start from
}

// warmUpSteps is the size of the tasks that grow a rig's history.
const warmUpSteps = 3

func newStepRig(tb testing.TB, url, model string, contextTokens, steps int) *stepRig {
	tb.Helper()
	dir := tb.TempDir()
	writeBenchSources(tb, dir)
	st, err := store.Open(filepath.Join(dir, ".agent", "polly.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	set, errs := personas.Load("")
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	rig := &stepRig{clock: &stepClock{next: llm.NewTransport()}, steps: steps}
	clock := rig.clock
	var fileTools []tools.Tool
	for _, t := range tools.FileTools(dir) {
		fileTools = append(fileTools, timedTool{Tool: t, clock: clock})
	}
	// The system prompt comes from a workspace made from the template, as
	// in a real run: it is assembled before every request.
	ws, err := workspace.Open(filepath.Join(dir, "workspace"), os.DirFS("../.agent-template"))
	if err != nil {
		tb.Fatal(err)
	}
	deps := &Deps{
		Prompts:    stepPrompts{ws: ws, project: dir},
		Store:      st,
		LLM:        llm.New(llm.Config{BaseURL: url, APIKey: "k", HTTPClient: &http.Client{Transport: clock}}),
		Tools:      tools.NewRegistry(fileTools...),
		Personas:   set,
		Gate:       tools.AllowAll{},
		Model:      Model{Name: model, ContextWindow: 1_000_000},
		Context:    window.Settings{SummarizeAt: 1_000_000}, // the history is the benchmark's variable: no summary cuts it
		ProjectDir: dir,
		StateDir:   filepath.Join(dir, ".agent"),
	}
	p, _ := set.Find("default")
	a := newAgent(deps, p, "", "", "default", rig.observe, nil, 0)
	sess, err := st.CreateSession(context.Background(), store.Session{Persona: "default"})
	if err != nil {
		tb.Fatal(err)
	}
	a.session = sess.ID
	// Grow the history in tasks of warmUpSteps steps until the context
	// reaches the size asked for.
	for a.lastContext < contextTokens {
		if _, err := a.Run(context.Background(), "work: "+strconv.Itoa(warmUpSteps)); err != nil {
			tb.Fatal(err)
		}
	}
	rig.agent, rig.base = a, len(a.history)
	if rig.task, err = json.Marshal(a.task); err != nil {
		tb.Fatal(err)
	}
	return rig
}

// stepPrompts is the workspace's system prompt, as agent/app gives it.
type stepPrompts struct {
	ws      *workspace.Workspace
	project string
}

func (p stepPrompts) SystemPrompt(per personas.Persona) (string, error) {
	pr, err := p.ws.SystemPrompt(workspace.PromptInput{PersonaPrompt: per.SystemPrompt, PersonaName: per.Name, ProjectDir: p.project})
	return pr.Text, err
}

// stepsPerRun is how many tool-call steps one measured run makes (one
// more request brings the final answer): few, so the context stays near
// the size measured (a file read adds about 1,400 tokens).
const stepsPerRun = 4

// run makes one measured run from the warm-up history: r.steps steps and
// the answer. The history is cut back first, so every run sees the
// same context size whatever b.N is.
func (r *stepRig) run(tb testing.TB) {
	// The messages past base are the last run's: overwritten, not
	// reallocated (a run of the real loop grows its history in place too).
	r.agent.history = r.agent.history[:r.base]
	// The task state too: follow-ups, files read and the plan would grow
	// the task block run after run.
	r.agent.task = task.State{}
	if err := json.Unmarshal(r.task, &r.agent.task); err != nil {
		tb.Fatal(err)
	}
	r.clock.newRun()
	r.ctx = 0
	if _, err := r.agent.Run(context.Background(), "work: "+strconv.Itoa(r.steps)); err != nil {
		tb.Fatal(err)
	}
}

// stepSizes are the contexts the benchmark measures, in tokens: a fresh
// conversation (the system prompt and tool schemas, about 1.3k tokens),
// then histories grown to 10k, 20k and 40k tokens.
var stepSizes = []int{0, 10_000, 20_000, 40_000}

// stepModels are the model names measured: an OpenAI one, whose messages
// are counted with the o200k tokenizer, and another, counted at four
// characters a token — the harness without the tokenizer's cost.
var stepModels = []struct{ label, name string }{{"o200k", "gpt-4.1"}, {"approx", "qwen3-coder"}}

// BenchmarkStepPerContext is issue 18's per-step harness cost as the
// context grows: one op is a run of 4 tool-call steps (read_file and grep
// results, prose) plus the final answer, against the fake server over
// HTTP. ns/op, B/op and allocs/op are the whole run's, Polly's process
// only; harness-µs/step (wall) and harness-cpu-µs/step (this process's
// CPU) are one step on the client side (stream decoding, tool result
// handling, store writes, context building, request encoding) without the
// model's and the tool's own time.
func BenchmarkStepPerContext(b *testing.B) {
	benchRuns(b, stepsPerRun, func(b *testing.B, rig *stepRig, user, sys time.Duration) {
		// The whole runs' CPU split into user and kernel time (tools
		// included): the kernel's share is what sending a bigger request
		// costs the system, not Polly's code.
		steps := float64(b.N * (stepsPerRun + 1))
		b.ReportMetric(float64(user.Nanoseconds())/1e3/steps, "run-user-µs/step")
		b.ReportMetric(float64(sys.Nanoseconds())/1e3/steps, "run-sys-µs/step")
		wall, cpu, built, harnessSys := rig.clock.perStep()
		b.ReportMetric(float64(wall.Nanoseconds())/1e3, "harness-µs/step")
		b.ReportMetric(float64(cpu.Nanoseconds())/1e3, "harness-cpu-µs/step")
		b.ReportMetric(float64(harnessSys.Nanoseconds())/1e3, "harness-sys-µs/step")
		b.ReportMetric(float64(built.Nanoseconds())/1e3, "built-cpu-µs/step")
		b.ReportMetric(float64(rig.clock.dials)/float64(b.N), "dials/op")
	})
}

// BenchmarkRunStartPerContext is BenchmarkStepPerContext's runs without
// the steps: a prompt the model answers at once, on the same histories.
// What a run costs besides its steps — a new prompt closing or continuing
// the last task, the first request after the history is cut back — is
// here too; a count of instructions (README, "Performance") takes the
// difference of the two, divided by the steps, for a step's own cost.
func BenchmarkRunStartPerContext(b *testing.B) {
	benchRuns(b, 0, func(b *testing.B, _ *stepRig, user, sys time.Duration) {
		b.ReportMetric(float64(user.Nanoseconds())/1e3/float64(b.N), "run-user-µs/run")
		b.ReportMetric(float64(sys.Nanoseconds())/1e3/float64(b.N), "run-sys-µs/run")
	})
}

// benchRuns measures runs of the given steps on a rig of every model and
// size, after one that warms the caches, and hands report the rig and the
// runs' user and kernel CPU.
func benchRuns(b *testing.B, steps int, report func(b *testing.B, rig *stepRig, user, sys time.Duration)) {
	url := startStepServer(b)
	for _, model := range stepModels {
		for _, size := range stepSizes {
			b.Run(model.label+"/"+stepSizeName(size), func(b *testing.B) {
				rig := newStepRig(b, url, model.name, size, steps)
				rig.run(b)
				rig.clock.reset()
				b.ReportAllocs()
				before := rusage(b)
				b.ResetTimer()
				for range b.N {
					rig.run(b)
				}
				b.StopTimer()
				after := rusage(b)
				report(b, rig, time.Duration(after.Utime.Nano()-before.Utime.Nano()), time.Duration(after.Stime.Nano()-before.Stime.Nano()))
				b.ReportMetric(float64(rig.ctx), "ctx-tokens")
				b.ReportMetric(float64(rig.base), "history-msgs")
			})
		}
	}
}

// rusage is this process's resource usage so far.
func rusage(tb testing.TB) syscall.Rusage {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		tb.Fatal(err)
	}
	return u
}

func stepSizeName(tokens int) string {
	if tokens == 0 {
		return "ctx=fresh"
	}
	return fmt.Sprintf("ctx=%dk", tokens/1000)
}

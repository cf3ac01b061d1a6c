// Package mcp connects Polly to MCP servers with the official Go SDK and
// adapts their tools to the tool registry as mcp__<server>__<tool>. The
// Manager starts every server in the background (a slow or broken one
// never holds anything up), restarts a server that dies once, then marks
// it failed, and reports each server's state for the UI.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"polly/tools"
)

// DefaultStartupTimeout bounds connecting and listing tools when a server's
// config gives none.
const DefaultStartupTimeout = 30 * time.Second

// DefaultToolTimeout bounds one tool call when a server's config gives
// none (Codex's tool_timeout_sec default is the same minute).
const DefaultToolTimeout = 60 * time.Second

// Config is one server, resolved by the app (environment, directory).
type Config struct {
	Name           string
	Transport      string // "stdio", "http" (streamable HTTP) or "sse"
	Command        string
	Args           []string
	Env            []string // the whole environment of a stdio server
	Dir            string
	URL            string
	Headers        map[string]string
	StartupTimeout time.Duration // 0: DefaultStartupTimeout
	ToolTimeout    time.Duration // one call; 0: DefaultToolTimeout
	Source         string        // where it was configured, for people
	// Broken, when set, is why the configuration cannot start this server
	// (an unset ${VAR}); it shows as failed and the others run.
	Broken        string
	Network       bool     // a stdio server may use the network (its config says so)
	WritableRoots []string // what a stdio server may write (absolute)
	// Spawn starts a stdio server's process (Command with Args, in Dir,
	// with Env), its stderr going to stderr, and returns its stdin and
	// stdout and kill, which kills it and everything it started. nil runs
	// the command unsandboxed; the app starts servers in the sandbox.
	Spawn func(c Config, stderr io.Writer) (stdin io.WriteCloser, stdout io.ReadCloser, kill func(), err error)
}

// State is where a server is in its life.
type State string

const (
	Starting   State = "starting"
	Ready      State = "ready"
	Restarting State = "restarting"
	Failed     State = "failed"
	Stopped    State = "stopped"
)

// Status is a server as the UI shows it.
type Status struct {
	Name      string
	Transport string
	Source    string
	State     State
	Tools     []string // the names the model sees
	Skipped   []string // tools left out, with the reason
	Err       string   // the last error ("" when none)
	Restarts  int
}

// Manager owns the servers of one process. It is safe for concurrent use.
type Manager struct {
	version string
	servers []*server
	gen     atomic.Uint64 // bumped whenever the set of tools changes

	startOnce sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	notifyMu sync.Mutex
	notify   func(Status) // hears when a server becomes ready, restarts or fails
}

// OnChange sets the function told when a server becomes ready, is
// restarted or fails (the UI shows it); it replaces an earlier one.
func (m *Manager) OnChange(f func(Status)) {
	if m == nil {
		return
	}
	m.notifyMu.Lock()
	m.notify = f
	m.notifyMu.Unlock()
}

func (m *Manager) changed(s *server) {
	m.gen.Add(1)
	m.notifyMu.Lock()
	f := m.notify
	m.notifyMu.Unlock()
	if f == nil {
		return
	}
	for _, st := range m.Status() {
		if st.Name == s.cfg.Name {
			f(st)
		}
	}
}

// New prepares the servers; nothing starts before Start.
func New(cfgs []Config, version string) *Manager {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{version: version, ctx: ctx, cancel: cancel}
	for _, c := range cfgs {
		if c.StartupTimeout <= 0 {
			c.StartupTimeout = DefaultStartupTimeout
		}
		if c.ToolTimeout <= 0 {
			c.ToolTimeout = DefaultToolTimeout
		}
		m.servers = append(m.servers, &server{cfg: c, m: m, state: Starting, settled: make(chan struct{})})
	}
	return m
}

// Len is the number of configured servers.
func (m *Manager) Len() int {
	if m == nil {
		return 0
	}
	return len(m.servers)
}

// Start connects every server in the background; later calls do nothing.
func (m *Manager) Start() {
	if m == nil {
		return
	}
	m.startOnce.Do(func() {
		for _, s := range m.servers {
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				s.run(m.ctx)
			}()
		}
	})
}

// Wait blocks until every server is ready or failed for the first time, or
// ctx ends. Each server's startup timeout bounds it.
func (m *Manager) Wait(ctx context.Context) {
	if m == nil {
		return
	}
	m.Start()
	for _, s := range m.servers {
		select {
		case <-s.settled:
		case <-ctx.Done():
			return
		}
	}
}

// Generation changes whenever the tools of the servers change, so agents
// know to rebuild their tool lists.
func (m *Manager) Generation() uint64 {
	if m == nil {
		return 0
	}
	return m.gen.Load()
}

// Tools are the tools of the servers that are ready, by server name.
func (m *Manager) Tools() []tools.Tool {
	if m == nil {
		return nil
	}
	var out []tools.Tool
	for _, s := range m.servers {
		s.mu.Lock()
		if s.state == Ready {
			out = append(out, s.tools...)
		}
		s.mu.Unlock()
	}
	return append(out, m.resourceTools()...)
}

// Status reports every server.
func (m *Manager) Status() []Status {
	if m == nil {
		return nil
	}
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		st := Status{Name: s.cfg.Name, Transport: s.cfg.Transport, Source: s.cfg.Source, State: s.state, Err: s.err,
			Restarts: s.restarts, Skipped: slices.Clone(s.skipped)}
		for _, t := range s.tools {
			st.Tools = append(st.Tools, t.Name())
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Close stops every server and waits for them.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	m.cancel()
	for _, s := range m.servers {
		s.close()
	}
	m.wg.Wait()
}

// server is one configured server and its live session.
type server struct {
	cfg     Config
	m       *Manager
	settled chan struct{} // closed once it is first ready or failed

	mu       sync.Mutex
	state    State
	err      string
	session  *sdk.ClientSession
	tools    []tools.Tool
	skipped  []string
	restarts int
	stderr   *tail // the end of a stdio server's stderr
	once     sync.Once
	// hangUp ends the connection's context: an SSE stream is a GET that
	// lives as long as the context Connect was given.
	hangUp       context.CancelCauseFunc
	instructions string   // what the server says about using it (initialize)
	resources    bool     // it offers resources
	prompts      []Prompt // its prompts, run as slash commands
}

func (s *server) settle() { s.once.Do(func() { close(s.settled) }) }

func (s *server) set(state State, err string) {
	s.mu.Lock()
	s.state, s.err = state, err
	s.mu.Unlock()
	if state == Stopped {
		s.m.gen.Add(1)
		return
	}
	s.m.changed(s)
}

// run connects, waits for the connection to end, restarts once, then gives up.
func (s *server) run(ctx context.Context) {
	defer s.settle()
	if s.cfg.Broken != "" {
		s.set(Failed, "not started because of "+s.cfg.Broken)
		return
	}
	for {
		cs, err := s.connect(ctx)
		if ctx.Err() != nil {
			s.set(Stopped, "")
			return
		}
		if err != nil {
			s.set(Failed, err.Error())
			return
		}
		s.settle()
		werr := cs.Wait()
		if ctx.Err() != nil {
			s.set(Stopped, "")
			return
		}
		why := "the server closed the connection"
		if werr != nil && !errors.Is(werr, sdk.ErrConnectionClosed) {
			why += ": " + werr.Error()
		}
		if tail := s.stderrTail(); tail != "" {
			why += " (stderr: " + tail + ")"
		}
		s.mu.Lock()
		restarted := s.restarts
		s.mu.Unlock()
		if restarted >= 1 {
			s.set(Failed, why+"; it was restarted once already")
			return
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
		s.set(Restarting, why)
	}
}

// errStartupTimeout ends a connection that did not start in time.
var errStartupTimeout = errors.New("startup timeout")

// connect starts the transport, initializes and lists the tools, all
// within the startup timeout. The connection's own context outlives this
// call (it is the session's): only the timer bounds the start.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	live, hangUp := context.WithCancelCause(ctx)
	timer := time.AfterFunc(s.cfg.StartupTimeout, func() { hangUp(errStartupTimeout) })
	fail := func(what string, cs *sdk.ClientSession, kill func(), err error) (*sdk.ClientSession, error) {
		timer.Stop()
		if cs != nil {
			_ = cs.Close()
		}
		if kill != nil {
			kill()
		}
		err = s.explain(what, live, err)
		hangUp(err)
		return nil, err
	}
	transport, kill, err := s.transport()
	if err != nil {
		return fail("could not start", nil, nil, err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "polly", Version: s.m.version}, nil)
	cs, err := client.Connect(live, transport, nil)
	if err != nil {
		return fail("could not start", nil, kill, err)
	}
	var list []tools.Tool
	var skipped []string
	for t, err := range cs.Tools(live, nil) {
		if err != nil {
			return fail("could not list its tools", cs, kill, err)
		}
		a, err := adapt(s, t)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", t.Name, err))
			continue
		}
		list = append(list, a)
	}
	prompts := listPrompts(live, s.cfg.Name, cs) // within the start-up timeout too
	if !timer.Stop() {
		return fail("could not start", cs, kill, errStartupTimeout)
	}
	init := cs.InitializeResult()
	s.mu.Lock()
	s.prompts = prompts
	s.session, s.tools, s.skipped, s.state, s.err = cs, list, skipped, Ready, ""
	s.hangUp = hangUp
	if init != nil {
		s.instructions = strings.TrimSpace(init.Instructions)
		s.resources = init.Capabilities != nil && init.Capabilities.Resources != nil
	}
	s.mu.Unlock()
	s.m.changed(s)
	return cs, nil
}

// explain words a start-up failure: a timeout says so, a process that
// exited shows the end of its stderr.
func (s *server) explain(what string, ctx context.Context, err error) error {
	msg := fmt.Sprintf("%s: %v", what, err)
	if errors.Is(context.Cause(ctx), errStartupTimeout) {
		msg = fmt.Sprintf("%s: no answer within the startup timeout of %s", what, s.cfg.StartupTimeout)
	}
	if tail := s.stderrTail(); tail != "" {
		msg += " (stderr: " + tail + ")"
	}
	return errors.New(msg)
}

func (s *server) close() {
	s.mu.Lock()
	cs, hangUp := s.session, s.hangUp
	s.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if hangUp != nil {
		hangUp(context.Canceled)
	}
}

// call runs one tool on the live session, bounded by the server's tool
// timeout: a tool that never answers must not hold a turn (or a headless
// run) forever.
func (s *server) call(ctx context.Context, name string, args map[string]any) (*sdk.CallToolResult, error) {
	cs, err := s.live()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ToolTimeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("MCP server %s: tool %s gave no answer within %s (tool_timeout_seconds in its config)", s.cfg.Name, name, s.cfg.ToolTimeout)
	}
	return res, err
}

// live is the session when the server is ready, else why not.
func (s *server) live() (*sdk.ClientSession, error) {
	s.mu.Lock()
	cs, state, why := s.session, s.state, s.err
	s.mu.Unlock()
	if state != Ready || cs == nil {
		msg := fmt.Sprintf("MCP server %s is %s", s.cfg.Name, state)
		if why != "" {
			msg += ": " + why
		}
		return nil, errors.New(msg)
	}
	return cs, nil
}

func (s *server) stderrTail() string {
	s.mu.Lock()
	t := s.stderr
	s.mu.Unlock()
	if t == nil {
		return ""
	}
	return t.last()
}

// transport builds the client side for the server's kind, and what kills
// a stdio server (and what it left behind) after a failed start.
func (s *server) transport() (sdk.Transport, func(), error) {
	switch s.cfg.Transport {
	case "http", "sse":
		hc := &http.Client{Transport: headers{base: http.DefaultTransport, h: s.cfg.Headers}}
		if s.cfg.Transport == "sse" {
			return &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil, nil
		}
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxRetries: 2}, nil, nil
	}
	if s.cfg.Command == "" {
		return nil, nil, errors.New("no command")
	}
	t := &tail{}
	s.mu.Lock()
	s.stderr = t
	s.mu.Unlock()
	if s.cfg.Spawn != nil {
		in, out, kill, err := s.cfg.Spawn(s.cfg, t)
		if err != nil {
			return nil, nil, err
		}
		return &spawnedTransport{stdin: in, stdout: out, kill: kill, noise: t}, kill, nil
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Env, cmd.Dir = s.cfg.Env, s.cfg.Dir
	cmd.SysProcAttr = procAttr()
	cmd.Stderr = t
	cmd.WaitDelay = 2 * time.Second // a child holding stderr open must not hang Close
	kill := func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	return &stdioTransport{cmd: cmd, noise: t}, kill, nil
}

// headers adds the configured headers to every request.
type headers struct {
	base http.RoundTripper
	h    map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = t.buf[len(t.buf)-tailSize:]
	}
	t.mu.Unlock()
	return len(p), nil
}

// last is the last non-empty line.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

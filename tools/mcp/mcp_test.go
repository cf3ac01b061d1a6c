package mcp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/tools"
)

// demoServer is the test MCP server (testdata/server), built once by TestMain.
var demoServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "polly-mcp-test")
	if err != nil {
		panic(err)
	}
	demoServer = filepath.Join(dir, "demo-server")
	if out, err := exec.Command("go", "build", "-o", demoServer, "./testdata/server").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("build the test MCP server: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func stdio(name, mode string, timeout time.Duration, env ...string) Config {
	return Config{Name: name, Transport: "stdio", Command: demoServer, Args: []string{mode}, Env: append(os.Environ(), env...), StartupTimeout: timeout}
}

func find(t *testing.T, m *Manager, name string) tools.Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func status(m *Manager, name string) Status {
	for _, s := range m.Status() {
		if s.Name == name {
			return s
		}
	}
	return Status{}
}

// Must show (issue 15 #1, server side): tools listed with sanitised names
// and schemas, a server that exits at start and one that hangs on
// initialize fail with their reason while the good one works, an error
// result is an error, other content is described.
func TestServersStartFailAndCall(t *testing.T) {
	m := New([]Config{
		stdio("demo", "ok", 20*time.Second, "DEMO_TOKEN=t-123"),
		stdio("broken", "exit", 20*time.Second),
		stdio("slow", "hang", time.Second),
	}, "test")
	defer m.Close()
	gen := m.Generation()
	start := time.Now()
	m.Wait(context.Background())
	if time.Since(start) > 15*time.Second {
		t.Fatalf("Wait took %s with a 1s startup timeout", time.Since(start))
	}
	if m.Generation() == gen {
		t.Fatal("the generation did not change when tools arrived")
	}
	demo := status(m, "demo")
	if demo.State != Ready || strings.Join(demo.Tools, ",") != "mcp__demo__crash,mcp__demo__echo,mcp__demo__fail,mcp__demo__picture" {
		t.Fatalf("demo = %+v", demo)
	}
	if len(demo.Skipped) != 1 || !strings.HasPrefix(demo.Skipped[0], "picky: ") || !strings.Contains(demo.Skipped[0], `"anyOf" at the top`) {
		t.Fatalf("picky tool not left out with a reason: %q", demo.Skipped)
	}
	if b := status(m, "broken"); b.State != Failed || !strings.Contains(b.Err, "could not start") || !strings.Contains(b.Err, "GITHUB_TOKEN is not set") {
		t.Fatalf("broken = %+v", b)
	}
	if s := status(m, "slow"); s.State != Failed || !strings.Contains(s.Err, "no answer within the startup timeout of 1s") {
		t.Fatalf("slow = %+v", s)
	}

	echo := find(t, m, "mcp__demo__echo")
	if p := echo.Schema().Properties["text"]; p == nil || p.Type != "string" {
		t.Fatalf("echo schema = %+v", echo.Schema())
	}
	acc, _ := echo.Access(context.Background(), json.RawMessage(`{"text":"hi"}`))
	if acc.Kind != tools.AccessExternal || !strings.Contains(acc.Preview, "MCP server demo, tool echo") {
		t.Fatalf("access = %+v", acc)
	}
	// Every result — an error's text too — arrives enveloped, naming the
	// server and tool (issue 25).
	res, err := echo.Run(context.Background(), json.RawMessage(`{"text":"hi"}`))
	src, inner, ok := tools.OpenEnvelope(res.Output)
	if err != nil || res.IsError || !ok || src != "MCP server demo, tool echo" || res.Untrusted != src ||
		!strings.HasPrefix(inner, "echo: hi") || !strings.Contains(inner, "token=t-123") {
		t.Fatalf("echo = %+v %v", res, err)
	}
	res, err = find(t, m, "mcp__demo__fail").Run(context.Background(), json.RawMessage(`{}`))
	src, inner, ok = tools.OpenEnvelope(res.Output)
	if err != nil || !res.IsError || !strings.HasPrefix(res.Output, "error: MCP server demo, tool fail reported an error:\n<untrusted-data ") ||
		!ok || src != "MCP server demo, tool fail" || inner != "disk on fire\n" {
		t.Fatalf("fail = %+v %v", res, err)
	}
	res, err = find(t, m, "mcp__demo__picture").Run(context.Background(), json.RawMessage(`{}`))
	if _, inner, _ := tools.OpenEnvelope(res.Output); err != nil || inner != "here it is\n[image content: image/png, 8 bytes, not shown]\n" {
		t.Fatalf("picture = %q %v", res.Output, err)
	}
}

// A server that dies is restarted once; when it dies again it is failed
// and its tools are gone.
func TestRestartOnceThenFail(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	m := New([]Config{stdio("demo", "ok", 20*time.Second, "MCP_TEST_STARTS="+starts)}, "test")
	defer m.Close()
	m.Wait(context.Background())
	crash := func() {
		t.Helper()
		_, _ = find(t, m, "mcp__demo__crash").Run(context.Background(), json.RawMessage(`{}`))
	}
	waitFor := func(want State, restarts int) Status {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := status(m, "demo")
			if s.State == want && s.Restarts == restarts {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("state %+v, want %s after %d restarts", s, want, restarts)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	crash()
	waitFor(Ready, 1)
	if b, _ := os.ReadFile(starts); strings.Count(string(b), "start") != 2 {
		t.Fatalf("starts = %q", b)
	}
	crash()
	s := waitFor(Failed, 1)
	if !strings.Contains(s.Err, "restarted once already") || !strings.Contains(s.Err, "crashing on request") {
		t.Fatalf("err = %q", s.Err)
	}
	if len(m.Tools()) != 0 {
		t.Fatal("a failed server still offers tools")
	}
	_, err := (&tool{srv: m.servers[0], remote: "echo"}).Run(context.Background(), json.RawMessage(`{"text":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "MCP server demo is failed") {
		t.Fatalf("call on a failed server: %v", err)
	}
}

func TestSanitize(t *testing.T) {
	ok := []string{
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"$schema":"https://json-schema.org/draft/2020-12/schema"}`,
		`{"properties":{"n":{"type":"integer"}}}`,
		`{"type":"object"}`,
	}
	for _, s := range ok {
		var v any
		_ = json.Unmarshal([]byte(s), &v)
		got, err := sanitize(v)
		if err != nil || got.Type != "object" || got.Properties == nil || got.Schema != "" {
			t.Errorf("%s: %+v %v", s, got, err)
		}
	}
	bad := map[string]string{
		`{"type":"array","items":{}}`:          `type "array"`,
		`{"type":"object","oneOf":[{},{}]}`:    `"oneOf" at the top`,
		`[1,2]`:                                "not a JSON object",
		`{"type":"object","properties":[1]}`:   "properties is not an object",
		`{"type":"object","$ref":"#/nowhere"}`: "cannot be used",
	}
	for s, want := range bad {
		var v any
		_ = json.Unmarshal([]byte(s), &v)
		if _, err := sanitize(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", s, err, want)
		}
	}
	if n, err := toolName("git hub", "search.code"); err != nil || n != "mcp__git_hub__search_code" {
		t.Fatalf("toolName = %q %v", n, err)
	}
	if _, err := toolName("s", strings.Repeat("x", 60)); err == nil {
		t.Fatal("a name over 64 characters must be left out")
	}
}

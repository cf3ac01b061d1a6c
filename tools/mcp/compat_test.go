package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"polly/tools"
)

// inner is what a server said, from inside the envelope its result must
// come in (issue 25).
func inner(t *testing.T, out string) string {
	t.Helper()
	_, in, ok := tools.OpenEnvelope(out)
	if !ok {
		t.Fatalf("not enveloped: %q", out)
	}
	return in
}

// A stdio server that prints a banner line on stdout before speaking
// JSON-RPC works; the line is kept in its stderr tail, not fatal.
func TestBannerLineIsPassedOver(t *testing.T) {
	m := New([]Config{stdio("demo", "banner", 20*time.Second)}, "test")
	defer m.Close()
	m.Wait(context.Background())
	if st := status(m, "demo"); st.State != Ready {
		t.Fatalf("a server with a banner line: %+v", st)
	}
	res, err := find(t, m, "mcp__demo__echo").Run(context.Background(), json.RawMessage(`{"text":"hi"}`))
	if err != nil || !strings.HasPrefix(inner(t, res.Output), "echo: hi") {
		t.Fatalf("echo after the banner: %+v %v", res, err)
	}
	if tail := m.servers[0].stderrTail(); !strings.Contains(tail, "Demo MCP server v1 running on stdio") {
		t.Fatalf("the banner is not in the stderr tail: %q", tail)
	}
}

// An SSE server keeps working after Connect returns: the stream's GET
// lives with the session, not with the start-up timeout's context.
func TestSSEServerWorksAfterConnect(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "sse", Version: "1"}, nil)
	type in struct {
		City string `json:"city"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "weather", Description: "Weather of a city."}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "rain in " + a.City}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer hs.Close()
	m := New([]Config{{Name: "sse", Transport: "sse", URL: hs.URL, StartupTimeout: 10 * time.Second}}, "test")
	defer m.Close()
	m.Wait(context.Background())
	if st := status(m, "sse"); st.State != Ready {
		t.Fatalf("sse = %+v", st)
	}
	time.Sleep(100 * time.Millisecond) // well after Connect returned
	for _, city := range []string{"Oslo", "Bergen"} {
		res, err := find(t, m, "mcp__sse__weather").Run(context.Background(), json.RawMessage(`{"city":"`+city+`"}`))
		if err != nil || inner(t, res.Output) != "rain in "+city+"\n" {
			t.Fatalf("call %s over SSE = %+v %v", city, res, err)
		}
	}
	if st := status(m, "sse"); st.State != Ready {
		t.Fatalf("after calls: %+v", st)
	}
}

// A tool that never answers ends at the server's tool timeout with a
// message that names it; the server stays usable.
func TestToolTimeout(t *testing.T) {
	c := stdio("demo", "rich", 20*time.Second)
	c.ToolTimeout = 300 * time.Millisecond
	m := New([]Config{c}, "test")
	defer m.Close()
	m.Wait(context.Background())
	start := time.Now()
	_, err := find(t, m, "mcp__demo__sleep").Run(context.Background(), json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "gave no answer within 300ms") || time.Since(start) > 5*time.Second {
		t.Fatalf("sleep: %v after %s", err, time.Since(start))
	}
	res, err := find(t, m, "mcp__demo__echo").Run(context.Background(), json.RawMessage(`{"text":"still here"}`))
	if err != nil || !strings.HasPrefix(inner(t, res.Output), "echo: still here") {
		t.Fatalf("echo after a timeout: %+v %v", res, err)
	}
	if (New([]Config{stdio("x", "ok", time.Second)}, "t")).servers[0].cfg.ToolTimeout != DefaultToolTimeout {
		t.Fatal("no default tool timeout")
	}
}

// Resources are reached through two tools; the server's instructions are
// offered for the system prompt.
func TestResourcesAndInstructions(t *testing.T) {
	m := New([]Config{stdio("demo", "rich", 20*time.Second), stdio("plain", "ok", 20*time.Second)}, "test")
	defer m.Close()
	m.Wait(context.Background())
	ins := m.Instructions()
	if len(ins) != 1 || ins[0].Server != "demo" || !strings.Contains(ins[0].Text, "Call echo to repeat text") {
		t.Fatalf("instructions = %+v", ins)
	}
	list, err := find(t, m, ListResourcesTool).Run(context.Background(), json.RawMessage(`{}`))
	if src, _, _ := tools.OpenEnvelope(list.Output); err != nil || src != "MCP server demo, resource list" || list.Untrusted != src ||
		!strings.Contains(inner(t, list.Output), "demo\tdemo://notes/today\ttoday\ttext/plain\tToday's notes.") {
		t.Fatalf("list = %+v %v", list, err)
	}
	read, err := find(t, m, ReadResourceTool).Run(context.Background(), json.RawMessage(`{"server":"demo","uri":"demo://notes/today"}`))
	if src, _, _ := tools.OpenEnvelope(read.Output); err != nil || inner(t, read.Output) != "buy milk; ship v2\n" ||
		src != "MCP server demo, resource demo://notes/today" || read.Untrusted != src {
		t.Fatalf("read = %+v %v", read, err)
	}
	bad, _ := find(t, m, ReadResourceTool).Run(context.Background(), json.RawMessage(`{"server":"plain","uri":"x"}`))
	if !bad.IsError || !strings.Contains(bad.Output, `no ready MCP server "plain" offers resources`) {
		t.Fatalf("read from a server without resources = %+v", bad)
	}
}

// A server whose configuration cannot be used (an unset ${VAR}) fails
// with the reason; the others start.
func TestBrokenConfigFailsOnlyThatServer(t *testing.T) {
	bad := stdio("bad", "ok", 10*time.Second)
	bad.Broken = "its configuration: ${GITHUB_TOKEN} is not set"
	m := New([]Config{bad, stdio("good", "ok", 20*time.Second)}, "test")
	defer m.Close()
	m.Wait(context.Background())
	if st := status(m, "bad"); st.State != Failed || !strings.Contains(st.Err, "${GITHUB_TOKEN} is not set") {
		t.Fatalf("bad = %+v", st)
	}
	if st := status(m, "good"); st.State != Ready {
		t.Fatalf("good = %+v", st)
	}
}

// A server's prompts are listed for the slash commands and fetched with
// their arguments by position (the last takes the rest).
func TestPrompts(t *testing.T) {
	m := New([]Config{stdio("demo", "rich", 20*time.Second), stdio("plain", "ok", 20*time.Second)}, "test")
	defer m.Close()
	m.Wait(context.Background())
	ps := m.Prompts()
	if len(ps) != 1 || ps[0].Command != "mcp__demo__review" || ps[0].Hint() != "<file> [focus]" || ps[0].Description != "Review a file with a focus." {
		t.Fatalf("prompts = %+v", ps)
	}
	p, ok := m.FindPrompt("mcp__demo__review")
	if !ok {
		t.Fatal("FindPrompt")
	}
	text, err := m.GetPrompt(context.Background(), p, []string{"main.go", "error", "handling"})
	if err != nil || text != "Review main.go with a focus on error handling." {
		t.Fatalf("GetPrompt = %q %v", text, err)
	}
	if _, err := m.GetPrompt(context.Background(), p, nil); err == nil || !strings.Contains(err.Error(), "/mcp__demo__review needs file (usage: /mcp__demo__review <file> [focus])") {
		t.Fatalf("missing argument: %v", err)
	}
}

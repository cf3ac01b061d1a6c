package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// buildDemoServer compiles the test MCP server (tools/mcp/testdata/server)
// into the test's temp dir.
func buildDemoServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo-server")
	if out, err := exec.Command("go", "build", "-o", bin, "../../tools/mcp/testdata/server").CombinedOutput(); err != nil {
		t.Fatalf("build the MCP test server: %v\n%s", err, out)
	}
	return bin
}

// Must show (issue 15 #1): a stdio MCP server built by the test: its tools
// are listed in the first request, a call through the real loop returns
// its result to the model, an error result comes back as an error; a
// server that exits at start and one that hangs on initialize are reported
// and do not stop the run; a tool with a schema the provider would reject
// is left out with a warning. The API key never reaches the server.
func TestMCPServerThroughTheLoop(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-must-not-leak-0000")
	bin := buildDemoServer(t)
	srv := llmtest.NewServer(t,
		llmtest.Call("mcp__demo__echo", `{"text":"ping"}`),
		llmtest.Call("mcp__demo__fail", `{}`),
		llmtest.Text("done"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, `{
  "permissions": {"allow": ["mcp__demo__*"]},
  "mcp_servers": {
    "demo": {"command": "`+bin+`", "args": ["ok"], "env": {"DEMO_TOKEN": "tok-9"}},
    "broken": {"command": "`+bin+`", "args": ["exit"]},
    "slow": {"command": "`+bin+`", "args": ["hang"], "startup_timeout_seconds": 1}
  }
}`)
	r := polly("-p", "use the demo server")
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"MCP server broken failed: could not start",
		"GITHUB_TOKEN is not set",
		"MCP server slow failed: could not start: no answer within the startup timeout of 1s",
		"MCP server demo is ready (4 tools); left out: picky:",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	var mcpTools []string
	for _, n := range reqs[0].Tools {
		if strings.HasPrefix(n, "mcp__") {
			mcpTools = append(mcpTools, n)
		}
	}
	if strings.Join(mcpTools, ",") != "mcp__demo__crash,mcp__demo__echo,mcp__demo__fail,mcp__demo__picture" {
		t.Fatalf("MCP tools offered = %v", mcpTools)
	}
	got := reqs[1].LastTurn()
	if got.Role != "tool" || !strings.Contains(got.Content, "echo: ping") || !strings.Contains(got.Content, "token=tok-9") {
		t.Fatalf("the MCP result did not reach the model: %+v", got)
	}
	if strings.Contains(got.Content, "sk-test") || !strings.Contains(got.Content, "key=,") {
		t.Fatalf("the API key reached the MCP server: %q", got.Content)
	}
	if got := reqs[2].LastTurn().Content; !strings.Contains(got, "disk on fire") {
		t.Fatalf("error result = %q", got)
	}

	r = polly("mcp", "list")
	if r.code != 1 || !strings.Contains(r.stdout, "demo") || !strings.Contains(r.stdout, "ready") || !strings.Contains(r.stdout, "mcp__demo__echo") ||
		!strings.Contains(r.stdout, "failed") || !strings.Contains(r.stdout, "left out picky") {
		t.Fatalf("polly mcp list: code=%d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// Without a rule an MCP tool needs approval (denied headless, with what to
// do); yolo runs it.
func TestMCPPermissions(t *testing.T) {
	bin := buildDemoServer(t)
	srv := llmtest.NewServer(t,
		llmtest.Call("mcp__demo__echo", `{"text":"a"}`), llmtest.Text("asked"),
		llmtest.Call("mcp__demo__echo", `{"text":"b"}`), llmtest.Text("ran"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, `{"mcp_servers": {"demo": {"command": "`+bin+`", "args": ["ok"]}}}`)
	if r := polly("-p", "echo"); r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if got := srv.Requests()[1].LastTurn().Content; !strings.Contains(got, "needs approval") || !strings.Contains(got, "mcp__demo__*") || strings.Contains(got, "echo: a") {
		t.Fatalf("ask mode headless: %q", got)
	}
	if r := polly("-p", "echo", "--yolo"); r.code != 0 {
		t.Fatalf("code=%d stderr=%s", r.code, r.stderr)
	}
	if got := srv.Requests()[3].LastTurn().Content; !strings.Contains(got, "echo: b") {
		t.Fatalf("yolo: %q", got)
	}
}

// A project's .mcp.json is listed and ignored until the project is trusted;
// a .mcp.json with a wrong type or a JSON typo is warned about, naming file,
// line and field, and never stops Polly.
func TestProjectMCPFile(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("ok"), llmtest.Text("ok"), llmtest.Text("ok"), llmtest.Text("ok"))
	env, polly := cliEnv(t, srv.URL(), nil)
	writeFile(t, filepath.Join(env.Dir, ".mcp.json"), `{"mcpServers": {"evil": {"command": "touch", "args": ["`+filepath.Join(env.Dir, "pwned")+`"]}}}`)
	r := polly("-p", "hi")
	if r.code != 0 || !strings.Contains(r.stderr, "project MCP servers ignored: the project is not trusted") || !strings.Contains(r.stderr, "evil (project .mcp.json:1)") {
		t.Fatalf("untrusted: code=%d stderr=%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(env.Dir, "pwned")); err == nil {
		t.Fatal("an untrusted .mcp.json ran its command")
	}
	for _, n := range srv.Last().Tools {
		if strings.HasPrefix(n, "mcp__") {
			t.Fatalf("an untrusted server's tool was offered: %s", n)
		}
	}
	// .mcp.json is the user's ecosystem: what does not fit is warned about,
	// naming file, line and field, and Polly starts anyway.
	writeFile(t, filepath.Join(env.Dir, ".mcp.json"), "{\n  \"mcpServers\": {\n    \"demo\": {\"command\": \"x\", \"args\": \"--fast\"}\n  }\n}\n")
	r = polly("-p", "hi")
	if r.code != 0 || !strings.Contains(r.stderr, ".mcp.json:3:") || !strings.Contains(r.stderr, "mcpServers.demo.args: expected an array") ||
		!strings.Contains(r.stderr, "this server is not started") {
		t.Fatalf("bad .mcp.json: code=%d stderr=%s", r.code, r.stderr)
	}
	writeFile(t, filepath.Join(env.Dir, ".mcp.json"), `{"mcpServers": {"web": {"type": "http"}}}`)
	if r := polly("-p", "hi"); r.code != 0 || !strings.Contains(r.stderr, `mcpServers.web: type "http" needs a url`) {
		t.Fatalf("http without url: code=%d stderr=%s", r.code, r.stderr)
	}
	writeFile(t, filepath.Join(env.Dir, ".mcp.json"), "{\n  \"mcpServers\": {\n    \"web\": {\"url\": \"https://x\",}\n  }\n}\n")
	if r := polly("-p", "hi"); r.code != 0 || !strings.Contains(r.stderr, ".mcp.json:3:") || !strings.Contains(r.stderr, "its MCP servers are not started until it is fixed") {
		t.Fatalf("JSON typo: code=%d stderr=%s", r.code, r.stderr)
	}
}

// Must show (issue 28 #2): a .mcp.json as Claude Code and other tools write
// it — "$schema", oauth, headersHelper, timeout, a url with no type, a
// disabled server — is used: the known parts start, each unknown field is
// warned about once. Polly's own config accepts Claude Code's spelling
// mcpServers.
func TestLenientMCPFile(t *testing.T) {
	bin := buildDemoServer(t)
	srv := llmtest.NewServer(t, llmtest.Call("mcp__demo__echo", `{"text":"lenient"}`), llmtest.Text("done"),
		llmtest.Call("mcp__mine__echo", `{"text":"alias"}`), llmtest.Text("done"))
	env, polly := cliEnv(t, srv.URL(), nil)
	writeFile(t, filepath.Join(env.Dir, ".mcp.json"), `{
  "$schema": "https://example.com/mcp.schema.json",
  "mcpServers": {
    "demo": {"command": "`+bin+`", "args": ["ok"], "timeout": 30000, "oauth": {"clientId": "x"}, "headersHelper": "./h.sh"},
    "off": {"command": "`+filepath.Join(env.Dir, "never")+`", "disabled": true},
    "remote": {"url": "http://127.0.0.1:1/mcp", "timeout": 5}
  }
}`)
	r := polly("-p", "echo", "--yolo", "--trust")
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	if got := srv.Requests()[1].LastTurn().Content; !strings.Contains(got, "echo: lenient") {
		t.Fatalf("the lenient server's tool did not run: %q", got)
	}
	for _, want := range []string{`unknown field "$schema" ignored`, `unknown field "oauth" ignored`, `unknown field "headersHelper" ignored`,
		`"disabled": true; this server is not started`, "MCP server remote"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, `unknown field "timeout" ignored`); n != 1 {
		t.Fatalf("the unknown timeout field was warned about %d times:\n%s", n, r.stderr)
	}
	if strings.Contains(r.stderr, "MCP server off") {
		t.Fatalf("a disabled server was started:\n%s", r.stderr)
	}

	os.Remove(filepath.Join(env.Dir, ".mcp.json"))
	userConfig(t, env, `{"mcpServers": {"mine": {"command": "`+bin+`", "args": ["ok"]}}}`)
	if r := polly("-p", "echo", "--yolo"); r.code != 0 {
		t.Fatalf("mcpServers in Polly's config: code=%d stderr=%s", r.code, r.stderr)
	}
	if got := srv.Requests()[3].LastTurn().Content; !strings.Contains(got, "echo: alias") {
		t.Fatalf("the aliased server's tool did not run: %q", got)
	}
}

// Issue 28 item 3 on the wire: 150 MCP tools are not sent (OpenAI takes
// 128 at most): the model gets a search tool, finds the tool it needs, and
// the next request carries it; the server-wide rule "mcp__many" allows its
// tools. A rich server's instructions reach the system prompt; a tool that
// never answers ends at tool_timeout_seconds; ${VAR:-default} fills in, and
// an unset ${VAR} fails only its server.
func TestMCPBudgetTimeoutsAndVariables(t *testing.T) {
	bin := buildDemoServer(t)
	t.Setenv("POLLY_TEST_DEMO_TOKEN", "")
	os.Unsetenv("POLLY_TEST_DEMO_TOKEN")
	os.Unsetenv("POLLY_TEST_UNSET")
	srv := llmtest.NewServer(t,
		llmtest.Call("mcp_tool_search", `{"query":"invoice customer"}`),
		llmtest.Call("mcp__many__create_invoice", `{"text":"ACME"}`),
		llmtest.Call("mcp_tool_search", `{"query":"select:mcp__rich__sleep,mcp__rich__echo"}`),
		llmtest.Call("mcp__rich__sleep", `{}`),
		llmtest.Call("mcp__rich__echo", `{"text":"vars"}`),
		llmtest.Text("done"),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, `{
  "permissions": {"allow": ["mcp__many", "mcp__rich"]},
  "mcp_servers": {
    "many": {"command": "`+bin+`", "args": ["many"]},
    "rich": {"command": "`+bin+`", "args": ["${POLLY_TEST_MODE:-rich}"], "env": {"DEMO_TOKEN": "${POLLY_TEST_DEMO_TOKEN:-fallback-tok}"}, "tool_timeout_seconds": 1},
    "needy": {"command": "`+bin+`", "args": ["ok"], "env": {"DEMO_TOKEN": "${POLLY_TEST_UNSET}"}}
  }
}`)
	r := polly("-p", "bill ACME")
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "MCP server needy failed: not started because of its configuration: ${POLLY_TEST_UNSET} is not set") {
		t.Fatalf("the unset variable is not named:\n%s", r.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests", len(reqs))
	}
	has := func(req llmtest.Request, name string) bool { return slices.Contains(req.Tools, name) }
	first := reqs[0]
	if len(first.Tools) > 128 || !has(first, "mcp_tool_search") || has(first, "mcp__many__create_invoice") || has(first, "mcp__many__tool_000") {
		t.Fatalf("first request: %d tools, search %v, invoice %v", len(first.Tools), has(first, "mcp_tool_search"), has(first, "mcp__many__create_invoice"))
	}
	if found := reqs[1].LastTurn().Content; !strings.Contains(found, "mcp__many__create_invoice") || !strings.Contains(found, "Create an invoice") {
		t.Fatalf("the search result: %q", found)
	}
	if !has(reqs[1], "mcp__many__create_invoice") || len(reqs[1].Tools) > 128 {
		t.Fatalf("the found tool is not sent next: %d tools", len(reqs[1].Tools))
	}
	if got := reqs[2].LastTurn().Content; !strings.Contains(got, "create_invoice done: ACME") {
		t.Fatalf("the loaded tool's result: %q", got)
	}
	if got := reqs[4].LastTurn().Content; !strings.Contains(got, "gave no answer within 1s") {
		t.Fatalf("the hung tool's result: %q", got)
	}
	if got := reqs[5].LastTurn().Content; !strings.Contains(got, "token=fallback-tok") {
		t.Fatalf("${VAR:-default} in env: %q", got)
	}
	if sys := first.Messages[0]; sys.Role != "system" || !strings.Contains(sys.Content, "How to use the MCP server rich") ||
		!strings.Contains(sys.Content, "Call echo to repeat text") {
		t.Fatalf("the server's instructions are not in the system prompt")
	}
}

// An MCP server's prompt runs as /mcp__server__prompt: headless, the model
// receives the text the server made from the arguments; a missing required
// argument sends nothing and exits 2.
func TestMCPPromptAsSlashCommand(t *testing.T) {
	bin := buildDemoServer(t)
	srv := llmtest.NewServer(t, llmtest.Text("reviewed"))
	env, polly := cliEnv(t, srv.URL(), nil)
	userConfig(t, env, `{"mcp_servers": {"rich": {"command": "`+bin+`", "args": ["rich"]}}}`)
	r := polly("-p", "/mcp__rich__review cmd/main.go error handling")
	if r.code != 0 || r.stdout != "reviewed\n" {
		t.Fatalf("code=%d stdout=%q stderr=%s", r.code, r.stdout, r.stderr)
	}
	if got := srv.Last().LastTurn().Content; got != "Review cmd/main.go with a focus on error handling." {
		t.Fatalf("the model received %q", got)
	}
	calls := srv.Calls()
	r = polly("-p", "/mcp__rich__review")
	if r.code != 2 || !strings.Contains(r.stderr, "needs file") || srv.Calls() != calls {
		t.Fatalf("missing argument: code=%d calls %d→%d stderr=%s", r.code, calls, srv.Calls(), r.stderr)
	}
}

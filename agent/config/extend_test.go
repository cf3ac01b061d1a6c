package config

import (
	"io/fs"
	"strings"
	"testing"
)

// Hooks and MCP servers load from the user file, the project file and
// .mcp.json with where each came from; `polly config` shows them; errors
// name the file, line and field.
func TestExtensionsLoad(t *testing.T) {
	files := map[string]string{
		"/home/u/.config/polly/config.json": `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}]},
 "mcp_servers": {"db": {"command": "db-mcp", "args": ["--ro"]}}}`,
		"/p/.agent/config.json": `{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"command": "fmt.sh"}]}]}}`,
		"/p/.mcp.json":          `{"mcpServers": {"web": {"type": "http", "url": "https://mcp.example.com/mcp"}, "db": {"command": "other"}}}`,
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	c, err := load(LoadOptions{ProjectDir: "/p", Home: "/home/u"}, read)
	if err != nil {
		t.Fatal(err)
	}
	// The project is not trusted: its hooks are held back and listed.
	hooks := c.HookEntries()
	if len(hooks) != 1 || hooks[0].Matcher.Matcher != "Bash" || hooks[0].Source.Kind != KindUserFile || hooks[0].Matcher.Hooks[0].Timeout != 5 {
		t.Fatalf("hooks = %+v", hooks)
	}
	if held := c.Untrusted(); len(held) == 0 || !strings.HasPrefix(held[0].Path, "hooks") {
		t.Fatalf("untrusted project hooks not listed as held: %+v", held)
	}
	servers := c.MCPServerEntries()
	if len(servers) != 2 || servers[0].Name != "db" || servers[0].Server.Command != "db-mcp" || servers[0].Source.Kind != KindUserFile ||
		servers[1].Name != "web" || servers[1].Server.Transport() != "http" || servers[1].Source.String() != "project .mcp.json:1" {
		t.Fatalf("servers = %+v", servers)
	}
	var b strings.Builder
	if err := c.Print(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`hooks.PreToolUse["Bash"]`, "./guard.sh", "mcp_servers.db", "stdio db-mcp --ro", "mcpServers.web", "http https://mcp.example.com/mcp"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("polly config lacks %q:\n%s", want, b.String())
		}
	}

	// A server that does not fit is left out with a located warning; the
	// rest of the file and Polly go on.
	files["/p/.mcp.json"] = "{\"mcpServers\": {\n  \"web\": {\"type\": \"websocket\", \"url\": \"https://x\"},\n  \"ok\": {\"url\": \"https://y\"}}}"
	c, err = load(LoadOptions{ProjectDir: "/p", Home: "/home/u"}, read)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range c.MCPServerEntries() {
		names = append(names, e.Name+"="+e.Server.Transport())
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, ".mcp.json:2:") || !strings.Contains(w, "mcpServers.web.type") ||
		strings.Join(names, ",") != "db=stdio,ok=http" {
		t.Fatalf("servers %v, warnings:\n%s", names, w)
	}
}

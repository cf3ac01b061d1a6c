package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/tools/mcp"
)

// A trusted project's .mcp.json servers and project hooks are used; an
// untrusted one's are listed in a warning and ignored.
func TestProjectExtensionsNeedTrust(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		srv := llmtest.NewServer(t, llmtest.Text("hi"))
		project, home := t.TempDir(), t.TempDir()
		marker := filepath.Join(project, "hook-ran")
		os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"proj": {"command": "false"}}}`), 0o644)
		os.MkdirAll(filepath.Join(project, ".agent"), 0o755)
		os.WriteFile(filepath.Join(project, ".agent/config.json"),
			[]byte(`{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "touch `+marker+`"}]}]}}`), 0o644)
		cfg, err := config.Load(config.LoadOptions{ProjectDir: project, Home: home})
		if err != nil {
			t.Fatal(err)
		}
		if trusted {
			if cfg, err = TrustProject(cfg); err != nil {
				t.Fatal(err)
			}
		}
		a, err := Open(context.Background(), Options{Config: cfg, ProjectDir: project,
			LLM: llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k"})})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var notices []string
		sess, err := a.Session(context.Background(), func(e agent.Event) {
			if n, ok := e.(agent.Notice); ok {
				mu.Lock()
				notices = append(notices, n.Text)
				mu.Unlock()
			}
		}, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Send(context.Background(), "default", "hello"); err != nil {
			t.Fatal(err)
		}
		a.MCP.Wait(context.Background())
		warnings := strings.Join(a.Warnings, "\n")
		_, statErr := os.Stat(marker)
		if trusted {
			st := a.MCP.Status()
			if len(st) != 1 || st[0].Name != "proj" || st[0].State != mcp.Failed || st[0].Source != "project .mcp.json:1" || statErr != nil {
				t.Fatalf("trusted: status %+v, hook ran: %v", st, statErr == nil)
			}
			mu.Lock()
			shown := strings.Join(notices, "\n")
			mu.Unlock()
			if !strings.Contains(shown, "MCP server proj failed: could not start") {
				t.Fatalf("the failure was not shown: %q", shown)
			}
		} else {
			if a.MCP != nil || statErr == nil || !strings.Contains(warnings, "project MCP servers ignored") || !strings.Contains(warnings, "are ignored: hooks") {
				t.Fatalf("untrusted: mcp %v, hook ran %v, warnings:\n%s", a.MCP, statErr == nil, warnings)
			}
		}
		a.Close()
	}
}

// A project whose only file that needs trust is .mcp.json: its servers are
// listed as needing trust, ignored until the user trusts the project, and
// used once trusted; a changed .mcp.json asks again.
func TestMCPFileAloneNeedsTrust(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	mcpPath := filepath.Join(project, ".mcp.json")
	os.WriteFile(mcpPath, []byte(`{"mcpServers": {"proj": {"command": "false"}}}`), 0o644)
	load := func() *config.Config {
		cfg, err := config.Load(config.LoadOptions{ProjectDir: project, Home: home})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	open := func(cfg *config.Config) *App {
		a, err := Open(context.Background(), Options{Config: cfg, ProjectDir: project, LLM: llm.New(llm.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "k"})})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	cfg := load()
	if held := cfg.Untrusted(); len(held) != 1 || held[0].Path != "mcpServers" || held[0].Source.Detail != config.MCPFile {
		t.Fatalf("untrusted keys = %+v", held)
	}
	if a := open(cfg); a.MCP != nil || !strings.Contains(strings.Join(a.Warnings, "\n"), "project MCP servers ignored") {
		t.Fatalf("untrusted .mcp.json used: mcp=%v warnings=%q", a.MCP, a.Warnings)
	}
	cfg, err := TrustProject(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a := open(cfg); a.MCP == nil || len(a.MCP.Status()) != 1 || a.MCP.Status()[0].Name != "proj" {
		t.Fatalf("trusted .mcp.json not used: %+v", a.MCP)
	}
	os.WriteFile(mcpPath, []byte(`{"mcpServers": {"proj": {"command": "true"}}}`), 0o644)
	if cfg := load(); cfg.ProjectTrust().Trusted {
		t.Fatal("a changed .mcp.json is still trusted")
	}
}

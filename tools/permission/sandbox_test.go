package permission

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"polly/tools"
	"polly/tools/sandbox"
)

// The modes over an active sandbox: what asks, and the grant a command
// runs with (issue 11, "Modes on top of the sandbox").
func TestSandboxedModes(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	outside := t.TempDir()
	active := sandbox.Status{Mode: sandbox.ModeAuto, Active: true, ABI: 6}
	ww, ro := sandbox.WorkspaceWrite, sandbox.ReadOnly
	cases := []struct {
		mode    Mode
		cmd     string
		network bool
		rules   Rules
		netCfg  bool
		verdict Verdict
		level   sandbox.Level
		net     bool
	}{
		{Ask, "ls -la", false, Rules{}, false, Allowed, ro, false},
		{Ask, "git status", false, Rules{}, false, Allowed, ro, false},
		{Ask, "touch b.txt", false, Rules{}, false, Asks, ww, false},
		{Ask, "echo x > a.txt", false, Rules{}, false, Asks, ww, false},
		{Ask, "rm -rf .git", false, Rules{}, false, Asks, ww, false},
		{Ask, "echo x > " + outside + "/f", false, Rules{}, false, Asks, ww, false},
		{Ask, "touch b.txt", false, Rules{Allow: []Rule{{Tool: "run_command", Pattern: "touch *"}}}, false, Allowed, ww, false},
		{Ask, "ls", true, Rules{}, false, Asks, ro, false},
		{Ask, "ls", true, Rules{}, true, Allowed, ro, true},
		{AutoEdit, "npm test", false, Rules{}, false, Allowed, ww, false},
		{AutoEdit, "rm -rf .git", false, Rules{}, false, Asks, ww, false}, // protected: asks in auto-edit too
		{AutoEdit, "git reset --hard", false, Rules{}, false, Asks, ww, false},
		{AutoEdit, "npm install", true, Rules{}, false, Asks, ww, false},
		{AutoEdit, "npm install", true, Rules{Allow: []Rule{{Tool: NetworkRule, Pattern: "npm install *"}}}, false, Allowed, ww, true},
		{AutoEdit, "curl x", true, Rules{Allow: []Rule{{Tool: NetworkRule, Pattern: "npm install *"}}}, false, Asks, ww, false},
		{AutoEdit, "npm install", true, Rules{}, true, Allowed, ww, true},
		{AutoEdit, "cp a " + outside + "/b", false, Rules{}, false, Asks, ww, false},
		{AutoEdit, "rm -rf x", false, Rules{Deny: []Rule{{Tool: "run_command", Pattern: "rm *"}}}, false, Refused, ww, false},
		{Yolo, "curl https://example.com", false, Rules{}, false, Allowed, ww, true},
		{Yolo, "rm -rf .git", false, Rules{}, false, Allowed, ww, true},
		{Yolo, "echo x > " + outside + "/f", false, Rules{}, false, Allowed, ww, true},
	}
	for _, c := range cases {
		p, err := New(Options{Mode: c.mode, Root: root, Rules: c.rules, Sandbox: active, Network: c.netCfg})
		if err != nil {
			t.Fatal(err)
		}
		d := p.Decide("run_command", tools.Access{Kind: tools.AccessExecute, Command: c.cmd, Network: c.network})
		if d.Verdict != c.verdict || d.Verdict != Refused && (d.Grant.Level != c.level || d.Grant.Network != c.net) {
			t.Errorf("%s %q network=%v: %v %v (%s), want %v %v network=%v", c.mode, c.cmd, c.network, d.Verdict, d.Grant, d.Reason, c.verdict, c.level, c.net)
		}
	}
}

// An approved write outside the project widens the grant by that path only;
// "allow with network" grants the network, and a session approval keeps it.
func TestSandboxApprovals(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	asker := &scripted{replies: []Reply{{Answer: AllowOnce}, {Answer: AllowSession, Network: true}}}
	p, _ := New(Options{Mode: Ask, Root: root, Asker: asker, Sandbox: sandbox.Status{Active: true}})
	ctx, err := p.Grant(context.Background(), "run_command", tools.Access{Kind: tools.AccessExecute, Command: "echo x > " + outside + "/f"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := sandbox.GrantFrom(ctx)
	if g.Level != sandbox.WorkspaceWrite || g.Network || len(g.Writable) != 1 || g.Writable[0] != filepath.Join(outside, "f") {
		t.Fatalf("grant %+v", g)
	}
	for i := 0; i < 2; i++ {
		ctx, err := p.Grant(context.Background(), "run_command", tools.Access{Kind: tools.AccessExecute, Command: "npm install", Network: true})
		if err != nil {
			t.Fatal(err)
		}
		if g, _ := sandbox.GrantFrom(ctx); !g.Network || g.Level != sandbox.WorkspaceWrite {
			t.Fatalf("call %d: grant %+v", i, g)
		}
	}
	if asker.n != 2 {
		t.Fatalf("asked %d times, want 2 (the session approval covers the repeat)", asker.n)
	}
	// Without the sandbox the gate grants the unsandboxed level.
	p2, _ := New(Options{Mode: Yolo, Root: root})
	ctx, _ = p2.Grant(context.Background(), "run_command", tools.Access{Kind: tools.AccessExecute, Command: "ls"})
	if g, _ := sandbox.GrantFrom(ctx); g.Level != sandbox.Unsandboxed {
		t.Fatalf("grant without sandbox %+v", g)
	}
	// Mode on without kernel support: refused outright.
	p3, _ := New(Options{Mode: Yolo, Root: root, Sandbox: sandbox.Status{Mode: sandbox.ModeOn, Refuse: true, Why: "no Landlock"}})
	if d := p3.Decide("run_command", tools.Access{Kind: tools.AccessExecute, Command: "ls"}); d.Verdict != Refused {
		t.Fatalf("mode on without sandbox: %v", d.Verdict)
	}
}

type scripted struct {
	replies []Reply
	n       int
}

func (s *scripted) Ask(context.Context, Request) (Reply, error) {
	r := s.replies[min(s.n, len(s.replies)-1)]
	s.n++
	return r, nil
}

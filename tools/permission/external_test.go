package permission

import (
	"testing"

	"polly/tools"
	"polly/tools/sandbox"
)

// MCP tools ask once per session unless a rule (a name or a pattern of
// names) decides; yolo runs them; a deny rule wins over yolo.
func TestExternalTools(t *testing.T) {
	acc := tools.Access{Kind: tools.AccessExternal}
	root := t.TempDir()
	mk := func(mode Mode, r Rules) *Policy {
		p, err := New(Options{Mode: mode, Root: root, Rules: r})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := mk(Ask, Rules{}).Decide("mcp__github__search", acc)
	if d.Verdict != Asks || d.Key != "external\x00mcp__github__search" || d.Covers != "calls of mcp__github__search" {
		t.Fatalf("ask: %+v", d)
	}
	allow := Rules{Allow: []Rule{{Tool: "mcp__github__*"}}}
	if d := mk(Ask, allow).Decide("mcp__github__search", acc); d.Verdict != Allowed || d.Rule == "" {
		t.Fatalf("allow rule: %+v", d)
	}
	if d := mk(Ask, allow).Decide("mcp__db__drop", acc); d.Verdict != Asks {
		t.Fatalf("the rule must not cover another server: %+v", d)
	}
	if d := mk(Yolo, Rules{}).Decide("mcp__db__drop", acc); d.Verdict != Allowed {
		t.Fatalf("yolo: %+v", d)
	}
	if d := mk(Yolo, Rules{Deny: []Rule{{Tool: "mcp__db__*"}}}).Decide("mcp__db__drop", acc); d.Verdict != Refused {
		t.Fatalf("deny rule in yolo: %+v", d)
	}
}

// A rule naming the server alone ("mcp__memory", Claude Code's form)
// covers every tool of that server and no other server's.
func TestServerRuleCoversItsTools(t *testing.T) {
	acc := tools.Access{Kind: tools.AccessExternal}
	for _, list := range []string{"allow", "deny"} {
		r := Rules{}
		rule := []Rule{{Tool: "mcp__memory"}}
		want := Allowed
		if list == "allow" {
			r.Allow = rule
		} else {
			r.Deny, want = rule, Refused
		}
		p, err := New(Options{Mode: Ask, Root: t.TempDir(), Rules: r})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range []string{"mcp__memory__create_entities", "mcp__memory__read_graph"} {
			if d := p.Decide(tool, acc); d.Verdict != want {
				t.Errorf("%s rule mcp__memory on %s: %+v", list, tool, d)
			}
		}
		for _, tool := range []string{"mcp__memoryx__read", "mcp__github__search"} {
			if d := p.Decide(tool, acc); d.Verdict != Asks {
				t.Errorf("%s rule mcp__memory reached %s: %+v", list, tool, d)
			}
		}
	}
}

// Issue 24 item 6: reading the deny-read set asks in every mode but yolo,
// for the file tools and for command lines that name it; Polly's own
// files are refused even in yolo. An approved command gets ReadSecrets.
func TestSecretReadsAsk(t *testing.T) {
	home := t.TempDir()
	sec := Secrets{Paths: []string{home + "/.ssh", home + "/.config/polly"}, Polly: []string{home + "/.config/polly"}, Home: home}
	box := sandbox.Status{Mode: sandbox.ModeAuto, Active: true}
	for _, mode := range []Mode{Ask, AutoEdit, Yolo} {
		p, err := New(Options{Mode: mode, Root: t.TempDir(), Secrets: sec, Sandbox: box})
		if err != nil {
			t.Fatal(err)
		}
		key := p.Decide("read_file", tools.Access{Kind: tools.AccessRead, Paths: []string{home + "/.ssh/id_rsa"}})
		own := p.Decide("read_file", tools.Access{Kind: tools.AccessRead, Paths: []string{home + "/.config/polly/config.json"}})
		plain := p.Decide("read_file", tools.Access{Kind: tools.AccessRead, Paths: []string{home + "/notes.txt"}})
		cat := p.Decide("run_command", tools.Access{Kind: tools.AccessExecute, Command: "cat ~/.ssh/id_rsa | base64"})
		catOwn := p.Decide("run_command", tools.Access{Kind: tools.AccessExecute, Command: "od -c $HOME/.config/polly/config.json"})
		wantKey := Asks
		if mode == Yolo {
			wantKey = Allowed
		}
		if key.Verdict != wantKey || cat.Verdict != wantKey || !cat.Grant.ReadSecrets {
			t.Errorf("%s: read_file of the ssh key %v, cat of it %v (read secrets %v); want %v", mode, key.Verdict, cat.Verdict, cat.Grant.ReadSecrets, wantKey)
		}
		if own.Verdict != Refused || catOwn.Verdict != Refused {
			t.Errorf("%s: Polly's own config: read_file %v, od %v; want refused", mode, own.Verdict, catOwn.Verdict)
		}
		if plain.Verdict != Allowed {
			t.Errorf("%s: an ordinary file in the home: %v", mode, plain.Verdict)
		}
	}
}

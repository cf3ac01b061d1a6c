package permission

import (
	"testing"

	"polly/tools"
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

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

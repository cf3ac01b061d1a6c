package permission

import (
	"context"
	"path/filepath"
	"testing"

	"polly/tools"
)

// A PreToolUse hook's "allow" lifts a question but not a hard protection;
// its "ask" turns a free call into a question (a denial headless).
func TestHookDecisions(t *testing.T) {
	root := t.TempDir()
	p, err := New(Options{Mode: Ask, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	write := tools.Access{Kind: tools.AccessWrite, Paths: []string{filepath.Join(root, "a.txt")}}
	outside := tools.Access{Kind: tools.AccessWrite, Paths: []string{filepath.Join(t.TempDir(), "b.txt")}}
	read := tools.Access{Kind: tools.AccessRead, Paths: []string{filepath.Join(root, "a.txt")}}
	allow := tools.WithHookDecision(context.Background(), "allow")
	ask := tools.WithHookDecision(context.Background(), "ask")

	if err := p.Allow(context.Background(), "write_file", write); err == nil {
		t.Fatal("a write in mode ask must need approval headless")
	}
	if err := p.Allow(allow, "write_file", write); err != nil {
		t.Fatalf("hook allow: %v", err)
	}
	if err := p.Allow(allow, "write_file", outside); err == nil {
		t.Fatal("a hook must not lift the outside-the-project protection")
	}
	if err := p.Allow(context.Background(), "read_file", read); err != nil {
		t.Fatalf("reads are free: %v", err)
	}
	if err := p.Allow(ask, "read_file", read); err == nil || !tools.IsDenied(err) {
		t.Fatalf("hook ask must ask (deny headless): %v", err)
	}
}

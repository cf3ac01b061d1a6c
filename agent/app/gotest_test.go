package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
	"polly/tools"
	"polly/tools/sandbox"
)

// Must show (issue 11 #2): a write-then-test loop on a small Go module works
// in workspace-write with the network off — the test fails, the model
// fixes the code, the test passes — through the real loop and sandbox.
func TestGoTestLoopInWorkspaceWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go module")
	}
	if st := sandbox.Resolve(sandbox.Settings{Mode: sandbox.ModeAuto}); !st.Active {
		t.Skipf("no sandbox here: %s", st.Why)
	}
	srv := llmtest.NewServer(t,
		llmtest.Call("write_file", `{"path":"go.mod","content":"module sum\n\ngo 1.22\n"}`),
		llmtest.Call("write_file", `{"path":"sum.go","content":"package sum\n\nfunc Add(a, b int) int { return a - b }\n"}`),
		llmtest.Call("write_file", `{"path":"sum_test.go","content":"package sum\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n"}`),
		llmtest.Call("run_command", `{"command":"go test ./... 2>&1"}`),
		llmtest.Call("edit_file", `{"path":"sum.go","old_string":"a - b","new_string":"a + b"}`),
		llmtest.Call("run_command", `{"command":"go vet ./... && go test -count=1 ./... && go build -o bin/sum.a . && ls bin"}`),
		llmtest.Text("fixed: the test passes"),
	)
	a, sess, project := wired(t, srv, "auto-edit")
	if !a.Sandbox.Active {
		t.Fatal("the sandbox is not active")
	}
	if d := a.Policy.Decide("run_command", tools.Access{Kind: tools.AccessExecute, Command: "go test ./..."}); d.Grant.Level != sandbox.WorkspaceWrite || d.Grant.Network {
		t.Fatalf("go test runs with %v, want workspace-write without network", d.Grant)
	}
	if _, err := sess.Send(context.Background(), "default", "make the sum test pass"); err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range srv.Last().Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 6 {
		t.Fatalf("%d tool results: %q", len(results), results)
	}
	first, second := results[3], results[5]
	t.Logf("first go test:\n%s\nsecond:\n%s", first, second)
	if !strings.Contains(first, "Add(2, 3) != 5") || !strings.Contains(first, "FAIL") {
		t.Fatalf("the first run should fail on the test: %s", first)
	}
	if !strings.HasPrefix(second, "exit code: 0") || !strings.Contains(second, "ok  \tsum") {
		t.Fatalf("the second run should pass: %s", second)
	}
	if _, err := os.Stat(filepath.Join(project, "bin", "sum.a")); err != nil {
		t.Fatalf("the build output is missing: %v", err)
	}
}

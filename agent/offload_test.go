package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"polly/agent/llmtest"
)

// writeOutputFile writes a file whose `cat` through run_command gives an
// output of exactly n characters ("exit code: 0\n" + the file), in lines of
// 60 characters with the failing line at the end, where errors land.
func writeOutputFile(t *testing.T, dir string, n int) string {
	t.Helper()
	body := n - len("exit code: 0\n")
	var b strings.Builder
	for i := 0; b.Len() < body; i++ {
		line := fmt.Sprintf("line %05d %s\n", i, strings.Repeat("x", 48))
		if rest := body - b.Len(); len(line) > rest {
			line = strings.Repeat("y", rest-1) + "\n"
		}
		b.WriteString(line)
	}
	name := fmt.Sprintf("out%d.txt", n)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// Issue 19 must show 2: outputs of 1,900 / 2,016 / 2,600 / 30,000
// characters. What the fake server received for each is never longer than
// the output itself; only the 30,000-character one is offloaded, and
// tool_executions.preview holds exactly what the model saw.
func TestPreviewNeverLargerThanItsOutput(t *testing.T) {
	sizes := []int{1900, 2016, 2600, 30000}
	var steps []llmtest.Step
	h := newHarness(t)
	for _, n := range sizes {
		name := writeOutputFile(t, h.dir, n)
		steps = append(steps, llmtest.Call("run_command", fmt.Sprintf(`{"command":"cat %s"}`, name)))
	}
	steps = append(steps, llmtest.Text("done"))
	h.srv.Push(steps...)
	if _, err := h.send(context.Background(), "show me the four outputs"); err != nil {
		t.Fatal(err)
	}
	reqs := h.srv.Requests()
	execs, err := h.store.ListToolExecutions(context.Background(), h.session.ID(), 0, 10)
	if err != nil || len(execs) != len(sizes) {
		t.Fatalf("executions: %d, %v", len(execs), err)
	}
	for i, n := range sizes {
		got := reqs[i+1].LastTurn()
		if got.Role != "tool" {
			t.Fatalf("request %d ends with %s", i+1, got.Role)
		}
		chars := utf8.RuneCountInString(got.Content)
		offloaded := strings.HasPrefix(got.Content, "[output #")
		t.Logf("output %6d chars → %6d chars in the context (offloaded %v)", n, chars, offloaded)
		if chars > n {
			t.Errorf("output of %d chars became %d chars in the context", n, chars)
		}
		var e = execs[0]
		for _, x := range execs {
			if strings.Contains(x.Arguments, fmt.Sprintf("out%d.txt", n)) {
				e = x
			}
		}
		if e.OutputChars != n {
			t.Fatalf("stored output of %d chars, want %d", e.OutputChars, n)
		}
		if n == 30000 {
			if !offloaded || chars > n*6/10 {
				t.Errorf("30,000 chars: offloaded=%v, %d chars in context", offloaded, chars)
			}
			if e.Preview != got.Content {
				t.Errorf("stored preview differs from what the model saw:\nstored %q\nsent   %q", trunc(e.Preview), trunc(got.Content))
			}
			continue
		}
		if offloaded || got.Content != mustOutput(t, h, e.ID) {
			t.Errorf("%d chars: the model did not get the whole output (offloaded %v)", n, offloaded)
		}
		if e.Preview != "" {
			t.Errorf("%d chars: a preview was stored for an output sent whole", n)
		}
	}
}

func mustOutput(t *testing.T, h *harness, id int64) string {
	t.Helper()
	out, err := h.store.Output(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

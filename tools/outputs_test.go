package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"polly/memory/chat"
	"polly/memory/store"
)

func outputStore(t *testing.T) (*store.Store, int64, int64) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	sess, err := st.CreateSession(ctx, store.Session{Persona: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "log line %d: ok\n", i)
	}
	b.WriteString("FATAL: disk full at step 1001\n")
	big, err := st.SaveToolExecution(ctx, store.ToolExecution{SessionID: sess.ID, Persona: "default", CallID: "c1", Tool: "run_command", Output: b.String(), Status: store.ExecOK})
	if err != nil {
		t.Fatal(err)
	}
	oneLine, err := st.SaveToolExecution(ctx, store.ToolExecution{SessionID: sess.ID, Persona: "default", CallID: "c2", Tool: "fetch_url", Output: `{"a":"` + strings.Repeat("é", 20000) + `"}`, Status: store.ExecOK})
	if err != nil {
		t.Fatal(err)
	}
	return st, big, oneLine
}

func TestReadAndGrepToolOutput(t *testing.T) {
	st, big, oneLine := outputStore(t)
	r := NewRegistry(OutputTools(st)...)
	run := func(name, args string) Result {
		return r.Execute(context.Background(), chat.ToolCall{Name: name, Arguments: args}, Exec{Gate: AllowAll{}})
	}
	cases := []struct {
		name, tool, args string
		wantErr          bool
		want             []string
	}{
		{"lines from an offset", "read_tool_output", fmt.Sprintf(`{"id":%d,"offset":999,"limit":5}`, big), false,
			[]string{"   999\tlog line 999: ok", "  1001\tFATAL: disk full", "[lines 999-1001 of 1001; end of output]"}},
		{"default slice continues", "read_tool_output", fmt.Sprintf(`{"id":%d}`, big), false,
			[]string{"     1\tlog line 1: ok", "read_tool_output(id=" + fmt.Sprint(big) + ", offset=201) continues"}},
		{"characters of a one-line output", "read_tool_output", fmt.Sprintf(`{"id":%d,"offset":7,"limit":3,"chars":true}`, oneLine), false,
			[]string{"ééé", "characters 7-10 of 20008"}},
		{"grep finds the error", "grep_tool_output", fmt.Sprintf(`{"id":%d,"pattern":"FATAL|line 50:"}`, big), false,
			[]string{"50: log line 50: ok", "1001: FATAL: disk full", "[2 matching lines"}},
		{"unknown id", "read_tool_output", `{"id":999999}`, true, []string{"no stored output #999999"}},
		{"unknown id grep", "grep_tool_output", `{"id":999999,"pattern":"x"}`, true, []string{"no stored output #999999"}},
		{"negative offset", "read_tool_output", fmt.Sprintf(`{"id":%d,"offset":-5}`, big), true, []string{"must not be negative"}},
		{"invalid regex", "grep_tool_output", fmt.Sprintf(`{"id":%d,"pattern":"(unclosed"}`, big), true, []string{`invalid pattern "(unclosed"`, "missing closing )"}},
		{"offset past the end", "read_tool_output", fmt.Sprintf(`{"id":%d,"offset":5000}`, big), false, []string{"has only 1001 lines"}},
		{"missing id", "read_tool_output", `{}`, true, []string{`missing properties: ["id"]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run(c.tool, c.args)
			if res.IsError != c.wantErr {
				t.Fatalf("IsError=%v, output %q", res.IsError, res.Output)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Output, w) {
					t.Fatalf("output lacks %q:\n%s", w, res.Output)
				}
			}
		})
	}
}

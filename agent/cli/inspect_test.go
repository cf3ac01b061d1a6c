package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"polly/agent/llmtest"
)

// wireOf is a request body as JSON values, without what only concerns the
// transport (stream, stream_options) and with max_completion_tokens read
// as max_tokens: what the model received.
func wireOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not JSON: %v\n%.300s", err, body)
	}
	delete(m, "stream")
	delete(m, "stream_options")
	if v, ok := m["max_completion_tokens"]; ok {
		m["max_tokens"] = v
		delete(m, "max_completion_tokens")
	}
	return m
}

// inspectTask: a task with a summary, stale outputs shrunk, an offloaded
// output and a failed call that fades, so records hold shortened messages.
func inspectTask(t *testing.T) (Env, func(args ...string) runResult, *llmtest.Server, string) {
	t.Helper()
	w := &itemWorker{steps: 14}
	srv := llmtest.NewServer(t)
	step := 0
	srv.Serve(func(r llmtest.Request) llmtest.Step {
		if !strings.Contains(r.Messages[0].Content, "You are compacting") {
			step++
			switch step {
			case 3:
				return llmtest.Reply{Text: "ITEM-x: the log.", ToolCalls: []llmtest.ToolCall{{Name: "run_command", Args: `{"command":"seq 1 3000"}`}}}
			case 5:
				return llmtest.Call("read_file", `{"path":"missing.txt"}`)
			}
		}
		return w.step(r)
	})
	env, polly := cliEnv(t, srv.URL(), nil)
	for k := 0; k < 4; k++ {
		os.WriteFile(filepath.Join(env.Dir, fmt.Sprintf("note%d.txt", k)), []byte(strings.Repeat(fmt.Sprintf("note %d line\n", k), 200)), 0o644)
	}
	cfg := filepath.Join(env.Home, ".config", "polly", "config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`{"context": {"summarize_at_tokens": 12000, "keep_recent_messages": 4, "stale_after_messages": 6}}`), 0o644)
	if r := polly("-p", "Read the notes one by one and report.", "--yolo"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	id, _ := storedMessages(t, env.Dir)
	return env, polly, srv, id
}

// Issue 27 #5 and must show 3: every call of a session — main and
// summarizer — is rebuilt from its record, and the rebuilt request is the
// body the fake server received (JSON-equal: same model, messages, tools,
// temperature, max tokens); polly inspect shows one after a summary with
// its token breakdown.
func TestInspectRebuildsEveryRequest(t *testing.T) {
	env, polly, srv, id := inspectTask(t)
	reqs := srv.Requests()
	list := polly("inspect", id)
	if list.code != 0 {
		t.Fatalf("inspect list: %d %s", list.code, list.stderr)
	}
	lines := regexp.MustCompile(`(?m)^ +\d+  `).FindAllString(list.stdout, -1)
	if len(lines) != len(reqs) {
		t.Fatalf("%d calls listed, the server got %d requests:\n%s", len(lines), len(reqs), list.stdout)
	}
	summarizer, shortened, afterSummary := 0, 0, 0
	for i, req := range reqs {
		r := polly("inspect", id, fmt.Sprint(i+1), "--json")
		if r.code != 0 {
			t.Fatalf("inspect call %d: %d %s", i+1, r.code, r.stderr)
		}
		got, want := wireOf(t, []byte(r.stdout)), wireOf(t, req.Raw)
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Fatalf("call %d: the rebuilt request differs from what the server received\nrebuilt  %.2000s\nreceived %.2000s", i+1, g, w)
		}
		if strings.Contains(req.Messages[0].Content, "You are compacting") {
			summarizer++
			continue
		}
		summary, short := false, false
		for _, m := range req.Messages {
			summary = summary || strings.HasPrefix(m.Content, "[CONTEXT SUMMARY #")
			short = short || strings.HasPrefix(m.Content, "[output #") || strings.HasPrefix(m.Content, "[faded:")
		}
		if short {
			shortened++
		}
		if summary && (afterSummary == 0 || short) {
			afterSummary = i + 1 // the last after a summary with a shortened message, else the first
		}
	}
	if summarizer == 0 || afterSummary == 0 || shortened == 0 {
		t.Fatalf("the task made %d summarizer calls, a summary sent on call %d, %d requests with shortened messages: not the case to prove", summarizer, afterSummary, shortened)
	}
	// A stale output sent as its stub is named, not copied: the stub's
	// text is stored once, with its message.
	st, _ := latestSession(t, env.Dir)
	calls, err := st.Calls(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	stubs := 0
	for _, c := range calls {
		for _, rm := range c.Record.Messages {
			if rm.Stub {
				stubs++
			}
			if rm.Content != nil && strings.HasPrefix(*rm.Content, "[output #") {
				t.Fatalf("call %d's record copies a stub's text for message %d: %q", c.Number, rm.ID, *rm.Content)
			}
		}
	}
	if stubs == 0 {
		t.Fatal("no record names a message sent as its stub")
	}
	r := polly("inspect", id, fmt.Sprint(afterSummary))
	if r.code != 0 {
		t.Fatalf("inspect: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"system prompt", "memory files", "tools (", "summary", "history", "task block", "free",
		"user [summary]", "user [task block]", "shortened for the context"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("polly inspect lacks %q:\n%s", want, r.stdout)
		}
	}
	t.Logf("polly inspect %s %d:\n%s", id[:8], afterSummary, r.stdout)
	_ = env
}

// Bad input: a damaged request record — unreadable JSON, a message it
// names gone, a message changed since — is named clearly; the other calls
// still rebuild, and the session resumes.
func TestDamagedRequestRecord(t *testing.T) {
	env, polly, srv, id := inspectTask(t)
	db, err := sql.Open("sqlite", filepath.Join(env.Dir, ".agent", "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var calls []int64
	rows, err := db.Query(`SELECT id FROM llm_calls WHERE session_id = ? ORDER BY id`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c int64
		rows.Scan(&c)
		calls = append(calls, c)
	}
	rows.Close()
	last := len(calls)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE llm_calls SET request = '{"kind": "main", "messa' WHERE id = ?`, calls[1])
	// A message the last call sent, changed behind Polly's back.
	var rec string
	db.QueryRow(`SELECT request FROM llm_calls WHERE id = ?`, calls[last-1]).Scan(&rec)
	m := regexp.MustCompile(`"(\d+)(?:-\d+)?"`).FindStringSubmatch(rec)
	if m == nil {
		t.Fatalf("the last record names no message: %.300s", rec)
	}
	exec(`UPDATE messages SET content = content || ' (edited)' WHERE id = ?`, m[1])

	for _, c := range []struct {
		n    int
		want string
	}{
		{2, "call 2: the stored request record is damaged: the stored request record is not valid JSON"},
		{last, fmt.Sprintf("call %d: the stored request record is damaged: the messages it names no longer give the request that was sent", last)},
	} {
		r := polly("inspect", id, fmt.Sprint(c.n))
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Fatalf("inspect call %d: code %d\nstdout %s\nstderr %s", c.n, r.code, r.stdout, r.stderr)
		}
	}
	if r := polly("inspect", id, "1"); r.code != 0 || !strings.Contains(r.stdout, "Messages (") {
		t.Fatalf("an intact call no longer inspects: %d %s", r.code, r.stderr)
	}
	if r := polly("inspect", id, "999"); r.code != 2 || !strings.Contains(r.stderr, "there is no call 999") {
		t.Fatalf("inspect 999: %d %s", r.code, r.stderr)
	}
	srv.Push(llmtest.Text("Resumed fine."))
	if r := polly("-p", "go on", "--continue"); r.code != 0 || !strings.Contains(r.stdout, "Resumed fine.") {
		t.Fatalf("resume after damage: %d %s", r.code, r.stderr)
	}
	_ = context.Background
}

// A session id can be all digits: one argument that is a whole session id
// names the session (CI met a session "91754235" read as call 91754235);
// a number that is no session's id is a call of the latest session.
func TestInspectTarget(t *testing.T) {
	isSession := func(id string) bool { return id == "91754235" || id == "0a1b2c3d" }
	for _, c := range []struct {
		args    []string
		session string
		call    int
	}{
		{nil, "latest", -1},
		{[]string{"91754235"}, "91754235", -1},
		{[]string{"7"}, "latest", 7},
		{[]string{"0a1b"}, "0a1b", -1},
		{[]string{"91754235", "3"}, "91754235", 3},
		{[]string{"917"}, "latest", 917},
	} {
		session, call, err := inspectTarget(c.args, isSession)
		if err != nil || session != c.session || call != c.call {
			t.Errorf("%q: session %q, call %d, %v; want %q, %d", c.args, session, call, err, c.session, c.call)
		}
	}
	if _, _, err := inspectTarget([]string{"91754235", "x"}, isSession); err == nil {
		t.Error("a call that is not a number was taken")
	}
}

package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/llm"
	"polly/agent/llmtest"
	"polly/tools/permission"
)

// answerOnce allows every question and counts them.
type answerOnce struct{ asked int }

func (a *answerOnce) Ask(context.Context, permission.Request) (permission.Reply, error) {
	a.asked++
	return permission.Reply{Answer: permission.AllowOnce}, nil
}

// Must show (issue 28 #1): the Notification hooks fire when a permission
// dialog opens (permission_prompt); SessionEnd fires when the session is
// cleared (and, with the other reason, when Polly exits) and the next
// session starts with source clear; SubagentStart gets the sub-agent's
// type.
func TestNotificationSessionEndAndSubagentHooks(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Call("run_command", `{"command":"touch made-by-command"}`), llmtest.Text("ran"),
		llmtest.Call("delegate_task", `{"agent":"coder","task":"look"}`), llmtest.Text("looked"), llmtest.Text("delegated"),
		llmtest.Text("hi"),
	)
	project, home := t.TempDir(), t.TempDir()
	log := filepath.Join(project, "hooks.log")
	hook := func(event string) string {
		return `"` + event + `": [{"hooks": [{"type": "command", "command": "jq -r '.hook_event_name + \" \" + (.notification_type // .reason // .agent_type // .source // \"\")' >> ` + log + `"}]}]`
	}
	os.MkdirAll(filepath.Join(home, ".config", "polly"), 0o755)
	os.WriteFile(filepath.Join(home, ".config", "polly", "config.json"),
		[]byte(`{"notify_after_seconds": 3600, "hooks": {`+hook("Notification")+`, `+hook("SessionEnd")+`, `+hook("SubagentStart")+`, `+hook("SessionStart")+`}}`), 0o644)
	mode := "ask"
	cfg, err := config.Load(config.LoadOptions{ProjectDir: project, Home: home, Flags: config.Flags{Mode: &mode}})
	if err != nil {
		t.Fatal(err)
	}
	asker := &answerOnce{}
	a, err := Open(context.Background(), Options{Config: cfg, ProjectDir: project, Asker: asker, LLM: llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k"})})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := a.Session(context.Background(), func(agent.Event) {}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Send(context.Background(), "default", "run echo"); err != nil || asker.asked != 1 {
		t.Fatalf("send: %v (asked %d)", err, asker.asked)
	}
	if _, err := sess.Send(context.Background(), "default", "delegate"); err != nil {
		t.Fatal(err)
	}
	second, err := a.Session(context.Background(), func(agent.Event) {}, "") // /clear
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Send(context.Background(), "default", "hello"); err != nil {
		t.Fatal(err)
	}
	a.Close()
	want := []string{"SessionStart startup", "Notification permission_prompt", "SubagentStart coder", "SessionEnd clear", "SessionStart clear", "SessionEnd other"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		got := strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
		text := strings.Join(got, " ")
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(text, w)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hooks.log:\n%s\nwant lines %q", b, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

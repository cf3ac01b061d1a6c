package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"polly/agent/llmtest"
	"polly/memory/chat"
	"polly/memory/store"
)

// swapPoints are the points of the summary swap a process can die at, in
// order: the transaction begun, the summary row written, the replaced
// messages archived, the summary message stored, the kept messages
// stored, just before the commit, and after it.
var swapPoints = []string{"swap-begun", "swap-summary-row", "swap-archived", "swap-summary-message", "swap-kept", "swap-before-commit", "summary-swapped"}

// itemWorker scripts a model that reads a file per step and writes
// "ITEM-n" in each reply; the summarizer's reply lists every item its
// transcript and previous summary carried, so a test can tell what a
// summary covers.
type itemWorker struct {
	mu    sync.Mutex
	steps int
	done  int
}

var itemMark = regexp.MustCompile(`ITEM-\d+\b`)

func (w *itemWorker) step(r llmtest.Request) llmtest.Step {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(r.Messages[0].Content, "You are compacting") {
		items := strings.Join(itemMark.FindAllString(r.LastMessage().Content, -1), " ")
		return llmtest.Text("## CURRENT TASK\nRead the notes.\n\n## COMPLETED SO FAR\n- covered: " + items + "\n\n## IN PROGRESS / NEXT\n- keep reading\n\n## KEY FACTS\n- notes are plain text\n\n## BLOCKED / ISSUES\nnone\n")
	}
	if w.done >= w.steps {
		return llmtest.Text("All notes read.")
	}
	w.done++
	return llmtest.Reply{Text: fmt.Sprintf("ITEM-%d: reading the next note. %s", w.done, strings.Repeat("Notes on the earlier file. ", 40)),
		ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":"note%d.txt"}`, w.done%4)}}}
}

// stored reads the session's live messages, its summaries and the agent's
// stored task state.
func storedSwap(t *testing.T, dir string) (live []chat.Message, sums []store.Summary, compactions int) {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, ".agent", "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	s, err := st.LatestSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if live, err = st.Messages(ctx, s.ID, "default"); err != nil {
		t.Fatal(err)
	}
	if sums, err = st.Summaries(ctx, s.ID, "default"); err != nil {
		t.Fatal(err)
	}
	b, err := st.AgentState(ctx, s.ID, "default")
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Compactions int `json:"compactions"`
	}
	if err := json.Unmarshal(b, &state); err != nil {
		t.Fatal(err)
	}
	return live, sums, state.Compactions
}

// Must show (issue 27 #4): kill -9 at each point of the summary swap. The
// store holds the old conversation (killed before the commit) or the new
// one (after it) — never a mix: no summary row without its message, no
// conversation without its recent messages, a compaction count that
// matches — and the session resumes with every item the model wrote
// either sent or carried by the summary.
func TestKill9AtEachPointOfTheSummarySwap(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 processes")
	}
	for i, point := range swapPoints {
		t.Run(point, func(t *testing.T) {
			w := &itemWorker{steps: 12}
			srv := llmtest.NewServer(t)
			srv.Serve(w.step)
			env, polly := cliEnv(t, srv.URL(), nil)
			for k := 0; k < 4; k++ {
				os.WriteFile(filepath.Join(env.Dir, fmt.Sprintf("note%d.txt", k)), []byte(strings.Repeat(fmt.Sprintf("note %d line\n", k), 200)), 0o644)
			}
			cfg := filepath.Join(env.Home, ".config", "polly", "config.json")
			os.MkdirAll(filepath.Dir(cfg), 0o755)
			os.WriteFile(cfg, []byte(`{"context": {"summarize_at_tokens": 12000, "keep_recent_messages": 4}}`), 0o644)

			cmd := pollyCmd(t, env, srv.URL(), []string{"-p", "Read the notes one by one and report.", "--yolo"})
			cmd.Env = append(cmd.Env, "POLLY_KILL_AT="+point)
			if err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("the run was not killed at %s: %v", point, err)
			}
			live, sums, compactions := storedSwap(t, env.Dir)
			committed := i >= len(swapPoints)-1
			switch {
			case len(live) == 0:
				t.Fatalf("killed at %s: the live conversation is empty", point)
			case committed && (len(sums) != 1 || live[0].Kind != chat.KindSummary || compactions != 1):
				t.Fatalf("killed after the commit: %d summaries, first live message %q, compactions %d", len(sums), live[0].Kind, compactions)
			case !committed && (len(sums) != 0 || live[0].Kind == chat.KindSummary || compactions != 0):
				t.Fatalf("killed before the commit: %d summaries, first live message %q, compactions %d — a half-done swap", len(sums), live[0].Kind, compactions)
			}
			made := w.done
			// The old conversation whole, or the summary and the recent
			// messages: the last one stored is the newest tool result.
			if !committed && len(live) != 1+2*made {
				t.Fatalf("killed before the commit: %d live messages, want the user's and %d steps'", len(live), made)
			}
			if last := live[len(live)-1]; last.Role != chat.Tool || len(live) < 3 {
				t.Fatalf("the recent messages are lost: %d live, last %s", len(live), last.Role)
			}
			t.Logf("killed at %s after %d items: %d live messages, %d summaries", point, made, len(live), len(sums))

			// Resume: the next request holds every item, sent or summarized.
			w.mu.Lock()
			w.steps = w.done // answer at once
			w.mu.Unlock()
			r := polly("-p", "go on", "--continue", "--yolo")
			if r.code != 0 {
				t.Fatalf("resume: code %d: %s", r.code, r.stderr)
			}
			var req llmtest.Request
			for _, q := range srv.Requests() {
				if !strings.Contains(q.Messages[0].Content, "You are compacting") {
					req = q
				}
			}
			var text strings.Builder
			for _, m := range req.Messages {
				text.WriteString(m.Content + "\n")
			}
			for n := 1; n <= made; n++ {
				if !regexp.MustCompile(fmt.Sprintf(`ITEM-%d\b`, n)).MatchString(text.String()) {
					t.Fatalf("after kill -9 at %s and resume: ITEM-%d is lost", point, n)
				}
			}
			if req.LastTurn().Content != "go on" {
				t.Fatalf("resumed request ends with %q", req.LastTurn().Content)
			}
		})
	}
}

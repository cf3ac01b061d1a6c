package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"polly/agent"
	"polly/agent/llmtest"
)

// A command's progress lines (carriage returns) show their last state,
// and a command of several lines shows as lines, live and resumed.
func TestProgressAndMultilineCommands(t *testing.T) {
	cmd := "for i in 1 2 3; do\n  printf 'step %s\\r' $i\ndone\necho; echo finished"
	h := newHarness(t, harnessOpts{w: 100, h: 30},
		llmtest.Call("run_command", `{"command":`+quoteJSON(cmd)+`}`), llmtest.Text("ran it"))
	h.prompt("run the loop")
	h.until("idle", h.idle)
	h.key("ctrl+x")
	s := h.screen()
	for _, want := range []string{"▾ run_command command=for i in 1 2 3; do …", "    $ for i in 1 2 3; do", "        printf 'step %s\\r' $i", "      done", "step 3", "finished"} {
		if !strings.Contains(s, want) {
			t.Fatalf("screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "step 1step 2") || strings.Contains(s, "step 1") {
		t.Fatalf("progress states are not collapsed:\n%s", s)
	}
	live := transcriptText(h, h.m.current().tr, 100)
	id := h.m.sessID
	h.send(resumeSessionMsg{id: id})
	h.until("resumed", func() bool { return h.idle() && len(h.m.current().tr.items) > 2 })
	h.m.current().tr.toggle()
	resumed := strings.TrimSuffix(transcriptText(h, h.m.current().tr, 100), "\n\n  resumed session "+id)
	if resumed != live {
		t.Fatalf("resumed:\n%s\nlive:\n%s", resumed, live)
	}
}

func quoteJSON(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

// tui.theme fixes the look: "light" draws light colours whatever the
// terminal reports, "auto" follows the terminal.
func TestThemeSetting(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.m.noColor = false
	h.m.themeSetting = "light"
	h.m.setTheme(false)
	h.send(tea.BackgroundColorMsg{Color: lipgloss.Color("#000000")}) // a dark terminal
	if h.m.th.dark {
		t.Fatal("tui.theme light was overridden by the terminal's background")
	}
	h.m.themeSetting = "auto"
	h.send(tea.BackgroundColorMsg{Color: lipgloss.Color("#000000")})
	if !h.m.th.dark {
		t.Fatal("auto did not follow a dark terminal")
	}
	// The input: the prompt in the accent colour, no bar on the cursor line.
	for _, dark := range []bool{false, true} {
		st := inputStyles(dark, false)
		if st.Focused.Prompt.GetForeground() != newTheme(dark, false).accent.GetForeground() {
			t.Errorf("dark=%v: prompt colour %v", dark, st.Focused.Prompt.GetForeground())
		}
		if _, none := st.Focused.CursorLine.GetBackground().(lipgloss.NoColor); !none {
			t.Errorf("dark=%v: the cursor line has a background %v", dark, st.Focused.CursorLine.GetBackground())
		}
	}
}

// A summary's reason is said once: the notice the receipt repeats goes.
func TestSummaryReasonOnce(t *testing.T) {
	tr := newTranscript()
	why := "the model's summary would not shrink the context (900 → 950 tokens)"
	tr.apply(agent.SummaryStarted{TokensBefore: 900})
	tr.apply(agent.Notice{Level: "warn", Text: why + "; using the heuristic summary"})
	tr.apply(agent.SummaryFinished{Accepted: true, Heuristic: true, TokensBefore: 900, TokensAfter: 500, Why: why})
	n := 0
	for _, it := range tr.items {
		if strings.Contains(it.text, why) || it.sum != nil && it.sum.finished != nil && strings.Contains(it.sum.finished.Why, why) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the reason shows %d times", n)
	}
}

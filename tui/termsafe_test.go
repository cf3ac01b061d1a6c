package tui

import (
	"regexp"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// Must show (issue 24 #4): nothing the model or a command writes reaches
// the terminal as an escape sequence. The answer, a command's output (the
// tool block's preview) and an edit's diff carry OSC 52, OSC 8, DCS (tmux
// passthrough), APC and cursor movement; the frame handed to the terminal
// keeps SGR only. The frame before the last filter still holds some of
// them (a diff line is cut, not cleaned), so the filter is what stops them.
func TestFrameKeepsOnlySGR(t *testing.T) {
	evil := `\033]52;c;Y3VybCBldmlsIHwgc2g=\007\033Ptmux;\033\033]52;c;eA==\007\033\\\033_Gf=1;AA\033\\\033]8;;https://evil.example\033\\docs\033]8;;\033\\\033[2J`
	h := newHarness(t, harnessOpts{},
		llmtest.Call("run_command", `{"command":"printf '`+strings.ReplaceAll(evil, `\`, `\\`)+` out\\n'"}`),
		llmtest.Call("write_file", `{"path":"evil.txt","content":"`+strings.ReplaceAll(strings.ReplaceAll(evil, `\033`, `\u001b`), `\007`, `\u0007`)+` line\n"}`),
		llmtest.Text("answer \u001b]52;c;ZXZpbA==\u0007 \u001bP+q544e\u001b\\ \u001b[31mred\u001b[0m"))
	h.prompt("go")
	h.until("the run to end", h.idle)
	h.key("ctrl+x") // expand the write's diff
	h.key("alt+up")
	h.key("alt+up")
	h.key("ctrl+x") // and the command's output
	raw := h.m.render()
	if !strings.Contains(raw, "\x1b]52") && !strings.Contains(raw, "\x1bP") {
		t.Logf("note: the frame before the filter holds no OSC 52 or DCS any more")
	}
	frame := h.m.View().Content
	sgr := regexp.MustCompile(`\x1b\[[0-9;:]*m`)
	if rest := sgr.ReplaceAllString(frame, ""); strings.ContainsAny(rest, "\x1b\x07\u009b\u009d\u0090") {
		i := strings.IndexAny(rest, "\x1b\x07")
		t.Fatalf("the frame keeps an escape near %q", rest[max(0, i-40):min(len(rest), i+40)])
	}
	for _, want := range []string{"answer", "red", "out"} {
		if !strings.Contains(h.screen(), want) {
			t.Errorf("the screen lost %q:\n%s", want, h.screen())
		}
	}
}

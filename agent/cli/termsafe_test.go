package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

// Must show (issue 24 #4): headless output on a terminal keeps SGR only —
// the final answer on stdout and the tool output preview on stderr lose
// OSC 52 (clipboard), OSC 8 (links), cursor movement, DCS and C1 controls,
// and keep their colours. Not on a terminal (a pipe, a file), the text is
// written as it came, which shows the filter is what removed them.
func TestHeadlessOnTerminalKeepsOnlySGR(t *testing.T) {
	const clip = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"
	answer := "Done: " + clip + "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\ \x1b[2J\x1b[Hhome \x1bP+q544e\x1b\\ \u009b5A end"
	path := "\x1b]52;c;ZXZpbA==\x07\x1b[1;1H\x1b[32mmissing\x1b[0m"
	for _, term := range []bool{true, false} {
		srv := llmtest.NewServer(t, llmtest.Call("read_file", `{"path":`+quoteJSON(path)+`}`), llmtest.Text(answer))
		env, _ := cliEnv(t, srv.URL(), nil)
		env.IsTerminal = func(any) bool { return term }
		var out, errb bytes.Buffer
		env.Args, env.Stdout, env.Stderr = []string{"-p", "go", "--yolo"}, &out, &errb
		if code := Main(env); code != 0 {
			t.Fatalf("code %d: %s", code, errb.String())
		}
		if !term {
			if !strings.Contains(out.String(), clip) || !strings.Contains(errb.String(), "\x1b]52;c;ZXZpbA==\x07") {
				t.Fatalf("not a terminal: the text should pass unchanged:\nstdout %q\nstderr %q", out.String(), errb.String())
			}
			continue
		}
		t.Logf("stderr on a terminal: %q", errb.String())
		sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`)
		for name, got := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
			if rest := sgr.ReplaceAllString(got, ""); strings.ContainsAny(rest, "\x1b\x07\u009b") {
				t.Errorf("%s on a terminal keeps an escape: %q", name, got)
			}
		}
		if want := "Done: \x1b[31mred\x1b[0m docs home  5A end\n"; out.String() != want {
			t.Errorf("stdout %q, want %q", out.String(), want)
		}
		if !strings.Contains(errb.String(), "\x1b[32mmissing\x1b[0m") {
			t.Errorf("the preview lost its colour or text: %q", errb.String())
		}
	}
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

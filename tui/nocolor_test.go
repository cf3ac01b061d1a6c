package tui

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

var sgrRe = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// colourSGR is the first SGR sequence in s that sets a colour
// (foreground, background or underline; 8, 16, 256 or true colour), or "".
func colourSGR(s string) string {
	for _, m := range sgrRe.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.Split(m[1], ";") {
			n, err := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
			if err != nil {
				continue
			}
			if (n >= 30 && n <= 38) || (n >= 40 && n <= 48) || n == 58 || (n >= 90 && n <= 97) || (n >= 100 && n <= 107) {
				return m[0]
			}
		}
	}
	return ""
}

func TestColourSGRFinds(t *testing.T) {
	for _, s := range []string{"\x1b[38;5;240mx", "\x1b[30m", "\x1b[37;40m", "\x1b[1;48;2;1;2;3m", "\x1b[95m", "\x1b[104m", "\x1b[38:5:1m"} {
		if colourSGR(s) == "" {
			t.Errorf("%q not seen as colour", s)
		}
	}
	for _, s := range []string{"\x1b[1m", "\x1b[m", "\x1b[0;1;4;7m", "\x1b[39;49m", "\x1b[2m"} {
		if c := colourSGR(s); c != "" {
			t.Errorf("%q seen as colour", c)
		}
	}
}

// With NO_COLOR given by Run's caller, the program writes no colour at
// all: not the input's placeholder, not the tabs, not the status bar.
func TestNoColorFromTheCallerMeansNoColourOnScreen(t *testing.T) {
	out := runOnPipe(t, true)
	if strings.Contains(out, "\x1b]12;") {
		t.Errorf("cursor colour set under NO_COLOR")
	}
	if c := colourSGR(out); c != "" {
		t.Errorf("colour %q drawn under NO_COLOR:\n%q", c, out)
	}
	if c := colourSGR(runOnPipe(t, false)); c == "" {
		t.Error("no colour without NO_COLOR: the check above proves nothing")
	}
}

// A screen full of what Polly draws (Markdown with a heading, a link, a
// quote and highlighted code; a diff; typed input; the tabs and the
// status bar) has no colour under NO_COLOR, in the dark and the light
// theme; bold and reverse remain.
func TestNoColorScreenHasNoColourSGR(t *testing.T) {
	reply := "# Title\n\nSee [docs](https://example.invalid) and `code`.\n\n> quoted\n\n```go\n// comment\nfunc f() int { return 42 }\n```\n\n```diff\n@@ -1 +1 @@\n-old\n+new\n```\n\n---\n"
	h := newHarness(t, harnessOpts{}, llmtest.Text(reply))
	h.prompt("show me")
	h.until("the reply", func() bool { return h.idle() && strings.Contains(h.screen(), "Title") })
	h.typeText("draft text")
	for _, dark := range []bool{true, false} {
		h.run(h.m.setTheme(dark))
		v := h.m.View().Content
		if c := colourSGR(v); c != "" {
			t.Errorf("dark=%v: colour %q on a NO_COLOR screen:\n%q", dark, c, v)
		}
		if !strings.Contains(v, "\x1b[1") && !strings.Contains(v, ";1m") {
			t.Errorf("dark=%v: no bold left:\n%q", dark, v)
		}
	}
	h.m.noColor = false
	h.run(h.m.setTheme(true))
	if c := colourSGR(h.m.View().Content); c == "" {
		t.Error("no colour with colours on: the check proves nothing")
	}
}

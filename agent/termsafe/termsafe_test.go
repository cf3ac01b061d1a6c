package termsafe

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcödé, 日本語\n\tindented":                 "plain text, ünïcödé, 日本語\n\tindented",
		"\x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3mrgb\x1b[m":       "\x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3mrgb\x1b[m",
		"copy\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07 me":            "copy me",
		"copy\x1b]52;c;Y3VybA==\x1b\\ me":                      "copy me",
		"\x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\": "docs",
		"\x1b]0;title\x07after":                                "after",
		"\x1b[2J\x1b[H\x1b[?1049hscreen\x1b[5A":                "screen",
		"\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\tail":           "tail",
		"\x1b_Gf=100;AAAA\x1b\\img":                            "img",
		"\x1bcreset":                                           "reset",
		"c1\xc2\x9b2Jx\u009d0;t\u009c":                         "c12Jx0;t",
		"raw\x9b31m":                                           "raw", // a raw C1 CSI: the terminal would read 31m as its rest
		"bell\x07 back\bspace\r\n":                             "bell backspace\n",
		"\x1b[31":                                              "",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever goes in, what comes out holds no escape but SGR and no control
// character but newline and tab.
func FuzzText(f *testing.F) {
	for _, s := range []string{"\x1b]52;c;eA==\x07", "a\x1b[1mb", "\x1bP\x1b\\", "\xc2\x9b", "\x1b[", "x\x1b[38;5;1m"} {
		f.Add(s)
	}
	only := regexp.MustCompile(`\x1b\[[0-9;:]*m`)
	f.Fuzz(func(t *testing.T, s string) {
		out := only.ReplaceAllString(Text(s), "")
		if i := strings.IndexFunc(out, control); i >= 0 || strings.ContainsRune(out, 0x1b) {
			t.Fatalf("Text(%q) = %q keeps a control at %d", s, Text(s), i)
		}
	})
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer(&b)
	in := []byte("ok\x1b]52;c;eA==\x07\n")
	if n, err := w.Write(in); err != nil || n != len(in) {
		t.Fatalf("write: %d %v", n, err)
	}
	if b.String() != "ok\n" {
		t.Fatalf("wrote %q", b.String())
	}
}

// BenchmarkText: the TUI filters every frame; a frame of styled text takes
// the fast path.
func BenchmarkText(b *testing.B) {
	frame := strings.Repeat("\x1b[38;5;245m  │ \x1b[0mgo test ./... ok  polly/tools 1.23s — ünïcödé\n", 60)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		Text(frame)
	}
}

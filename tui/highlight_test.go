package tui

import (
	"fmt"
	"strings"
	"testing"
)

// kindsOf scans lines as lang and lists "kind:text" for every token that
// is not plain, line by line.
func kindsOf(t *testing.T, lang string, lines ...string) []string {
	t.Helper()
	lg := langOf(lang)
	if lg == nil {
		t.Fatalf("no language %q", lang)
	}
	names := [tkCount]string{tkComment: "comment", tkString: "string", tkNumber: "number", tkKeyword: "keyword",
		tkType: "type", tkKey: "key", tkAdd: "add", tkDel: "del", tkHunk: "hunk"}
	sc := scanner{lang: lg}
	var out []string
	for _, l := range lines {
		var rebuilt strings.Builder
		for _, tk := range sc.line(l) {
			rebuilt.WriteString(tk.text)
			if tk.kind != tkPlain {
				out = append(out, names[tk.kind]+":"+tk.text)
			}
		}
		if rebuilt.String() != l {
			t.Fatalf("%s: the tokens rebuild %q, not the line %q", lang, rebuilt.String(), l)
		}
	}
	return out
}

func TestHighlightLanguages(t *testing.T) {
	for _, c := range []struct {
		lang  string
		lines []string
		want  string
	}{
		{"go", []string{"func f(s string) error { // why", "\treturn fmt.Errorf(\"bad %q\\\" x\", 0x1F) /* a", "b */ x := `raw", "still raw \\` + 'c'"},
			"keyword:func type:string type:error comment:// why keyword:return string:\"bad %q\\\" x\" number:0x1F comment:/* a comment:b */ string:`raw string:still raw \\` string:'c'"},
		{"Python", []string{"def f(x=1.5e-3):  # note", `    s = """doc`, `still doc"""`, "    return None"},
			"keyword:def number:1.5e-3 comment:# note string:\"\"\"doc string:still doc\"\"\" keyword:return keyword:None"},
		{"ts", []string{"const x: number = `a ${b}`; // c", "export interface A {}"},
			"keyword:const type:number string:`a ${b}` comment:// c keyword:export keyword:interface"},
		{"bash", []string{"if [ -n \"$X\" ]; then echo 'it''s' # done", "fi; echo $# ${#a}"},
			"keyword:if string:\"$X\" keyword:then type:echo string:'it''s' comment:# done keyword:fi type:echo"},
		{"json", []string{`{"name": "polly", "n": 3, "ok": true, "x": null}`},
			`key:"name" string:"polly" key:"n" number:3 key:"ok" keyword:true key:"x" keyword:null`},
		{"yml", []string{"name: polly # c", "- run-tests: true", "  count: 10"},
			"key:name comment:# c key:run-tests keyword:true key:count number:10"},
		{"rust", []string{"fn f<'a>(s: &'a str) -> Option<char> { Some('x') }"},
			"keyword:fn type:str type:Option type:char type:Some string:'x'"},
		{"java", []string{"public static int n = 42; /* x */ String s = \"a\";", "#include <stdio.h>"},
			"keyword:public keyword:static type:int number:42 comment:/* x */ type:String string:\"a\" keyword:#include <stdio.h>"},
		{"c++", []string{"for (auto i = 0u; i < n; ++i) {}"},
			"keyword:for keyword:auto number:0u"},
		{"diff", []string{"@@ -1 +1 @@", "-old", "+new", " same"},
			"hunk:@@ -1 +1 @@ del:-old add:+new"},
		{"sql", []string{"SELECT id FROM t WHERE name = 'x' -- why"},
			"keyword:SELECT keyword:FROM keyword:WHERE string:'x' comment:-- why"},
	} {
		if got := strings.Join(kindsOf(t, c.lang, c.lines...), " "); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.lang, got, c.want)
		}
	}
}

// An unknown or missing language is drawn plain, line for line.
func TestHighlightUnknownIsPlain(t *testing.T) {
	var syntax [tkCount]string
	for i := range syntax {
		syntax[i] = fmt.Sprintf("<%d>", i)
	}
	for _, lang := range []string{"", "brainfuck", "text"} {
		got := highlight(lang, []string{"if x // y", "\"s\""}, &syntax)
		if len(got) != 2 || len(got[0]) != 1 || got[0][0] != (span{"if x // y", ""}) || got[1][0].sgr != "" {
			t.Errorf("%q: %v", lang, got)
		}
	}
}

// Each line is scanned once, left to right: long lines cost linear time
// (a 10,000-column line of quotes and slashes must not be quadratic).
func BenchmarkHighlightLongLine(b *testing.B) {
	var syntax [tkCount]string
	line := strings.Repeat(`x := "a\"b" + y / 2 `, 500)
	b.ReportAllocs()
	for b.Loop() {
		highlight("go", []string{line, line}, &syntax)
	}
}

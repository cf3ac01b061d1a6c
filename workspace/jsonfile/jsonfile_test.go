package jsonfile

import (
	"errors"
	"testing"
)

func TestParseKeepsPositions(t *testing.T) {
	doc, err := Parse([]byte("\xef\xbb\xbf{\n  \"a\": [1, \"é\", true, null],\n  \"b\": {\"c\": 2.5}\n}"))
	if err != nil {
		t.Fatal(err)
	}
	if string(doc.Data[:1]) != "{" {
		t.Fatal("the byte order mark was kept")
	}
	a, b := doc.Root.Members[0], doc.Root.Members[1]
	if a.Key != "a" || a.Val.Kind != Array || len(a.Val.Elems) != 4 || b.Val.Members[0].Val.Text != "2.5" {
		t.Fatalf("tree = %+v", doc.Root)
	}
	for _, tt := range []struct {
		off       int
		line, col int
	}{{a.Off, 2, 3}, {a.Val.Elems[1].Off, 2, 12}, {a.Val.Elems[2].Off, 2, 17}, {b.Val.Members[0].Off, 3, 9}} {
		if l, c := doc.Pos(tt.off); l != tt.line || c != tt.col {
			t.Errorf("offset %d at %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
	if got := a.Val.Elems[1].Describe() + ", " + a.Val.Elems[2].Describe() + ", " + a.Val.Elems[3].Describe() + ", " + b.Val.Describe(); got != `string "é", true, null, an object` {
		t.Errorf("Describe = %s", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"{\n  \"a\": 1,\n}", `line 3, column 1: invalid character '}' looking for beginning of object key string (JSON allows no trailing comma)`},
		{"{\"a\": 1", `line 1, column 8: unexpected end of file (a missing } or ] or "?)`},
		{"{\n  # note\n}", `line 2, column 3: invalid character '#' looking for beginning of object key string (JSON has no comments)`},
		{"{'a': 1}", `line 1, column 2: invalid character '\'' looking for beginning of object key string (JSON strings use double quotes)`},
		{"  [1]", `line 1, column 3: expected a JSON object at the top level, got an array`},
		{`"x"`, `line 1, column 1: expected a JSON object at the top level, got string "x"`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in))
		var pe *Error
		if !errors.As(err, &pe) || err.Error() != tt.want {
			t.Errorf("Parse(%q)\n got %v\nwant %s", tt.in, err, tt.want)
		}
	}
	for _, blank := range []string{"", " \n\t", "\xef\xbb\xbf"} {
		if doc, err := Parse([]byte(blank)); err != nil || doc.Root != nil {
			t.Errorf("Parse(%q) = %+v, %v; want no root", blank, doc, err)
		}
	}
}

func TestClosest(t *testing.T) {
	opts := []string{"ask", "auto-edit", "yolo"}
	tests := []struct{ in, want string }{
		{"yoloo", "yolo"},
		{"YOLO", "yolo"},
		{"autoedit", "auto-edit"},
		{"fast", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.in, opts); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if d := EditDistance("modle", "model"); d != 1 {
		t.Errorf("transposition distance = %d, want 1", d)
	}
}

// FuzzParse: any bytes give a tree or an *Error inside the file, never a
// panic; every offset in the tree is inside the file too.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"a": [1, "x", {"b": null}], "c": true}`))
	f.Add([]byte("{\n  \"a\": 1,\n}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Parse(data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Off < 0 || pe.Off > len(data) || pe.Line < 1 || pe.Col < 1 {
				t.Fatalf("error %#v", err)
			}
			return
		}
		var walk func(n *Node)
		walk = func(n *Node) {
			if n.Off < 0 || n.Off >= len(doc.Data) {
				t.Fatalf("offset %d outside %d bytes", n.Off, len(doc.Data))
			}
			for _, m := range n.Members {
				if m.Off < 0 || m.Off >= len(doc.Data) || doc.Data[m.Off] != '"' {
					t.Fatalf("key %q at %d is not at a quote", m.Key, m.Off)
				}
				walk(m.Val)
			}
			for _, e := range n.Elems {
				walk(e)
			}
		}
		if doc.Root != nil {
			walk(doc.Root)
		}
	})
}

// Package jsonfile parses hand-edited JSON files (Polly's config files,
// .mcp.json, persona files) into a small tree that keeps the byte offset of
// every key and value, so a loader can report any problem — bad syntax, a
// wrong type, an unknown key, a bad value — at its line and column.
// encoding/json's Unmarshal cannot: DisallowUnknownFields gives no offset,
// and its field paths are ambiguous when map keys contain dots.
//
// It imports nothing of Polly's, so both agent/config and personas use it.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the JSON type of a Node.
type Kind uint8

const (
	Object Kind = iota + 1
	Array
	String
	Number
	Bool
	Null
)

// Node is one JSON value and where it starts.
type Node struct {
	Kind    Kind
	Off     int      // byte offset of the value's first byte
	Text    string   // a string's value, or a number's literal
	Bool    bool     // a bool's value
	Members []Member // an object's members, in file order (duplicates kept)
	Elems   []*Node  // an array's elements
}

// Member is one key of an object.
type Member struct {
	Key string
	Off int // byte offset of the key's opening quote
	Val *Node
}

// Document is a parsed file: its root and the bytes offsets refer to.
type Document struct {
	Data []byte // the file without a leading byte order mark
	Root *Node  // nil for an empty or blank file
}

// Pos is a 1-based line and column; columns count characters, as editors do.
func (d *Document) Pos(off int) (line, col int) { return LineCol(d.Data, off) }

// ErrorAt is a problem with the value or key at off.
func (d *Document) ErrorAt(off int, msg string) *Error {
	line, col := d.Pos(off)
	return &Error{Off: off, Line: line, Col: col, Msg: msg}
}

// Error is a problem at a place in a file.
type Error struct {
	Off       int
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg) }

// Parse parses a file that must hold one JSON object (or nothing). A
// leading byte order mark is dropped (editors on Windows add one). Syntax
// errors are an *Error with a hint for the usual hand-editing slips.
func Parse(data []byte) (*Document, error) {
	doc := &Document{Data: bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))}
	root, err := parseValue(doc.Data)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			pe.Line, pe.Col = doc.Pos(pe.Off)
		}
		return nil, err
	}
	if root != nil && root.Kind != Object {
		return nil, doc.ErrorAt(root.Off, "expected a JSON object at the top level, got "+root.Describe())
	}
	doc.Root = root
	return doc, nil
}

func parseValue(data []byte) (*Node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	// The whole-buffer scanner reports reliable offsets; Decoder.Token's
	// offsets for bad scalars are not (they count only the bytes of values
	// read so far). So check syntax first, then walk tokens.
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		return nil, syntaxError(data, err)
	}
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	tok, off, err := p.next()
	if err != nil {
		return nil, err
	}
	return p.value(tok, off)
}

type parser struct {
	data []byte
	dec  *json.Decoder
}

// next returns the next token and the offset of its first byte.
func (p *parser) next() (json.Token, int, error) {
	off := p.skip(int(p.dec.InputOffset()))
	tok, err := p.dec.Token()
	if err != nil {
		// Unreachable after the syntax check, but never trust that blindly.
		return nil, off, &Error{Off: off, Msg: strings.TrimPrefix(err.Error(), "json: ")}
	}
	return tok, off, nil
}

// skip moves past whitespace and the separators Token consumes silently.
func (p *parser) skip(off int) int {
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

func (p *parser) value(tok json.Token, off int) (*Node, error) {
	switch t := tok.(type) {
	case json.Delim:
		n := &Node{Kind: Object, Off: off}
		if t == '[' {
			n.Kind = Array
		}
		for p.dec.More() {
			ktok, koff, err := p.next()
			if err != nil {
				return nil, err
			}
			if n.Kind == Array {
				v, err := p.value(ktok, koff)
				if err != nil {
					return nil, err
				}
				n.Elems = append(n.Elems, v)
				continue
			}
			key, ok := ktok.(string)
			if !ok {
				return nil, &Error{Off: koff, Msg: "expected an object key"}
			}
			vtok, voff, err := p.next()
			if err != nil {
				return nil, err
			}
			v, err := p.value(vtok, voff)
			if err != nil {
				return nil, err
			}
			n.Members = append(n.Members, Member{Key: key, Off: koff, Val: v})
		}
		_, _, err := p.next() // the closing '}' or ']'
		return n, err
	case string:
		return &Node{Kind: String, Off: off, Text: t}, nil
	case json.Number:
		return &Node{Kind: Number, Off: off, Text: string(t)}, nil
	case bool:
		return &Node{Kind: Bool, Off: off, Bool: t}, nil
	case nil:
		return &Node{Kind: Null, Off: off}, nil
	}
	return nil, &Error{Off: off, Msg: fmt.Sprintf("unexpected token %v", tok)}
}

// syntaxError turns encoding/json's syntax error into a positioned one with
// a hint for the usual hand-editing mistakes.
func syntaxError(data []byte, err error) *Error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &Error{Msg: err.Error()}
	}
	msg := se.Error()
	if strings.HasPrefix(msg, "unexpected end of JSON input") {
		return &Error{Off: len(data), Msg: "unexpected end of file (a missing } or ] or \"?)"}
	}
	off := max(0, min(int(se.Offset)-1, len(data))) // Offset counts the offending byte
	if off < len(data) {
		switch c := data[off]; {
		case c == '/' || c == '#':
			msg += " (JSON has no comments)"
		case c == '}' || c == ']':
			if prev := bytes.TrimRight(data[:off], " \t\r\n"); len(prev) > 0 && prev[len(prev)-1] == ',' {
				msg += " (JSON allows no trailing comma)"
			}
		case c == '\'':
			msg += " (JSON strings use double quotes)"
		}
	}
	return &Error{Off: off, Msg: msg}
}

// LineCol converts a byte offset of data to a 1-based line and column; the
// column counts characters, as editors do.
func LineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return 1 + bytes.Count(data[:off], []byte{'\n'}), 1 + utf8.RuneCount(data[start:off])
}

// Describe names what a node is, for "expected X, got Y" messages. Strings
// are shown (cut at 40 characters); callers guarding secrets must not use it.
func (n *Node) Describe() string {
	switch n.Kind {
	case Object:
		return "an object"
	case Array:
		return "an array"
	case String:
		s := n.Text
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:40]) + "…"
		}
		return "string " + strconv.Quote(s)
	case Number:
		return "number " + n.Text
	case Bool:
		return strconv.FormatBool(n.Bool)
	}
	return "null"
}

// Closest returns the option nearest to word if it is near enough to be a
// likely typo, else "": the "did you mean" of unknown keys and values.
func Closest(word string, options []string) string {
	best, bestD := "", 1+len([]rune(word))/5
	for _, o := range options {
		if d := EditDistance(strings.ToLower(word), strings.ToLower(o)); d <= bestD && o != word {
			if d < bestD || best == "" {
				best, bestD = o, d
			}
		}
	}
	return best
}

// EditDistance is the optimal-string-alignment distance: Levenshtein plus
// adjacent transpositions ("modle" → "model" is one edit).
func EditDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	rows := make([][]int, len(s)+1)
	for i := range rows {
		rows[i] = make([]int, len(t)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			rows[i][j] = min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				rows[i][j] = min(rows[i][j], rows[i-2][j-2]+1)
			}
		}
	}
	return rows[len(s)][len(t)]
}

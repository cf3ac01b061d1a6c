package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The file is parsed into a small tree that keeps the byte offset of every
// key and value, so that type errors, unknown fields and bad values can all
// be reported at their line and column. encoding/json's Unmarshal cannot do
// that: DisallowUnknownFields gives no offset, and its field paths are
// ambiguous when map keys contain dots.

type nodeKind uint8

const (
	kindObject nodeKind = iota + 1
	kindArray
	kindString
	kindNumber
	kindBool
	kindNull
)

type node struct {
	kind    nodeKind
	off     int    // offset of the value's first byte
	text    string // string value, or number literal
	b       bool
	members []member // objects, in file order
	elems   []*node  // arrays
}

type member struct {
	key string
	off int // offset of the key's opening quote
	val *node
}

// posError is a problem at a byte offset of the file being parsed.
type posError struct {
	off int
	msg string
}

func (e *posError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

// parseDocument parses a config file. It returns nil for an empty or blank
// file, and a *posError for anything that is not a single JSON object.
func parseDocument(data []byte) (*node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	// The whole-buffer scanner reports reliable offsets; Decoder.Token's
	// offsets for bad scalars are not (they count only the bytes of values
	// read so far). So check syntax first, then walk tokens.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, syntaxError(data, err)
	}
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	tok, off, err := p.next()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		n, err := p.value(tok, off)
		if err != nil {
			return nil, err
		}
		return nil, &posError{off, "expected a JSON object at the top level, got " + describe(n)}
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
		return nil, off, &posError{off, strings.TrimPrefix(err.Error(), "json: ")}
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

func (p *parser) value(tok json.Token, off int) (*node, error) {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			n := &node{kind: kindObject, off: off}
			for p.dec.More() {
				ktok, koff, err := p.next()
				if err != nil {
					return nil, err
				}
				key, ok := ktok.(string)
				if !ok {
					return nil, &posError{koff, "expected an object key"}
				}
				vtok, voff, err := p.next()
				if err != nil {
					return nil, err
				}
				v, err := p.value(vtok, voff)
				if err != nil {
					return nil, err
				}
				n.members = append(n.members, member{key: key, off: koff, val: v})
			}
			_, _, err := p.next() // '}'
			return n, err
		}
		if t == '[' {
			n := &node{kind: kindArray, off: off}
			for p.dec.More() {
				etok, eoff, err := p.next()
				if err != nil {
					return nil, err
				}
				v, err := p.value(etok, eoff)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
			_, _, err := p.next() // ']'
			return n, err
		}
		return nil, &posError{off, fmt.Sprintf("unexpected %q", rune(t))}
	case string:
		return &node{kind: kindString, off: off, text: t}, nil
	case json.Number:
		return &node{kind: kindNumber, off: off, text: string(t)}, nil
	case bool:
		return &node{kind: kindBool, off: off, b: t}, nil
	case nil:
		return &node{kind: kindNull, off: off}, nil
	}
	return nil, &posError{off, fmt.Sprintf("unexpected token %v", tok)}
}

// syntaxError turns encoding/json's syntax error into a positioned one with
// a hint for the usual hand-editing mistakes.
func syntaxError(data []byte, err error) *posError {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &posError{0, err.Error()}
	}
	msg := se.Error()
	if strings.HasPrefix(msg, "unexpected end of JSON input") {
		return &posError{len(data), "unexpected end of file (a missing } or ] or \"?)"}
	}
	off := int(se.Offset) - 1 // Offset counts the offending byte
	off = max(0, min(off, len(data)))
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
	return &posError{off, msg}
}

// lineCol converts a byte offset to a 1-based line and column; the column
// counts characters, as editors do.
func lineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return 1 + bytes.Count(data[:off], []byte{'\n'}), 1 + utf8.RuneCount(data[start:off])
}

// describe names what a node is, for "expected X, got Y" messages.
func describe(n *node) string {
	switch n.kind {
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	case kindString:
		s := n.text
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:40]) + "…"
		}
		return "string " + strconv.Quote(s)
	case kindNumber:
		return "number " + n.text
	case kindBool:
		return strconv.FormatBool(n.b)
	}
	return "null"
}

package permission

import "fmt"

// sedScriptWhy returns "" when a GNU sed script only reads and prints, and
// otherwise why not: the w and W commands and the s///w flag write files,
// the e command and the s///e flag run commands. A script this parser does
// not understand is not read-only.
func sedScriptWhy(s string) string {
	p := sedParser{s: s}
	if err := p.script(); err != nil {
		return err.Error()
	}
	return ""
}

type sedParser struct {
	s string
	i int
}

func (p *sedParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) skipSpace() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// toEOL skips to the end of the line (text of a, i, c; file names; labels
// end at ';' too when semicolon is set).
func (p *sedParser) toEOL(semicolon bool) string {
	start := p.i
	for !p.eof() {
		ch := p.s[p.i]
		if ch == '\n' || semicolon && ch == ';' {
			break
		}
		if ch == '\\' && p.i+1 < len(p.s) {
			p.i++
		}
		p.i++
	}
	return p.s[start:p.i]
}

// delimited reads up to an unescaped delim, as GNU sed's match_slash does
// (brackets are not special, a newline ends it).
func (p *sedParser) delimited(delim byte) error {
	for !p.eof() {
		ch := p.s[p.i]
		p.i++
		switch ch {
		case delim:
			return nil
		case '\n':
			return fmt.Errorf("unterminated expression")
		case '\\':
			if p.eof() {
				return fmt.Errorf("unterminated expression")
			}
			p.i++
		}
	}
	return fmt.Errorf("unterminated expression")
}

func (p *sedParser) digits() {
	for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
}

func (p *sedParser) address() (bool, error) {
	switch ch := p.peek(); {
	case ch >= '0' && ch <= '9':
		p.digits()
		if p.peek() == '~' {
			p.i++
			p.digits()
		}
	case ch == '$':
		p.i++
	case ch == '/' || ch == '\\':
		p.i++
		delim := byte('/')
		if ch == '\\' {
			if p.eof() || p.peek() == '\n' || p.peek() == '\\' {
				return false, fmt.Errorf("bad regex delimiter")
			}
			delim = p.s[p.i]
			p.i++
		}
		if err := p.delimited(delim); err != nil {
			return false, err
		}
		for p.peek() == 'I' || p.peek() == 'M' {
			p.i++
		}
	default:
		return false, nil
	}
	return true, nil
}

func (p *sedParser) script() error {
	depth := 0
	for {
		p.skipSpace()
		if p.eof() {
			if depth != 0 {
				return fmt.Errorf("unmatched {")
			}
			return nil
		}
		switch p.peek() {
		case '\n', ';':
			p.i++
			continue
		case '#':
			p.toEOL(false)
			continue
		}
		ok, err := p.address()
		if err != nil {
			return err
		}
		if ok {
			p.skipSpace()
			if p.peek() == ',' {
				p.i++
				p.skipSpace()
				if c := p.peek(); c == '+' || c == '~' {
					p.i++
					p.digits()
				} else if ok, err := p.address(); err != nil || !ok {
					return fmt.Errorf("bad address range")
				}
			}
		}
		p.skipSpace()
		for p.peek() == '!' {
			p.i++
			p.skipSpace()
		}
		if p.eof() {
			return fmt.Errorf("missing command")
		}
		cmd := p.s[p.i]
		p.i++
		switch cmd {
		case '{':
			depth++
			continue
		case '}':
			if depth == 0 {
				return fmt.Errorf("unexpected }")
			}
			depth--
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'q', 'Q', 'L':
			p.skipSpace()
			p.digits()
		case ':':
			p.skipSpace()
			if p.toEOL(true) == "" {
				return fmt.Errorf("missing label")
			}
		case 'b', 't', 'T', 'v':
			p.skipSpace()
			p.toEOL(true)
		case 'a', 'i', 'c', 'r', 'R':
			// Text to append or a file to read: nothing is written.
			p.toEOL(false)
		case 'w', 'W':
			return fmt.Errorf("the %c command writes a file", cmd)
		case 'e':
			return fmt.Errorf("the e command runs a command")
		case 's', 'y':
			if p.eof() || p.peek() == '\n' || p.peek() == '\\' {
				return fmt.Errorf("bad delimiter")
			}
			delim := p.s[p.i]
			p.i++
			if err := p.delimited(delim); err != nil {
				return err
			}
			if err := p.delimited(delim); err != nil {
				return err
			}
			if cmd == 's' {
				for !p.eof() {
					f := p.peek()
					if f == 'w' {
						return fmt.Errorf("the s///w flag writes a file")
					}
					if f == 'e' {
						return fmt.Errorf("the s///e flag runs a command")
					}
					if f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9' {
						p.i++
						continue
					}
					break
				}
			}
		default:
			return fmt.Errorf("the %q command is not judged", cmd)
		}
		p.skipSpace()
		switch p.peek() {
		case 0, '\n', ';', '}', '#':
		default:
			return fmt.Errorf("unexpected %q after a command", p.peek())
		}
	}
}

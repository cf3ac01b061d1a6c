package permission

import (
	"fmt"
	"strings"
)

// optSpec describes a command's options for a getopt-style parse. Options
// that are not listed are kept by name; a strict spec makes them a reason
// to ask, because an unknown option might take a value or have an effect.
type optSpec struct {
	shortBool string   // one-letter options without a value
	shortVal  string   // one-letter options with a value (attached or next word)
	longBool  []string // long options without a value (a value may be attached with =)
	longVal   []string // long options with a value (attached with = or the next word)
	// Options whose value is optional (getopt's "::"): it can only be
	// attached (-i{} or --replace={}); the next word is never their value.
	// Taking it for one would hide the command that follows (xargs -i rm).
	shortOpt string
	longOpt  []string
	strict   bool
	// posix: options end at the first operand (find, env, xargs and the
	// wrappers); GNU tools otherwise accept options after operands.
	posix bool
}

type option struct {
	name   string   // "o" or the full long name "output"; as written when unknown
	val    wordInfo // the value, for options that take one
	hasVal bool
	known  bool
}

type parsedArgs struct {
	opts     []option
	operands []wordInfo
	why      string // set when an argument cannot be judged
}

func (p *parsedArgs) has(names ...string) bool {
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// values returns the values of the named options.
func (p *parsedArgs) values(names ...string) []wordInfo {
	var out []wordInfo
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n && o.hasVal {
				out = append(out, o.val)
			}
		}
	}
	return out
}

func (p *parsedArgs) fail(format string, a ...any) {
	if p.why == "" {
		p.why = fmt.Sprintf(format, a...)
	}
}

// resolveLong finds the option a long name stands for. getopt_long accepts
// any unambiguous prefix (--out for --output), so prefixes resolve too.
func (s optSpec) resolveLong(name string) (full string, takesVal, ok bool) {
	for _, n := range s.longBool {
		if n == name {
			return n, false, true
		}
	}
	for _, n := range s.longVal {
		if n == name {
			return n, true, true
		}
	}
	for _, n := range s.longOpt {
		if n == name {
			return n, false, true
		}
	}
	found := 0
	for _, n := range s.longBool {
		if strings.HasPrefix(n, name) {
			full, takesVal, found = n, false, found+1
		}
	}
	for _, n := range s.longVal {
		if strings.HasPrefix(n, name) {
			full, takesVal, found = n, true, found+1
		}
	}
	for _, n := range s.longOpt {
		if strings.HasPrefix(n, name) {
			full, takesVal, found = n, false, found+1
		}
	}
	if found == 1 && name != "" {
		return full, takesVal, true
	}
	return name, false, false
}

// parse splits args into options and operands. A word only known at run
// time (an expansion, a glob) before "--" could expand to an option, so it
// is a reason to ask for any command whose options matter.
func (s optSpec) parse(args []wordInfo) parsedArgs {
	var p parsedArgs
	endOpts := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if endOpts {
			p.operands = append(p.operands, a)
			continue
		}
		if !a.lit || a.glob {
			p.fail("%s is only known at run time and could expand to an option", a.src)
			p.operands = append(p.operands, a)
			continue
		}
		t := a.text
		if t == "--" {
			endOpts = true
			continue
		}
		if a.tilde || t == "-" || !strings.HasPrefix(t, "-") {
			p.operands = append(p.operands, a)
			if s.posix {
				endOpts = true
			}
			continue
		}
		if long, ok := strings.CutPrefix(t, "--"); ok {
			name, val, hasEq := strings.Cut(long, "=")
			full, takesVal, known := s.resolveLong(name)
			o := option{name: full, known: known}
			switch {
			case hasEq:
				o.val, o.hasVal = wordInfo{src: val, text: val, lit: true}, true
			case takesVal && i+1 < len(args):
				i++
				o.val, o.hasVal = args[i], true
			case takesVal:
				p.fail("--%s needs a value", full)
			}
			if !known && s.strict {
				p.fail("--%s is not a known option", name)
			}
			p.opts = append(p.opts, o)
			continue
		}
		for j := 1; j < len(t); j++ {
			ch := t[j]
			name := string(ch)
			if strings.IndexByte(s.shortVal, ch) >= 0 {
				o := option{name: name, known: true, hasVal: true}
				switch {
				case j+1 < len(t):
					o.val = wordInfo{src: t[j+1:], text: t[j+1:], lit: true}
				case i+1 < len(args):
					i++
					o.val = args[i]
				default:
					o.hasVal = false
					p.fail("-%s needs a value", name)
				}
				p.opts = append(p.opts, o)
				break
			}
			if strings.IndexByte(s.shortOpt, ch) >= 0 {
				o := option{name: name, known: true}
				if j+1 < len(t) {
					o.val, o.hasVal = wordInfo{src: t[j+1:], text: t[j+1:], lit: true}, true
				}
				p.opts = append(p.opts, o)
				break
			}
			known := strings.IndexByte(s.shortBool, ch) >= 0
			if !known && s.strict {
				p.fail("-%s is not a known option", name)
			}
			p.opts = append(p.opts, option{name: name, known: known})
		}
	}
	return p
}

// joinSrc is the source text of words, for messages and nested Parts.
func joinSrc(words []wordInfo) string {
	s := make([]string, len(words))
	for i, w := range words {
		s[i] = w.src
	}
	return strings.Join(s, " ")
}

package tui

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// A small table-driven highlighter for code blocks in replies. The
// trade-off, chosen on purpose: a full lexer library (chroma, as glamour
// linked it) knows hundreds of languages exactly but registers them all in
// package init — ~25 ms on every start of Polly, --version and headless
// runs included. This one colours what helps reading a reply (comments,
// strings, numbers, keywords, builtin types, keys, diff lines) for the
// languages models write most, scanning each line once with a little
// state carried between lines (block comments, multi-line strings). It
// does not parse: a keyword used as a field name is coloured, and a
// language not listed is drawn plain.

type tokenKind uint8

const (
	tkPlain tokenKind = iota
	tkComment
	tkString
	tkNumber
	tkKeyword
	tkType
	tkKey // a JSON or YAML key
	tkAdd
	tkDel
	tkHunk
	tkCount
)

// langSpec describes one language for the scanner.
type langSpec struct {
	lineComments  []string    // "//", "#"
	blockComments [][2]string // {"/*", "*/"}
	quotes        []string    // string delimiters, longest first: `"""`, `"`
	rawQuotes     string      // delimiters without backslash escapes: "`" in Go, "'" in sh
	multiline     string      // delimiters whose strings may span lines
	charQuote     bool        // ' opens a character literal only ('a', '\n'), as in Rust's lifetimes 'a
	hashNeedsGap  bool        // a # comment starts only at a line start or after a space (sh, YAML)
	preprocessor  bool        // a line starting with # is a directive (C, C++)
	keys          bool        // a string or word before ':' is a key (JSON, YAML)
	identExtra    string      // bytes allowed in identifiers besides letters, digits, _
	keywords      string
	types         string
	diff          bool
}

// lang is a langSpec with its word lists as sets.
type lang struct {
	langSpec
	keywords, types map[string]bool
}

var cFamily = langSpec{
	lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}},
	quotes: []string{`"`, "'"}, preprocessor: true,
	keywords: "auto break case const continue default do else enum extern for goto if inline register return sizeof " +
		"static struct switch typedef union volatile while class namespace template typename public private " +
		"protected virtual override new delete this using try catch throw nullptr true false constexpr operator " +
		"friend mutable explicit noexcept static_cast dynamic_cast reinterpret_cast const_cast abstract extends " +
		"final finally implements import instanceof interface native package super synchronized throws transient " +
		"var record yield null",
	types: "void char short int long float double signed unsigned bool boolean byte size_t ssize_t int8_t " +
		"int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t uintptr_t string String Object Integer Long " +
		"List Map std vector auto",
}

// langSpecs maps a fence's language name to its spec; built on the first
// highlighted block, never at start-up.
var langSpecs = sync.OnceValue(func() map[string]*lang {
	specs := map[string]langSpec{
		"go": {
			lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}},
			quotes: []string{`"`, "'", "`"}, rawQuotes: "`", multiline: "`",
			keywords: "break case chan const continue default defer else fallthrough for func go goto if import " +
				"interface map package range return select struct switch type var true false nil iota",
			types: "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string " +
				"uint uint8 uint16 uint32 uint64 uintptr any comparable append cap clear close copy delete len " +
				"make max min new panic print println recover",
		},
		"python": {
			lineComments: []string{"#"}, quotes: []string{`"""`, "'''", `"`, "'"}, multiline: `"""'''`,
			keywords: "False None True and as assert async await break class continue def del elif else except " +
				"finally for from global if import in is lambda nonlocal not or pass raise return try while with " +
				"yield match case self",
			types: "int float str bytes bool list dict set tuple object type print len range open isinstance " +
				"super enumerate zip map filter sorted Exception ValueError TypeError KeyError",
		},
		"javascript": {
			lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}},
			quotes: []string{`"`, "'", "`"}, multiline: "`", identExtra: "$",
			keywords: "break case catch class const continue debugger default delete do else export extends " +
				"finally for function if import in instanceof let new return super switch this throw try typeof " +
				"var void while with yield async await of static get set null undefined true false from as " +
				"interface type enum implements private public protected readonly declare namespace abstract keyof",
			types: "string number boolean any unknown never object bigint symbol Array Object Promise Map Set " +
				"Error JSON Math console",
		},
		"sh": {
			lineComments: []string{"#"}, quotes: []string{`"`, "'"}, rawQuotes: "'", multiline: `"'`,
			hashNeedsGap: true, identExtra: "-",
			keywords: "if then else elif fi for while until do done case esac in function return local export " +
				"readonly declare set unset shift exit break continue source alias trap eval exec",
			types: "echo cd printf read test pwd cat grep sed awk find xargs sudo go git make npm pip python " +
				"python3 curl mkdir rm cp mv ls chmod",
		},
		"json": {
			quotes: []string{`"`}, keys: true,
			keywords: "true false null",
		},
		"yaml": {
			lineComments: []string{"#"}, quotes: []string{`"`, "'"}, rawQuotes: "'", hashNeedsGap: true,
			keys: true, identExtra: "-.",
			keywords: "true false null yes no on off True False Null",
		},
		"toml": {
			lineComments: []string{"#"}, quotes: []string{`"""`, "'''", `"`, "'"}, rawQuotes: "'",
			multiline: `"""'''`, keys: true, identExtra: "-",
			keywords: "true false",
		},
		"rust": {
			lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}},
			quotes: []string{`"`}, multiline: `"`, charQuote: true,
			keywords: "as async await break const continue crate dyn else enum extern false fn for if impl in " +
				"let loop match mod move mut pub ref return self Self static struct super trait true type unsafe " +
				"use where while macro_rules",
			types: "i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec " +
				"Option Result Some None Ok Err Box Rc Arc HashMap",
		},
		"c":    cFamily,
		"diff": {diff: true},
		"sql": {
			lineComments: []string{"--"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: []string{"'", `"`},
			keywords: "select from where insert into values update set delete create table index drop alter " +
				"add primary key foreign references not null and or in is as join left right inner outer on " +
				"group by order having limit offset union all distinct begin commit rollback if exists default " +
				"unique check case when then else end with returning " +
				"SELECT FROM WHERE INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE INDEX DROP ALTER ADD " +
				"PRIMARY KEY FOREIGN REFERENCES NOT NULL AND OR IN IS AS JOIN LEFT RIGHT INNER OUTER ON GROUP " +
				"BY ORDER HAVING LIMIT OFFSET UNION ALL DISTINCT BEGIN COMMIT ROLLBACK IF EXISTS DEFAULT " +
				"UNIQUE CHECK CASE WHEN THEN ELSE END WITH RETURNING",
			types: "integer int text real blob varchar boolean timestamp INTEGER INT TEXT REAL BLOB VARCHAR " +
				"BOOLEAN TIMESTAMP",
		},
	}
	aliases := map[string]string{
		"golang": "go", "py": "python", "python3": "python", "js": "javascript", "jsx": "javascript",
		"ts": "javascript", "tsx": "javascript", "typescript": "javascript", "mjs": "javascript",
		"bash": "sh", "shell": "sh", "zsh": "sh", "console": "sh", "shellsession": "sh", "yml": "yaml",
		"rs": "rust", "h": "c", "cpp": "c", "c++": "c", "cc": "c", "hpp": "c", "cxx": "c", "java": "c",
		"cs": "c", "csharp": "c", "kotlin": "c", "kt": "c", "patch": "diff", "jsonc": "json", "json5": "json",
	}
	out := make(map[string]*lang, len(specs)+len(aliases))
	for name, s := range specs {
		out[name] = &lang{langSpec: s, keywords: wordSet(s.keywords), types: wordSet(s.types)}
	}
	for alias, name := range aliases {
		out[alias] = out[name]
	}
	return out
})

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// langOf finds the spec for a fence's info string ("go", "Python",
// "ts title=x.ts"); nil draws the block plain.
func langOf(info string) *lang {
	name, _, _ := strings.Cut(strings.TrimSpace(info), " ")
	name = strings.ToLower(strings.Trim(name, "{}."))
	if name == "" {
		return nil
	}
	return langSpecs()[name]
}

// highlight splits code lines into spans coloured with syntax (the SGR of
// each token kind).
func highlight(info string, lines []string, syntax *[tkCount]string) [][]span {
	out := make([][]span, len(lines))
	lg := langOf(info)
	if lg == nil {
		for i, l := range lines {
			out[i] = []span{{l, ""}}
		}
		return out
	}
	sc := scanner{lang: lg}
	for i, l := range lines {
		toks := sc.line(l)
		ss := make([]span, len(toks))
		for j, t := range toks {
			ss[j] = span{t.text, syntax[t.kind]}
		}
		out[i] = ss
	}
	return out
}

type token struct {
	text string
	kind tokenKind
}

// scanner tokenizes line after line; open is the end delimiter of a block
// comment or multi-line string still open at the end of the last line.
type scanner struct {
	lang     *lang
	open     string
	openKind tokenKind
	raw      bool // the open string takes no backslash escapes
}

func (s *scanner) line(l string) []token {
	var toks []token
	add := func(t string, k tokenKind) {
		if t == "" {
			return
		}
		if n := len(toks); n > 0 && toks[n-1].kind == k {
			toks[n-1].text += t
			return
		}
		toks = append(toks, token{t, k})
	}
	lg := s.lang
	if lg.diff {
		k := tkPlain
		switch {
		case strings.HasPrefix(l, "@@"):
			k = tkHunk
		case strings.HasPrefix(l, "+"):
			k = tkAdd
		case strings.HasPrefix(l, "-"):
			k = tkDel
		}
		return []token{{l, k}}
	}
	i := 0
	if s.open != "" {
		end, found := closeAt(l, 0, s.open, s.raw || s.openKind == tkComment)
		add(l[:end], s.openKind)
		if !found {
			return toks
		}
		s.open = ""
		i = end
	}
	if lg.preprocessor && strings.HasPrefix(strings.TrimSpace(l), "#") {
		return []token{{l, tkKeyword}}
	}
	plainFrom := i
	flush := func(to int) {
		add(l[plainFrom:to], tkPlain)
	}
scan:
	for i < len(l) {
		c := l[i]
		for _, p := range lg.lineComments {
			if strings.HasPrefix(l[i:], p) && (!lg.hashNeedsGap || i == 0 || l[i-1] == ' ' || l[i-1] == '\t') {
				flush(i)
				add(l[i:], tkComment)
				return toks
			}
		}
		for _, bc := range lg.blockComments {
			if strings.HasPrefix(l[i:], bc[0]) {
				flush(i)
				end, found := closeAt(l, i+len(bc[0]), bc[1], true)
				add(l[i:end], tkComment)
				if !found {
					s.open, s.openKind = bc[1], tkComment
					return toks
				}
				i, plainFrom = end, end
				continue scan
			}
		}
		if c == '\'' && lg.charQuote {
			if n := charLiteral(l[i:]); n > 0 {
				flush(i)
				add(l[i:i+n], tkString)
				i += n
				plainFrom = i
				continue
			}
			i++
			continue
		}
		for _, q := range lg.quotes {
			if !strings.HasPrefix(l[i:], q) {
				continue
			}
			flush(i)
			raw := strings.Contains(lg.rawQuotes, q)
			end, found := closeAt(l, i+len(q), q, raw)
			kind := tkString
			if lg.keys && found && strings.HasPrefix(strings.TrimLeft(l[end:], " \t"), ":") {
				kind = tkKey
			}
			add(l[i:end], kind)
			if !found && strings.Contains(lg.multiline, q) {
				s.open, s.openKind, s.raw = q, tkString, raw
				return toks
			}
			i, plainFrom = end, end
			continue scan
		}
		switch {
		case isDigit(c) && (i == 0 || !isIdent(l[i-1], lg.identExtra)):
			flush(i)
			j := i + 1
			for j < len(l) && (isIdent(l[j], "") || l[j] == '.' ||
				((l[j] == '+' || l[j] == '-') && (l[j-1] == 'e' || l[j-1] == 'E') && !strings.HasPrefix(l[i:], "0x"))) {
				j++
			}
			add(l[i:j], tkNumber)
			i, plainFrom = j, j
		case isIdent(c, "") && !isDigit(c):
			j := i + 1
			for j < len(l) && isIdent(l[j], lg.identExtra) {
				j++
			}
			w := l[i:j]
			kind := tkPlain
			switch {
			case lg.keys && strings.HasPrefix(strings.TrimLeft(l[j:], " \t"), ":") && strings.TrimLeft(l[:i], " \t-") == "":
				kind = tkKey
			case lg.keywords[w]:
				kind = tkKeyword
			case lg.types[w]:
				kind = tkType
			}
			if kind != tkPlain {
				flush(i)
				add(w, kind)
				plainFrom = j
			}
			i = j
		default:
			i++
		}
	}
	flush(len(l))
	return toks
}

// closeAt finds the end of a string or comment whose body starts at from:
// just past the closing delim, or len(l) with found false when the line
// ends first. Backslash escapes the next byte unless raw.
func closeAt(l string, from int, delim string, raw bool) (int, bool) {
	for i := from; i < len(l); i++ {
		if !raw && l[i] == '\\' {
			i++
			continue
		}
		if strings.HasPrefix(l[i:], delim) {
			return i + len(delim), true
		}
	}
	return len(l), false
}

// charLiteral is the length of a character literal at the start of s
// ('a', '\n', '\u{1F600}'), or 0 when the quote opens something else (a
// Rust lifetime).
func charLiteral(s string) int {
	if len(s) < 3 {
		return 0
	}
	if s[1] == '\\' {
		if end := strings.IndexByte(s[3:], '\''); len(s) > 3 && end >= 0 && end <= 10 {
			return end + 4
		}
		return 0
	}
	_, n := utf8.DecodeRuneInString(s[1:])
	if 1+n < len(s) && s[1+n] == '\'' {
		return n + 2
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdent: an identifier byte (any non-ASCII byte counts, so names in
// other scripts stay whole).
func isIdent(c byte, extra string) bool {
	return c == '_' || c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c) ||
		(extra != "" && strings.IndexByte(extra, c) >= 0)
}

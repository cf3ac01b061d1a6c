package tui

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Two GitHub additions to CommonMark, parsed here rather than with
// goldmark/extension: that package compiles its autolink regular
// expressions at init, on every start of Polly.

var (
	kindTaskBox = ast.NewNodeKind("PollyTaskBox")
	kindStrike  = ast.NewNodeKind("PollyStrike")
)

// taskBox is the "[ ]" or "[x]" opening a list item.
type taskBox struct {
	ast.BaseInline
	checked bool
}

func (n *taskBox) Kind() ast.NodeKind { return kindTaskBox }

func (n *taskBox) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }

type taskBoxParser struct{}

func (taskBoxParser) Trigger() []byte { return []byte{'['} }

// Parse accepts "[ ] ", "[x] " or "[X] " only as the very start of a list
// item's first paragraph.
func (taskBoxParser) Parse(parent ast.Node, block text.Reader, _ parser.Context) ast.Node {
	if parent.HasChildren() || parent.Parent() == nil || parent.Parent().FirstChild() != parent {
		return nil
	}
	if _, ok := parent.Parent().(*ast.ListItem); !ok {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 4 || line[0] != '[' || line[2] != ']' || (line[3] != ' ' && line[3] != '\t') {
		return nil
	}
	var checked bool
	switch line[1] {
	case ' ':
	case 'x', 'X':
		checked = true
	default:
		return nil
	}
	n := 4
	for n < len(line) && (line[n] == ' ' || line[n] == '\t') {
		n++
	}
	block.Advance(n)
	return &taskBox{checked: checked}
}

func (taskBoxParser) CloseBlock(ast.Node, parser.Context) {}

// strike is ~~struck~~ text.
type strike struct{ ast.BaseInline }

func (n *strike) Kind() ast.NodeKind { return kindStrike }

func (n *strike) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }

type strikeParser struct{}

func (strikeParser) Trigger() []byte { return []byte{'~'} }

// Parse hands runs of one or two tildes to goldmark's delimiter matching
// (the same algorithm as *emphasis*); three or more are literal text.
func (strikeParser) Parse(_ ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, seg := block.PeekLine()
	d := parser.ScanDelimiter(line, before, 1, strikeDelims{})
	if d == nil || d.Length > 2 {
		return nil
	}
	d.Segment = text.NewSegment(seg.Start, seg.Start+d.Length)
	block.Advance(d.Length)
	pc.PushDelimiter(d)
	return d
}

func (strikeParser) CloseBlock(ast.Node, parser.Context) {}

type strikeDelims struct{}

func (strikeDelims) IsDelimiter(b byte) bool { return b == '~' }

func (strikeDelims) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char && opener.Length == closer.Length
}

func (strikeDelims) OnMatch(int) ast.Node { return &strike{} }

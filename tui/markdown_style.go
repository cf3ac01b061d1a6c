package tui

import (
	"strings"
	"sync"

	"charm.land/glamour/v2/ansi"
	"github.com/alecthomas/chroma/v2"
	chromastyles "github.com/alecthomas/chroma/v2/styles"
)

// glamour's styles for Polly's themes: "dark" and "light" take their
// colours from the palette in styles.go; "none" (NO_COLOR) has no colour
// at all, and bold, italics, underline and faint carry the emphasis, so
// **bold** still shows as bold and never with its stars.

// codeStyleName is the chroma style glamour's code blocks use for a theme.
func codeStyleName(style string) string { return "polly-" + style }

// mdStyleConfig is the glamour style of a theme at width w (the width
// draws the horizontal rule across the text).
func mdStyleConfig(style string, w int) ansi.StyleConfig {
	s := func(v string) *string { return &v }
	yes := func() *bool { v := true; return &v }
	u := func(v uint) *uint { return &v }
	rule := "\n" + strings.Repeat("─", max(1, w-4)) + "\n"
	cfg := ansi.StyleConfig{
		// No colour on the text itself (the terminal's own), which also
		// keeps glamour from wrapping every padding cell in its own SGR.
		Document:   ansi.StyleBlock{StylePrimitive: ansi.StylePrimitive{BlockPrefix: "\n", BlockSuffix: "\n"}, Margin: u(2)},
		BlockQuote: ansi.StyleBlock{Indent: u(1), IndentToken: s("│ ")},
		List:       ansi.StyleList{LevelIndent: 2},
		Heading:    ansi.StyleBlock{StylePrimitive: ansi.StylePrimitive{BlockSuffix: "\n", Bold: yes()}},
		H1:         ansi.StyleBlock{StylePrimitive: ansi.StylePrimitive{Prefix: " ", Suffix: " "}},
		H2:         ansi.StyleBlock{StylePrimitive: ansi.StylePrimitive{Prefix: "## "}},
		H3:         ansi.StyleBlock{StylePrimitive: ansi.StylePrimitive{Prefix: "### "}},
		H4:         ansi.StyleBlock{StylePrimitive: ansi.StylePrimitive{Prefix: "#### "}},
		H5:         ansi.StyleBlock{StylePrimitive: ansi.StylePrimitive{Prefix: "##### "}},
		H6:         ansi.StyleBlock{StylePrimitive: ansi.StylePrimitive{Prefix: "###### "}},

		Strikethrough:  ansi.StylePrimitive{CrossedOut: yes()},
		Emph:           ansi.StylePrimitive{Italic: yes()},
		Strong:         ansi.StylePrimitive{Bold: yes()},
		HorizontalRule: ansi.StylePrimitive{Format: rule},
		Item:           ansi.StylePrimitive{BlockPrefix: "• "},
		Enumeration:    ansi.StylePrimitive{BlockPrefix: ". "},
		Task:           ansi.StyleTask{Ticked: "[✓] ", Unticked: "[ ] "},
		Link:           ansi.StylePrimitive{Underline: yes()},
		LinkText:       ansi.StylePrimitive{Bold: yes()},
		Image:          ansi.StylePrimitive{Underline: yes()},
		ImageText:      ansi.StylePrimitive{Format: "Image: {{.text}} →"},
		// Inline code without glamour's padding spaces: its background
		// marks it.
		Code:      ansi.StyleBlock{},
		CodeBlock: ansi.StyleCodeBlock{StyleBlock: ansi.StyleBlock{Margin: u(2)}, Theme: codeStyleName(style)},
		Table:     ansi.StyleTable{},

		DefinitionDescription: ansi.StylePrimitive{BlockPrefix: "\n→ "},
	}
	if style == "none" {
		cfg.H1.Prefix, cfg.H1.Suffix, cfg.H1.Underline = "", "", yes()
		cfg.BlockQuote.Italic = yes()
		cfg.HorizontalRule.Faint = yes()
		cfg.HTMLBlock.Faint, cfg.HTMLSpan.Faint = yes(), yes()
		return cfg
	}
	p := markdownPalette(style != "light")
	cfg.Heading.Color = s(p.heading)
	cfg.H1.Color, cfg.H1.BackgroundColor = s(p.h1Fg), s(p.h1Bg)
	cfg.BlockQuote.Color = s(p.quote)
	cfg.HorizontalRule.Color = s(p.rule)
	cfg.Item.Color, cfg.Enumeration.Color = s(p.marker), s(p.marker)
	cfg.Link.Color, cfg.LinkText.Color = s(p.link), s(p.linkText)
	cfg.Image.Color = s(p.link)
	cfg.Code.Color, cfg.Code.BackgroundColor = s(p.codeFg), s(p.codeBg)
	cfg.HTMLBlock.Color, cfg.HTMLSpan.Color = s(p.html), s(p.html)
	return cfg
}

// codeStyle is the chroma style of a theme's code blocks: the token kinds
// a reply's code mostly has (comments, strings, numbers, keywords, types,
// JSON keys, functions, diff lines), nothing for the rest.
func codeStyle(style string) *chroma.Style {
	e := chroma.StyleEntries{
		chroma.GenericEmph:    "italic",
		chroma.GenericStrong:  "bold",
		chroma.GenericHeading: "bold",
	}
	if style == "none" {
		e[chroma.Comment] = "italic"
		e[chroma.GenericSubheading] = "bold"
		return chroma.MustNewStyle(codeStyleName(style), e)
	}
	p := markdownPalette(style != "light")
	e[chroma.Comment] = "italic " + p.comment
	e[chroma.CommentPreproc] = p.keyword
	e[chroma.LiteralString] = p.str
	e[chroma.LiteralStringEscape] = p.number
	e[chroma.LiteralNumber] = p.number
	e[chroma.Keyword] = p.keyword
	e[chroma.KeywordType] = p.typ
	e[chroma.NameBuiltin] = p.typ
	e[chroma.NameClass] = p.typ
	e[chroma.NameTag] = p.key
	e[chroma.NameAttribute] = p.key
	e[chroma.NameFunction] = p.fn
	e[chroma.NameDecorator] = p.keyword
	e[chroma.GenericInserted] = p.add
	e[chroma.GenericDeleted] = p.del
	e[chroma.GenericSubheading] = p.hunk
	return chroma.MustNewStyle(codeStyleName(style), e)
}

// registerCodeStyles adds the themes' code styles to chroma's registry,
// where glamour's code blocks look them up by name, once and before the
// first render: after that the registry is only read, and renders in
// other goroutines (the memory inspector's) may run at the same time.
// (glamour's own route, a Chroma section in the style, registers one
// style under a fixed name the first time only, so a theme switched from
// dark to light would keep the dark code colours.)
var registerCodeStyles = sync.OnceFunc(func() {
	for _, style := range []string{"dark", "light", "none"} {
		chromastyles.Register(codeStyle(style))
	}
})

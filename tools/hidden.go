package tools

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// A page can hide text from the person reading it and still hand it to a
// model: an instruction in a display:none block, in an HTML comment, in a
// 0-pixel font or pushed off-screen. The web tools remove what a browser
// would not show before they convert or extract anything, so the model
// reads what the user would see (issue 25).

// hiddenRuleMax bounds the <style> rules matched against one page.
const hiddenRuleMax = 200

// offscreenPx is how far off the page a positioned element must be pushed
// to count as hidden (-9999px is the common trick; -1000px leaves no doubt).
const offscreenPx = 1000

// stripHidden removes from doc every comment and every element a browser
// would not show: <template>, <noscript>, the hidden attribute,
// aria-hidden="true", an inline style that hides it (display:none,
// visibility:hidden, opacity:0, a zero font size, zero width or height with
// overflow hidden, off-screen positioning or text-indent), and elements
// that simple class or id rules of the page's own <style> hide.
func stripHidden(doc *html.Node) {
	var hiders []cascadia.Sel
	for _, s := range findAll(doc, atom.Style) {
		hiders = append(hiders, hidingSelectors(childText(s))...)
		if len(hiders) >= hiddenRuleMax {
			hiders = hiders[:hiddenRuleMax]
			break
		}
	}
	var doomed []*html.Node
	for _, sel := range hiders {
		doomed = append(doomed, cascadia.QueryAll(doc, sel)...)
	}
	for _, n := range doomed {
		if n.Parent != nil {
			n.Parent.RemoveChild(n)
		}
	}
	removeHidden(doc)
}

func removeHidden(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.CommentNode || c.Type == html.ElementNode && hiddenElement(c) {
			n.RemoveChild(c)
		} else {
			removeHidden(c)
		}
		c = next
	}
}

// hiddenElement reports whether n is never shown, by its tag or its own
// attributes.
func hiddenElement(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Template, atom.Noscript:
		return true
	}
	for _, a := range n.Attr {
		switch {
		case a.Namespace != "":
		case a.Key == "hidden":
			return true
		case a.Key == "aria-hidden" && strings.EqualFold(strings.TrimSpace(a.Val), "true"):
			return true
		case a.Key == "style" && hidingStyle(a.Val):
			return true
		}
	}
	return false
}

// hidingStyle reports whether CSS declarations ("display: none; color:
// red") hide the element they apply to.
func hidingStyle(decls string) bool {
	props := map[string]string{}
	for _, d := range strings.Split(decls, ";") {
		k, v, ok := strings.Cut(d, ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "!important")))
		props[k] = strings.TrimSpace(v)
	}
	switch {
	case props["display"] == "none",
		props["visibility"] == "hidden" || props["visibility"] == "collapse",
		isZero(props["opacity"]),
		isZero(props["font-size"]),
		cssPx(props["text-indent"]) <= -offscreenPx:
		return true
	}
	if clips := props["overflow"] == "hidden" || props["overflow"] == "clip"; clips {
		for _, k := range []string{"width", "height", "max-width", "max-height"} {
			if isZero(props[k]) {
				return true
			}
		}
	}
	switch props["position"] {
	case "absolute", "fixed":
		for _, k := range []string{"left", "top", "right", "bottom"} {
			if cssPx(props[k]) <= -offscreenPx {
				return true
			}
		}
		if c := strings.ReplaceAll(props["clip"], " ", ""); c == "rect(0,0,0,0)" || c == "rect(0000)" || c == "rect(0px,0px,0px,0px)" {
			return true
		}
	}
	return false
}

// cssLength is a CSS length: a number and an optional unit.
var cssLength = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([-+]?[0-9]*\.?[0-9]+)(px|em|rem|pt|%|vw|vh)?$`)
})

// isZero reports whether a CSS value is a zero length or number.
func isZero(v string) bool {
	m := cssLength().FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	return err == nil && f == 0
}

// cssPx reads a CSS length in pixels (em and rem as 16px); 0 when it is
// not a length.
func cssPx(v string) float64 {
	m := cssLength().FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return 0
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	switch m[2] {
	case "em", "rem":
		return f * 16
	case "", "px", "pt":
		return f
	}
	return 0 // percentages and viewport units: not judged
}

// cssRule is one "selectors { declarations }" of a style sheet.
var cssRule = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([^{}]+)\{([^{}]*)\}`) })

// simpleSelector is a tag, class or id selector without combinators or
// pseudo-classes (".note", "div#x", "p.a.b"): the only kind whose hiding
// rule is judged, as a pseudo-class (:hover) or a later, more specific rule
// could show the element again.
var simpleSelector = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*$|^[a-zA-Z0-9]*([.#][-_a-zA-Z][-_a-zA-Z0-9]*)+$`)
})

// hidingSelectors returns the simple selectors a style sheet hides
// elements with. Rules inside at-rules (@media print) are skipped: they
// apply only sometimes.
func hidingSelectors(css string) []cascadia.Sel {
	css = stripCSSComments(css)
	css = dropAtBlocks(css)
	var out []cascadia.Sel
	for _, m := range cssRule().FindAllStringSubmatch(css, -1) {
		if !hidingStyle(m[2]) {
			continue
		}
		for _, s := range strings.Split(m[1], ",") {
			s = strings.TrimSpace(s)
			if s == "" || !simpleSelector().MatchString(s) || s == "html" || s == "body" {
				continue
			}
			if sel, err := cascadia.Parse(s); err == nil {
				out = append(out, sel)
			}
		}
	}
	return out
}

func stripCSSComments(css string) string {
	for {
		i := strings.Index(css, "/*")
		if i < 0 {
			return css
		}
		j := strings.Index(css[i+2:], "*/")
		if j < 0 {
			return css[:i]
		}
		css = css[:i] + " " + css[i+2+j+2:]
	}
}

// dropAtBlocks removes "@media … { … }" and other at-rules with their
// nested blocks, and "@import …;" statements.
func dropAtBlocks(css string) string {
	var b strings.Builder
	for i := 0; i < len(css); {
		if css[i] != '@' {
			b.WriteByte(css[i])
			i++
			continue
		}
		j := i
		for j < len(css) && css[j] != '{' && css[j] != ';' {
			j++
		}
		if j == len(css) || css[j] == ';' {
			i = j + 1
			continue
		}
		depth := 0
		for ; j < len(css); j++ {
			if css[j] == '{' {
				depth++
			} else if css[j] == '}' {
				if depth--; depth == 0 {
					break
				}
			}
		}
		i = j + 1
	}
	return b.String()
}

// childText is the text directly inside n (a <style> element's sheet).
func childText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func findAll(n *html.Node, a atom.Atom) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == a {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"github.com/google/jsonschema-go/jsonschema"
	"golang.org/x/net/html"
)

const (
	extractMaxRows  = 500
	extractMaxValue = 2000 // characters of one field value
)

type extractArgs struct {
	URL      string          `json:"url,omitempty" jsonschema:"page to fetch (http or https); give url or html, not both"`
	HTML     string          `json:"html,omitempty" jsonschema:"HTML you already have; give url or html, not both"`
	Selector string          `json:"selector" jsonschema:"CSS selector of the repeated element: one row per match, e.g. 'table.companies tr' or 'li.member'"`
	Fields   json.RawMessage `json:"fields,omitempty"`
}

const fieldsDoc = `columns of each row: name → what to take from the row element. "h2 a" = text of the first match inside the row; ` +
	`"a@href" = an attribute of that match (href and src become absolute URLs); "@data-id" = an attribute of the row element itself; ` +
	`"" = the row's own text. Default {"text": ""}`

func extractTool(w *webFetcher) Tool {
	return New("extract", description("extract"),
		func(ctx context.Context, a extractArgs) (Result, error) { return w.extract(ctx, a) },
		func(s *jsonschema.Schema) {
			s.Properties["fields"] = &jsonschema.Schema{Type: "object", Description: fieldsDoc,
				AdditionalProperties: &jsonschema.Schema{Type: "string"}}
		}).
		WithAccess(func(ctx context.Context, a extractArgs) (Access, error) {
			if err := checkSource(a); err != nil {
				return Access{}, err
			}
			if a.URL == "" {
				return Access{Kind: AccessRead}, nil
			}
			u, err := parseWebURL(a.URL)
			if err != nil {
				return Access{}, err
			}
			return Access{Kind: AccessNetwork, URL: u.String(), Preview: u.String()}, nil
		})
}

func checkSource(a extractArgs) error {
	switch {
	case a.URL != "" && a.HTML != "":
		return errors.New("give either url or html, not both")
	case strings.TrimSpace(a.URL) == "" && strings.TrimSpace(a.HTML) == "":
		return errors.New("give url (a page to fetch) or html (markup you already have)")
	}
	return nil
}

// field is one parsed column.
type field struct {
	name    string
	sel     string // "" = the row itself
	attr    string // "" = text
	matcher goquery.Matcher
}

func (w *webFetcher) extract(ctx context.Context, a extractArgs) (Result, error) {
	if err := checkSource(a); err != nil {
		return Result{}, err
	}
	rowSel, err := compileSelector(a.Selector)
	if err != nil {
		return Result{}, fmt.Errorf("selector: %w", err)
	}
	fields, err := parseFields(a.Fields)
	if err != nil {
		return Result{}, err
	}

	var src io.Reader
	var pageURL *url.URL
	from, note := "the given html", ""
	if a.URL != "" {
		p, err := w.fetch(ctx, a.URL)
		if err != nil {
			return Result{}, err
		}
		if p.code >= 400 {
			return Result{}, fmt.Errorf("%s answered %s; nothing to extract", p.url, p.status)
		}
		if p.kind != kindHTML {
			return Result{}, fmt.Errorf("%s is %s, not HTML; extract works on HTML pages (use fetch_url to read it)", p.url, p.mediaType)
		}
		src, pageURL, from = bytes.NewReader(p.body), p.url, p.url.String()
		if p.truncated {
			note = fmt.Sprintf("note: the page was cut at %s; rows after the cut are missing\n", humanSize(w.opts.MaxBytes))
		}
	} else {
		if int64(len(a.HTML)) > w.opts.MaxBytes {
			return Result{}, fmt.Errorf("html is %s; the limit is %s", humanSize(int64(len(a.HTML))), humanSize(w.opts.MaxBytes))
		}
		src = strings.NewReader(a.HTML)
	}
	doc, err := html.Parse(src)
	if err != nil {
		return Result{}, fmt.Errorf("parse HTML of %s: %w", from, err)
	}
	stripHidden(doc) // rows the page hides are not data its reader sees
	// Links resolve against the page, or its <base href>; html given
	// without a page URL resolves only against an absolute <base href>.
	var base *url.URL
	if pageURL != nil {
		base = documentBase(doc, pageURL)
	} else if b := documentBase(doc, &url.URL{}); b.Scheme != "" {
		base = b
	}

	rows := goquery.NewDocumentFromNode(doc).FindMatcher(rowSel)
	total := rows.Length()
	if total == 0 {
		return Result{Output: fmt.Sprintf("no element of %s matches selector %q. Check the selector against the page "+
			"(fetch_url shows its content; class names may differ, or the list may be filled in by JavaScript and absent from the HTML).\n[]\n",
			from, a.Selector), Meta: map[string]any{"rows": 0}}, nil
	}
	var out strings.Builder
	shown := min(total, extractMaxRows)
	if total > extractMaxRows {
		fmt.Fprintf(&out, "%d elements match %q on %s; the first %d rows are returned (narrow the selector, or extract the next page).\n",
			total, a.Selector, from, extractMaxRows)
	} else {
		fmt.Fprintf(&out, "%d rows from %s (selector %q):\n", total, from, a.Selector)
	}
	out.WriteString(note)
	var rowsOut strings.Builder
	rowsOut.WriteString("[\n")
	rows.Slice(0, shown).Each(func(i int, row *goquery.Selection) {
		rowsOut.WriteString("  {")
		for j, f := range fields {
			if j > 0 {
				rowsOut.WriteString(", ")
			}
			writeJSONString(&rowsOut, f.name)
			rowsOut.WriteString(": ")
			if v, ok := fieldValue(row, f, base); ok {
				writeJSONString(&rowsOut, v)
			} else {
				rowsOut.WriteString("null")
			}
		}
		rowsOut.WriteString("}")
		if i < shown-1 {
			rowsOut.WriteString(",")
		}
		rowsOut.WriteString("\n")
	})
	rowsOut.WriteString("]\n")
	// The rows are the page's text: data for the model, never orders.
	out.WriteString(Envelope(from, rowsOut.String()))
	out.WriteByte('\n')
	return Result{Output: out.String(), Meta: map[string]any{"rows": shown, "matched": total}, Untrusted: from}, nil
}

// writeJSONString writes s as a JSON string, leaving <, > and & as they
// are: the reader is a model, not a browser.
func writeJSONString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// fieldValue evaluates one column on one row; ok=false when the
// sub-selector or the attribute is absent.
func fieldValue(row *goquery.Selection, f field, base *url.URL) (string, bool) {
	target := row
	if f.matcher != nil {
		target = row.FindMatcher(goquery.SingleMatcher(f.matcher))
		if target.Length() == 0 {
			return "", false
		}
	}
	if f.attr == "" {
		return cutValue(nodeText(target.Get(0))), true
	}
	v, ok := target.Attr(f.attr)
	if !ok {
		return "", false
	}
	v = strings.TrimSpace(v)
	if base != nil && urlAttrs[f.attr] && v != "" {
		if u, err := base.Parse(v); err == nil {
			v = u.String()
		}
	}
	return cutValue(v), true
}

// urlAttrs hold URLs; they are resolved against the page.
var urlAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "poster": true, "cite": true, "data-src": true, "data-href": true,
	"data-url": true, "formaction": true, "background": true, "longdesc": true,
}

func cutValue(s string) string {
	if r := []rune(s); len(r) > extractMaxValue {
		return string(r[:extractMaxValue]) + fmt.Sprintf("… [%d more characters]", len(r)-extractMaxValue)
	}
	return s
}

// compileSelector parses a CSS selector, turning cascadia's panics (it
// has had some on odd input) into errors; goquery itself would silently
// match nothing.
func compileSelector(sel string) (m cascadia.Selector, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("invalid CSS selector %q: %v", sel, p)
		}
	}()
	sel = strings.TrimSpace(sel)
	if sel == "" {
		return nil, errors.New("empty CSS selector")
	}
	m, err = cascadia.Compile(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid CSS selector %q: %v", sel, err)
	}
	return m, nil
}

// parseFields reads the fields object keeping the order the caller wrote.
func parseFields(raw json.RawMessage) ([]field, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return []field{{name: "text"}}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New(`fields must be an object mapping a name to a sub-selector, e.g. {"name": "h2", "link": "a@href"}`)
	}
	var out []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("fields: %w", err)
		}
		name, _ := tok.(string)
		var spec any
		if err := dec.Decode(&spec); err != nil {
			return nil, fmt.Errorf("fields.%s: %w", name, err)
		}
		s, ok := spec.(string)
		if !ok {
			return nil, fmt.Errorf("fields.%s must be a string (a sub-selector, \"sel@attr\", \"@attr\" or \"\"), got %s", name, typeName(spec))
		}
		if seen[name] {
			return nil, fmt.Errorf("fields: %q is given twice", name)
		}
		seen[name] = true
		f, err := parseField(name, s)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return []field{{name: "text"}}, nil
	}
	return out, nil
}

// parseField splits "sel@attr" at the last '@' outside brackets, parentheses
// and quotes, so `a[href*="@"]@href` works.
func parseField(name, spec string) (field, error) {
	f := field{name: name}
	spec = strings.TrimSpace(spec)
	at, depth := -1, 0
	var quote byte
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
		case c == '@' && depth == 0:
			at = i
		}
	}
	f.sel = spec
	if at >= 0 {
		f.sel, f.attr = strings.TrimSpace(spec[:at]), strings.ToLower(strings.TrimSpace(spec[at+1:]))
		if !validAttrName(f.attr) {
			return f, fmt.Errorf("fields.%s: %q: after @ comes an attribute name such as href or data-id, got %q", name, spec, f.attr)
		}
	}
	if f.sel != "" {
		m, err := compileSelector(f.sel)
		if err != nil {
			return f, fmt.Errorf("fields.%s: %w", name, err)
		}
		f.matcher = m
	}
	return f, nil
}

func validAttrName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"'>/=[]()@`, c) >= 0 {
			return false
		}
	}
	return true
}

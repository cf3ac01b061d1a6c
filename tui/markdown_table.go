package tui

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

type cellAlign uint8

const (
	alignLeft cellAlign = iota
	alignCenter
	alignRight
)

// renderTable draws a GFM table (its lines as splitTables cut them out)
// as wide as its content needs, at most w columns: columns that do not
// fit share the room left and wrap their cells.
func renderTable(rows []string, th *mdTheme, w int) []string {
	if len(rows) < 2 {
		return nil
	}
	head := splitCells(rows[0])
	ncol := len(head)
	aligns := make([]cellAlign, ncol)
	for j, d := range splitCells(rows[1]) {
		if j >= ncol {
			break
		}
		d = strings.TrimSpace(d)
		switch l, r := strings.HasPrefix(d, ":"), strings.HasSuffix(d, ":"); {
		case l && r:
			aligns[j] = alignCenter
		case r:
			aligns[j] = alignRight
		}
	}
	cells := make([][][]span, 0, len(rows)-1)
	for i, row := range rows {
		if i == 1 {
			continue
		}
		raw := splitCells(row)
		cs := make([][]span, ncol)
		for j := range ncol {
			if j < len(raw) {
				sgr := ""
				if i == 0 {
					sgr = th.strong
				}
				cs[j] = cellSpans(strings.TrimSpace(raw[j]), th, sgr)
			}
		}
		cells = append(cells, cs)
	}
	natural := make([]int, ncol)
	for _, cs := range cells {
		for j, c := range cs {
			natural[j] = max(natural[j], spansWidth(c))
		}
	}
	widths := shareWidths(natural, w-4-(ncol-1)-2*ncol)
	sep := th.rule + "│" + sgrReset
	var out []string
	for i, cs := range cells {
		wrapped := make([][][]span, ncol)
		height := 1
		for j, c := range cs {
			wrapped[j] = wrapSpans(c, widths[j])
			height = max(height, len(wrapped[j]))
		}
		for k := range height {
			var b strings.Builder
			for j := range ncol {
				if j > 0 {
					b.WriteString(sep)
				}
				var l []span
				if k < len(wrapped[j]) {
					l = wrapped[j][k]
				}
				pad := max(widths[j]-spansWidth(l), 0)
				left := 0
				switch aligns[j] {
				case alignRight:
					left = pad
				case alignCenter:
					left = pad / 2
				}
				b.WriteString(strings.Repeat(" ", 1+left))
				b.WriteString(joinSpans(l))
				b.WriteString(strings.Repeat(" ", 1+pad-left))
			}
			out = append(out, b.String())
		}
		if i == 0 {
			parts := make([]string, ncol)
			for j, cw := range widths {
				parts[j] = strings.Repeat("─", cw+2)
			}
			out = append(out, th.rule+strings.Join(parts, "┼")+sgrReset)
		}
	}
	for i, l := range out {
		out[i] = "  " + l
	}
	return out
}

// shareWidths gives each column its natural width if all fit in room,
// else the narrow columns keep theirs and the wide ones share the rest
// equally (at least one column each).
func shareWidths(natural []int, room int) []int {
	widths := make([]int, len(natural))
	total := 0
	for _, n := range natural {
		total += n
	}
	if total <= room {
		for j, n := range natural {
			widths[j] = max(n, 1)
		}
		return widths
	}
	fixed := make([]bool, len(natural))
	left, open := room, len(natural)
	for changed := true; changed && open > 0; {
		changed = false
		share := left / open
		for j, n := range natural {
			if !fixed[j] && n <= share {
				fixed[j], widths[j] = true, max(n, 1)
				left -= n
				open--
				changed = true
			}
		}
	}
	if open > 0 {
		share := max(left/open, 1)
		for j := range natural {
			if !fixed[j] {
				widths[j] = share
			}
		}
	}
	return widths
}

// splitCells cuts a table row at its pipes, except escaped ones and those
// inside `code`.
func splitCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, "\\|") {
		row = row[:len(row)-1]
	}
	var cells []string
	start, inCode := 0, false
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '`':
			inCode = !inCode
		case '|':
			if !inCode {
				cells = append(cells, row[start:i])
				start = i + 1
			}
		}
	}
	return append(cells, row[start:])
}

// cellSpans renders a cell's inline Markdown on one line.
func cellSpans(cell string, th *mdTheme, sgr string) []span {
	if cell == "" {
		return nil
	}
	cell = strings.ReplaceAll(cell, "\\|", "|")
	src := []byte(cell)
	doc := mdParser().Parse(text.NewReader(src))
	if p, ok := doc.FirstChild().(*ast.Paragraph); ok && p.NextSibling() == nil {
		r := mdRenderer{src: src, th: th}
		return r.inline(p, sgr, nil)
	}
	return []span{{cell, sgr}} // a heading or list marker in a cell is shown as typed
}

func spansWidth(ss []span) int {
	n := 0
	for _, s := range ss {
		n += textWidth(s.text)
	}
	return n
}

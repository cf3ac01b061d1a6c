package tools

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"polly/memory/store"
)

// OutputStore reads offloaded tool outputs.
type OutputStore interface {
	Output(ctx context.Context, id int64) (string, error)
	OutputSlice(ctx context.Context, id int64, offset, limit int) (string, int, error)
}

type readOutputArgs struct {
	ID     int64 `json:"id" jsonschema:"the output id from a line like [output #123: …]"`
	Offset int   `json:"offset,omitempty" jsonschema:"first line to show, 1-based (with chars=true: first character, 0-based)"`
	Limit  int   `json:"limit,omitempty" jsonschema:"how many lines to show (default 200; with chars=true: characters, default 8000)"`
	Chars  bool  `json:"chars,omitempty" jsonschema:"count offset and limit in characters instead of lines (for one-line outputs such as minified JSON)"`
}

type grepOutputArgs struct {
	ID      int64  `json:"id" jsonschema:"the output id from a line like [output #123: …]"`
	Pattern string `json:"pattern" jsonschema:"regular expression (RE2 syntax); (?i) for case-insensitive"`
}

const (
	outputDefaultLines = 200
	outputDefaultChars = 8000
	outputMaxChars     = 32000
	outputGrepMax      = 200
)

// OutputTools are read_tool_output and grep_tool_output over st.
func OutputTools(st OutputStore) []Tool {
	read := New("read_tool_output", description("read_tool_output"),
		func(ctx context.Context, a readOutputArgs) (Result, error) {
			if a.Offset < 0 || a.Limit < 0 {
				return Result{}, fmt.Errorf("offset and limit must not be negative (got offset=%d, limit=%d)", a.Offset, a.Limit)
			}
			if a.Chars {
				return readChars(ctx, st, a)
			}
			text, err := st.Output(ctx, a.ID)
			if err != nil {
				return Result{}, outputErr(a.ID, err)
			}
			body, note := sliceLines(text, a.ID, a.Offset, a.Limit)
			return rewrap(EnvelopeSources(text), body, note), nil
		}, nil)
	grep := New("grep_tool_output", description("grep_tool_output"),
		func(ctx context.Context, a grepOutputArgs) (Result, error) {
			re, err := regexp.Compile(a.Pattern)
			if err != nil {
				return Result{}, fmt.Errorf("invalid pattern %q: %v", a.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			}
			text, err := st.Output(ctx, a.ID)
			if err != nil {
				return Result{}, outputErr(a.ID, err)
			}
			body, note := grepLines(text, a.ID, re)
			return rewrap(EnvelopeSources(text), body, note), nil
		}, nil)
	return []Tool{read, grep}
}

// rewrap is a part of a stored output as the model gets it: when the
// output held untrusted data (a fetched page, an MCP result), the part is
// enveloped again under the same source — a slice from the middle of a
// page is still the page's text — and the harness's note stays outside.
func rewrap(sources []string, body, note string) Result {
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	if len(sources) == 0 || body == "" {
		return Result{Output: body + note}
	}
	source := strings.Join(slices.Compact(slices.Clone(sources)), ", ")
	return Result{Output: Envelope(source, strings.TrimSuffix(body, "\n")) + "\n" + note, Untrusted: source}
}

// envelopeScan is how much of a stored output's start is read to find
// whether it holds an envelope (fetch_url's header lines come first).
const envelopeScan = 4096

func outputErr(id int64, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no stored output #%d; use the id from an [output #ID: …] line", id)
	}
	return fmt.Errorf("read output #%d: %w", id, err)
}

func readChars(ctx context.Context, st OutputStore, a readOutputArgs) (Result, error) {
	limit := a.Limit
	if limit == 0 {
		limit = outputDefaultChars
	}
	limit = min(limit, outputMaxChars)
	text, total, err := st.OutputSlice(ctx, a.ID, a.Offset, limit)
	if err != nil {
		return Result{}, outputErr(a.ID, err)
	}
	if a.Offset >= total && total > 0 {
		return Result{}, fmt.Errorf("offset %d is past the end of output #%d (%d characters)", a.Offset, a.ID, total)
	}
	end := a.Offset + len([]rune(text))
	var note string
	if end < total {
		note = fmt.Sprintf("[characters %d-%d of %d; read_tool_output(id=%d, offset=%d, chars=true) continues]", a.Offset, end, total, a.ID, end)
	} else {
		note = fmt.Sprintf("[characters %d-%d of %d; end of output]", a.Offset, end, total)
	}
	head := text
	if a.Offset > 0 || len(head) < envelopeScan {
		if head, _, err = st.OutputSlice(ctx, a.ID, 0, envelopeScan); err != nil {
			return Result{}, outputErr(a.ID, err)
		}
	}
	return rewrap(EnvelopeSources(head), text, note), nil
}

// sliceLines renders lines [offset, offset+limit) numbered like read_file,
// capped in characters so one call cannot flood the context.
func sliceLines(text string, id int64, offset, limit int) (body, note string) {
	if offset == 0 {
		offset = 1
	}
	if limit == 0 {
		limit = outputDefaultLines
	}
	lines := strings.SplitAfter(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	total := len(lines)
	if offset > total {
		return "", fmt.Sprintf("output #%d has only %d lines; offset %d is past the end", id, total, offset)
	}
	var b strings.Builder
	last := offset - 1
	for i := offset - 1; i < total && i < offset-1+limit; i++ {
		line := strings.TrimRight(lines[i], "\n")
		if len(line) > 2000 {
			line = cutRunes(line, 2000) + "… [line cut; use chars=true to read it whole]"
		}
		if b.Len()+len(line) > outputMaxChars {
			break
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, line)
		last = i + 1
	}
	if last < total {
		note = fmt.Sprintf("[lines %d-%d of %d; read_tool_output(id=%d, offset=%d) continues]", offset, last, total, id, last+1)
	} else {
		note = fmt.Sprintf("[lines %d-%d of %d; end of output]", offset, last, total)
	}
	return b.String(), note
}

func grepLines(text string, id int64, re *regexp.Regexp) (body, note string) {
	var b strings.Builder
	n := 0
	for i, line := range strings.Split(text, "\n") {
		if !re.MatchString(line) {
			continue
		}
		n++
		if n > outputGrepMax {
			continue
		}
		if len(line) > 300 {
			line = cutRunes(line, 300) + "…"
		}
		fmt.Fprintf(&b, "%d: %s\n", i+1, line)
	}
	switch {
	case n == 0:
		return "", fmt.Sprintf("no line of output #%d matches %q", id, re.String())
	case n > outputGrepMax:
		note = fmt.Sprintf("[%d matching lines; showing the first %d — narrow the pattern]", n, outputGrepMax)
	default:
		note = fmt.Sprintf("[%d matching lines in output #%d]", n, id)
	}
	return b.String(), note
}

// cutRunes cuts s to at most n bytes without splitting a UTF-8 sequence.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

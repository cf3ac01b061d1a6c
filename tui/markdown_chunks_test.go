package tui

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// chunksOf cuts a whole text where nextChunk does.
func chunksOf(s string) []string {
	var out []string
	c := mdCursor{}
	for {
		next, ok := nextChunk(s, c)
		if !ok {
			return append(out, chunkSource(s, c, len(s)))
		}
		out = append(out, chunkSource(s, c, next.pos))
		c = next
	}
}

func TestChunkCuts(t *testing.T) {
	bigCode := "```go\n" + strings.Repeat("x := 1\n", 300) + "\n" + strings.Repeat("y := 2\n", 10) + "```\n\nafter\n"
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"paragraphs", "one\n\ntwo\n\nthree", []string{"one\n\n", "two\n\n", "three"}},
		{"a list item goes on after a blank line", "1. a\n\n   more of a\n\n2. b\n", []string{"1. a\n\n   more of a\n\n", "2. b\n"}},
		{"indented lines may go on a list item", "text\n\n    code\n\n    more code\n", []string{"text\n\n    code\n\n    more code\n"}},
		{"a short fence stays whole", "```\na\n\nb\n```\n\nc", []string{"```\na\n\nb\n```\n\n", "c"}},
		{"several blank lines", "a\n\n\n\nb", []string{"a\n\n\n\n", "b"}},
		{"the last line is not complete", "a\n\nb\n\nc", []string{"a\n\n", "b\n\n", "c"}},
		{"a long fence is cut at a blank line and reopened", bigCode,
			[]string{"```go\n" + strings.Repeat("x := 1\n", 300) + "\n", "```go\n" + strings.Repeat("y := 2\n", 10) + "```\n\n", "after\n"}},
	} {
		if got := chunksOf(c.src); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: chunks = %q, want %q", c.name, got, c.want)
		}
	}
	// A long run of text is cut at a line start, never inside a table or
	// before a heading underline.
	long := strings.Repeat("- item of a long list\n", 1000)
	if n := len(chunksOf(long)); n < 2 {
		t.Errorf("a %d-byte list is one chunk", len(long))
	}
	table := "| a | b |\n|---|---|\n" + strings.Repeat("| 1 | 2 |\n", 2000)
	if n := len(chunksOf(table)); n != 1 {
		t.Errorf("a table is cut into %d chunks", n)
	}
	para := strings.Repeat("word ", 2000) + "\n=====\n"
	if n := len(chunksOf(para)); n != 1 {
		t.Errorf("a setext heading is cut into %d chunks", n)
	}
}

// streamDocs are texts to stream: short and long, code-heavy, a long
// code block with blank lines and one without, a long list.
func streamDocs() map[string]string {
	var longCode strings.Builder
	longCode.WriteString("Intro.\n\n```go\n")
	for i := range 400 {
		fmt.Fprintf(&longCode, "func f%d() int {\n\treturn %d\n}\n", i, i)
		if i%20 == 19 {
			longCode.WriteString("\n")
		}
	}
	longCode.WriteString("```\n\nDone.\n")
	return map[string]string{
		"sample":            mdSample,
		"reply 20 KB":       replyOf(20 << 10),
		"long code block":   longCode.String(),
		"code without gaps": "```json\n" + strings.Repeat("{\"k\": [1, 2, 3], \"s\": \"text\"},\n", 600) + "```\n",
		"long list":         strings.Repeat("- an item of a long list with `code`\n", 500),
		"no final newline":  "# T\n\nsome *text*",
	}
}

// A reply streamed in pieces of any size and then finished looks exactly
// as the same text rendered whole, and as its last streamed frame.
func TestStreamedLooksLikeFinished(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, doc := range streamDocs() {
		for _, w := range []int{40, 100} {
			if w == 40 && len(doc) > 4<<10 {
				continue // one width is enough for the long ones
			}
			m := newMarkdown("dark")
			want := strings.Join(m.lines(doc, w), "\n")
			var r mdRendering
			var last string
			for end := 0; end < len(doc); {
				end = min(len(doc), end+1+rng.IntN(len(doc)/50+40))
				last = strings.Join(r.render(m, doc[:end], w, true, false), "\n")
			}
			if last != "\n"+want {
				t.Errorf("%s at %d: the last streamed frame differs from the whole text rendered", name, w)
			}
			if got := strings.Join(r.render(m, doc, w, true, true), "\n"); got != "\n"+want {
				t.Errorf("%s at %d: finished after streaming differs from the whole text rendered:\n%s\n----\n%s", name, w, got, want)
			}
		}
	}
}

// streamCost streams doc step bytes at a time, one frame each, then
// finishes it, and returns the bytes glamour was given while streaming,
// the most in one frame, and for the finish. It gives up (a test fails
// on what it returns) once glamour was given 30 times the text.
func streamCost(doc string, step int) (streaming, frameMax, finish int) {
	m := newMarkdown("dark")
	var r mdRendering
	for end := step; end < len(doc) && m.fed < 30*len(doc); end += step {
		before := m.fed
		r.render(m, doc[:end], 100, false, false)
		frameMax = max(frameMax, m.fed-before)
	}
	streaming = m.fed
	r.render(m, doc, 100, false, true)
	return streaming, frameMax, m.fed - streaming
}

// Streaming costs the open chunk per frame, whatever came before: a reply
// four times as long costs about four times as much (not sixteen), and
// finishing it renders only its last chunk.
func TestStreamingCostGrowsLinearly(t *testing.T) {
	short, _, _ := streamCost(replyOf(20<<10), 128)
	long, frame, finish := streamCost(replyOf(80<<10), 128)
	if ratio := float64(long) / float64(short); ratio > 4.5 {
		t.Errorf("streaming 80 KB fed glamour %d bytes, 20 KB %d: ×%.1f, not linear", long, short, ratio)
	}
	if frame > 1<<10 || finish > 1<<10 {
		t.Errorf("a frame fed glamour up to %d bytes, the finish %d: more than the open chunk", frame, finish)
	}
	// A code block written out whole is cut too (at its blank lines, or
	// anywhere when it has none): a frame costs its open piece, not the
	// whole block.
	for _, name := range []string{"long code block", "code without gaps", "long list"} {
		doc := streamDocs()[name]
		if _, frame, _ := streamCost(doc, 512); frame > bigChunk+1<<10 {
			t.Errorf("%s (%d bytes): a frame fed glamour %d bytes", name, len(doc), frame)
		}
	}
}

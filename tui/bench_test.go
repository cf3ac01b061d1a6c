package tui

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"polly/agent"
	"polly/memory/chat"
)

// fill adds n messages of mixed kinds (user, Markdown replies with code,
// tool blocks with diffs) and renders them once, as a long session would
// have them: cached.
func fill(h *harness, n int) {
	tr := h.m.current().tr
	for i := range n {
		switch i % 4 {
		case 0:
			tr.add(&item{kind: kUser, text: fmt.Sprintf("message %d: please look at the parser and fix the failing test", i)})
		case 1:
			tr.add(&item{kind: kAssistant, text: fmt.Sprintf("## Step %d\n\nI read `parser.go`. The **bug** is in `parse`:\n\n```go\nfunc parse(s string) *Node {\n\treturn nil\n}\n```\n\n- it returns nil\n- callers expect a node\n", i)})
		case 2:
			tr.add(&item{kind: kTool, tool: &toolInfo{name: "edit_file", brief: "path=parser.go", done: true, chars: 120, lines: 3,
				diff: "--- a/parser.go\n+++ b/parser.go\n@@ -1,3 +1,3 @@\n func parse(s string) *Node {\n-\treturn nil\n+\treturn &Node{}\n }\n"}})
		case 3:
			tr.add(&item{kind: kTool, tool: &toolInfo{name: "run_command", brief: "command=go test ./...", done: true, chars: 52000, lines: 900, offloaded: true, execID: int64(i)}})
		}
	}
	for _, it := range tr.items { // every item rendered and cached, as after scrolling through
		h.m.r.lines(it, h.m.w)
	}
	h.m.View()
}

// BenchmarkViewLongTranscript: one frame of a 1,000-message transcript at
// 120×40 with every item cached.
func BenchmarkViewLongTranscript(b *testing.B) {
	h := newHarness(b, harnessOpts{w: 120, h: 40})
	fill(h, 1000)
	b.ReportAllocs()
	for b.Loop() {
		_ = h.m.View()
	}
}

// BenchmarkStreamedToken: the whole cost of one streamed token — the
// batch through Update, the frame that publishes it (re-rendering only the
// streaming message's unsettled tail) and the View — after 10, 100 and
// 1,000 prior messages. It must not grow with the transcript.
func BenchmarkStreamedToken(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("prior=%d", n), func(b *testing.B) {
			h := newHarness(b, harnessOpts{w: 120, h: 40})
			fill(h, n)
			streamWords(b, h, 400) // the message ends every 400 words; the next one starts
		})
	}
}

// BenchmarkFirstFrame: building the root model and drawing its first
// frame at 120×40 (the app itself is opened before, in Run).
func BenchmarkFirstFrame(b *testing.B) {
	h := newHarness(b, harnessOpts{w: 120, h: 40})
	b.ReportAllocs()
	for b.Loop() {
		m := newModel(options{app: h.app, sess: h.m.sess, bridge: h.b})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		_ = m.View()
	}
}

// replyOf is about n bytes of a streamed Markdown reply: paragraphs, lists
// and small code blocks, as a long answer has them.
func replyOf(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "Paragraph %d: the parser fails because parse returns nil where callers expect a node, so I change it and run the tests again.\n\n", i)
		case 1:
			fmt.Fprintf(&b, "- step %d reads `parse.go`\n- then **fixes** it\n\n", i)
		case 2:
			fmt.Fprintf(&b, "```go\nfunc parse%d(s string) *Node {\n\treturn &Node{}\n}\n```\n\n", i)
		}
	}
	return b.String()
}

// BenchmarkStreamedTokenReplyLength: one streamed token (its batch through
// Update, the frame, the View) when the reply streaming now is already
// 1 KB, 10 KB or 100 KB long. Flat: only the new lines are rendered and
// measured; what settled is neither scanned nor copied again.
func BenchmarkStreamedTokenReplyLength(b *testing.B) {
	for _, size := range []int{1 << 10, 10 << 10, 100 << 10} {
		b.Run(fmt.Sprintf("reply=%dKB", size>>10), func(b *testing.B) {
			h := newHarness(b, harnessOpts{w: 120, h: 40})
			fill(h, 10)
			h.m.Update(eventsMsg{items: []any{agent.TextDelta{Header: hdr("default"), Text: replyOf(size)}}})
			h.m.Update(frameMsg{})
			_ = h.m.View()
			streamWords(b, h, 0)
		})
	}
}

// streamWords streams one word a b.Loop round — its batch through Update,
// the frame that publishes it and the View — with a paragraph's end every
// 16 words, and, if endEvery > 0, the message's end every endEvery words.
func streamWords(b *testing.B, h *harness, endEvery int) {
	d := hdr("default")
	words := strings.Fields("the parser fails because parse returns nil where callers expect a node so I will change it and run the tests again")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		text := words[i%len(words)] + " "
		if i%16 == 15 {
			text += "\n\n" // a paragraph ends: it settles and is rendered once
		}
		h.m.Update(eventsMsg{items: []any{agent.TextDelta{Header: d, Text: text}}})
		h.m.Update(frameMsg{})
		_ = h.m.View()
		if endEvery > 0 && (i+1)%endEvery == 0 {
			h.m.Update(eventsMsg{items: []any{agent.MessageDone{Header: d, Message: chat.Message{Role: chat.Assistant, Content: h.m.current().tr.text.text}}}})
		}
	}
}

// codeReply is about n bytes of a coding answer: a heading, a paragraph
// and a list per step, and a 22-line Go code block indented with tabs.
func codeReply(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "## Step %d\n\n", i)
		fmt.Fprintf(&b, "The parser fails because `parse%d` returns nil where callers expect a node, so I change it and run the tests again; the **fix** is small.\n\n", i)
		fmt.Fprintf(&b, "- read `parse%d.go`\n- fix the nil return\n- run `go test ./...`\n\n", i)
		fmt.Fprintf(&b, "```go\n// parse%d reads one node.\nfunc parse%d(s string) (*Node, error) {\n", i, i)
		for j := range 6 {
			fmt.Fprintf(&b, "\tif s == \"case %d\" {\n\t\treturn &Node{n: %d}, nil // case %d\n\t}\n", j, i*10+j, j)
		}
		b.WriteString("\treturn nil, errEmpty\n}\n```\n\n")
	}
	return b.String()
}

// streamOnce streams doc through one reply's renderer as the TUI draws
// it: a frame every 64 bytes (16 tokens: 50 ms at 320 tokens a second),
// then the finished message.
func streamOnce(m *markdown, doc string) {
	var r mdRendering
	for end := 64; end < len(doc); end += 64 {
		r.render(m, doc[:end], 100, true, false)
	}
	r.render(m, doc, 100, true, true)
}

// BenchmarkStreamReply: one whole reply of 20 or 80 KB (code blocks,
// lists, paragraphs) streamed through the renderer, per op: wall time,
// the process's CPU time (GC included) and what glamour was fed. Linear:
// the 80 KB reply costs about four times the 20 KB one.
func BenchmarkStreamReply(b *testing.B) {
	for _, size := range []int{20 << 10, 80 << 10} {
		b.Run(fmt.Sprintf("reply=%dKB", size>>10), func(b *testing.B) {
			doc := codeReply(size)
			m := newMarkdown("dark")
			streamOnce(m, doc) // glamour's renderer and chroma's Go lexer built
			m.fed = 0
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				streamOnce(m, doc)
			}
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(m.fed)/float64(b.N), "fed-B/op")
		})
	}
}

// BenchmarkStreamReplyTUI: the same replies through the whole TUI: each
// 64 bytes a delta through Update, the frame and the View; then the
// finished message and its View.
func BenchmarkStreamReplyTUI(b *testing.B) {
	for _, size := range []int{20 << 10, 80 << 10} {
		b.Run(fmt.Sprintf("reply=%dKB", size>>10), func(b *testing.B) {
			doc := codeReply(size)
			h := newHarness(b, harnessOpts{w: 120, h: 40})
			d := hdr("default")
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				for i := 0; i < len(doc); i += 64 {
					h.m.Update(eventsMsg{items: []any{agent.TextDelta{Header: d, Text: doc[i:min(len(doc), i+64)]}}})
					h.m.Update(frameMsg{})
					_ = h.m.View()
				}
				h.m.Update(eventsMsg{items: []any{agent.MessageDone{Header: d, Message: chat.Message{Role: chat.Assistant, Content: doc}}}})
				_ = h.m.View()
			}
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time this process used so far, all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package store

import (
	"encoding/json"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"

	"polly/memory/chat"
)

// wireSumMessages is a fixed conversation with fields of every length the
// sum handles differently: empty, short, long, multi-byte.
func wireSumMessages() []chat.Message {
	long := strings.Repeat("func step(s *state) bool {\n\treturn s.n > 7 // é\n}\n", 40)
	return []chat.Message{
		chat.SystemText("You are Polly."),
		chat.UserText("read a.txt"),
		{Role: chat.Assistant, Content: "Reading it.", ToolCalls: []chat.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`},
			{ID: "call_2", Name: "grep", Arguments: `{"pattern":"` + strings.Repeat("x", 300) + `"}`}}},
		{Role: chat.Tool, ToolCallID: "call_1", Content: long},
		{Role: chat.Tool, ToolCallID: "call_2", Content: ""},
		{Role: chat.Assistant},
	}
}

// The sums records already hold must stay valid: WireSum of a fixed
// conversation is pinned (computed by the field-by-field version records
// were first written with).
func TestWireSumPinned(t *testing.T) {
	const want = "crc32c:31ec9a3c:6"
	if got := WireSum(wireSumMessages()); got != want {
		t.Fatalf("WireSum = %s, want %s: records stored before would no longer rebuild", got, want)
	}
}

// WireSum is the CRC-32C of each message's fields in order, each followed
// by 0, and 1 after each message, however the fields are batched.
func TestWireSumIsTheCRCOfTheFieldStream(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		n := []int{0, 1, 7, 60, 200, 255, 256, 257, 1000, 5000}[r.IntN(10)]
		return strings.Repeat("aé\x00{", n)[:n]
	}
	for range 200 {
		var ms []chat.Message
		var stream []byte
		for range r.IntN(12) {
			m := chat.Message{Role: chat.Role(text()), Content: text(), ToolCallID: text()}
			for range r.IntN(3) {
				m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: text(), Name: text(), Arguments: text()})
			}
			ms = append(ms, m)
			for _, f := range []string{string(m.Role), m.Content, m.ToolCallID} {
				stream = append(append(stream, f...), 0)
			}
			for _, tc := range m.ToolCalls {
				for _, f := range []string{tc.ID, tc.Name, tc.Arguments} {
					stream = append(append(stream, f...), 0)
				}
			}
			stream = append(stream, 1)
		}
		want := crc32.Checksum(stream, crc32.MakeTable(crc32.Castagnoli))
		got := WireSum(ms)
		if wantS := "crc32c:" + hex8(want) + ":" + itoa(len(ms)); got != wantS {
			t.Fatalf("WireSum = %s, want %s", got, wantS)
		}
	}
}

func hex8(v uint32) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// BenchmarkWireSum: the sum of a 40k-token context (about 400 messages,
// 160 KB), taken with every request.
func BenchmarkWireSum(b *testing.B) {
	ms := []chat.Message{chat.SystemText(strings.Repeat("You are Polly. ", 600))}
	file := strings.Repeat("func step(s *state) bool {\n\treturn s.n > 7\n}\n", 100)
	for i := range 200 {
		id := "call_" + itoa(i)
		ms = append(ms, chat.Message{Role: chat.Assistant, Content: "Looking at how the loop hands results back.",
			ToolCalls: []chat.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"src/file3.go"}`}}},
			chat.Message{Role: chat.Tool, ToolCallID: id, Content: file[:len(file)*(i%4+1)/8]})
	}
	b.ReportAllocs()
	for b.Loop() {
		WireSum(ms)
	}
}

// WireSums gives WireSum's sum for every request of a conversation that
// grows, has a message edited or its tool calls changed in place, shrinks
// (a summary) and grows again.
func TestWireSumsMatchesWireSum(t *testing.T) {
	var w WireSums
	ms := wireSumMessages()
	check := func(what string, ms []chat.Message) {
		t.Helper()
		if got, want := w.Sum(ms), WireSum(ms); got != want {
			t.Fatalf("%s: WireSums %s, WireSum %s", what, got, want)
		}
	}
	check("first", ms)
	check("again", ms)
	ms = append(ms, chat.UserText("more"), chat.Message{Role: chat.Assistant, Content: "ok"})
	check("grown", ms)
	ms[3].Content = ms[3].Content[:100] // shortened, as a stale output is
	check("edited", ms)
	ms[2].ToolCalls[1].Arguments = `{"pattern":"y"}` // in place: the slice the last request had
	check("tool call changed in place", ms)
	ms = append([]chat.Message{ms[0], chat.UserText("[CONTEXT SUMMARY #1]")}, ms[4:]...)
	check("summarised", ms)
	check("empty", nil)
	check("after empty", ms)
}

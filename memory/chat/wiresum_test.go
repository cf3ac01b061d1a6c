package chat

import (
	"encoding/json"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
)

// wireSumMessages is a fixed conversation with fields of every length the
// sum handles differently: empty, short, long, multi-byte.
func wireSumMessages() []Message {
	long := strings.Repeat("func step(s *state) bool {\n\treturn s.n > 7 // é\n}\n", 40)
	return []Message{
		SystemText("You are Polly."),
		UserText("read a.txt"),
		{Role: Assistant, Content: "Reading it.", ToolCalls: []ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`},
			{ID: "call_2", Name: "grep", Arguments: `{"pattern":"` + strings.Repeat("x", 300) + `"}`}}},
		{Role: Tool, ToolCallID: "call_1", Content: long},
		{Role: Tool, ToolCallID: "call_2", Content: ""},
		{Role: Assistant},
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
		var ms []Message
		var stream []byte
		for range r.IntN(12) {
			m := Message{Role: Role(text()), Content: text(), ToolCallID: text()}
			for range r.IntN(3) {
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: text(), Name: text(), Arguments: text()})
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
	ms := []Message{SystemText(strings.Repeat("You are Polly. ", 600))}
	file := strings.Repeat("func step(s *state) bool {\n\treturn s.n > 7\n}\n", 100)
	for i := range 200 {
		id := "call_" + itoa(i)
		ms = append(ms, Message{Role: Assistant, Content: "Looking at how the loop hands results back.",
			ToolCalls: []ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"src/file3.go"}`}}},
			Message{Role: Tool, ToolCallID: id, Content: file[:len(file)*(i%4+1)/8]})
	}
	b.ReportAllocs()
	for b.Loop() {
		WireSum(ms)
	}
}

package chat

import (
	"fmt"
	"hash/crc32"
	"sync"
	"unsafe"
)

// WireSum is a checksum of the fields of messages that go on the wire
// (role, content, tool calls, tool_call_id), in order: CRC-32C, which the
// CPU computes, over the strings in place — it guards against accidents (a
// stored row changed since a request was recorded), not against forgery.
// A request record keeps it; a rebuild of the request must give it again.
func WireSum(ms []Message) string {
	sum := uint32(0)
	for _, m := range ms {
		sum = SumMessage(sum, m)
	}
	return FormatWireSum(sum, len(ms))
}

// SumMessage continues a wire sum over one message: each field followed
// by a 0, the message by a 1. WireSum of n messages is FormatWireSum of
// the sum continued over each in turn, so a conversation that resends its
// history can resume the sum after the messages it shares.
func SumMessage(sum uint32, m Message) uint32 {
	tab, sep := castagnoli(), [2]byte{0, 1}
	field := func(s string) {
		sum = crc32.Update(sum, tab, unsafe.Slice(unsafe.StringData(s), len(s)))
		sum = crc32.Update(sum, tab, sep[:1])
	}
	field(string(m.Role))
	field(m.Content)
	field(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		field(tc.ID)
		field(tc.Name)
		field(tc.Arguments)
	}
	return crc32.Update(sum, tab, sep[1:])
}

// FormatWireSum is how a sum over n messages is written.
func FormatWireSum(sum uint32, n int) string { return fmt.Sprintf("crc32c:%08x:%d", sum, n) }

// castagnoli is made on first use, not at start-up.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

package redact

import (
	"strings"
	"testing"
)

// BenchmarkString: the cost per tool output of hiding three configured
// keys in every form, on text that holds none (the common case).
func BenchmarkString(b *testing.B) {
	r := New("sk-proj-Kx9mZ2vQ7rT4wY8pL3nB", "sk-or-v1-0123456789abcdef0123", "gsk_ABCDEFGHIJKLMNOPQRSTUV0123")
	for _, size := range []int{8 << 10, 1 << 20} {
		text := strings.Repeat("func main() { fmt.Println(\"hello, world\") } // 0123456789 abcdef\n", size/64)
		b.Run(sizeName(size), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				_ = r.String(text)
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return "1MiB"
	}
	return "8KiB"
}

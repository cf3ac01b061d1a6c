// Package tokens estimates how many tokens text and messages cost: a real
// BPE tokenizer (offline, vocabularies compiled in) for OpenAI model names,
// characters/4 for everything else, and a calibration from the provider's
// reported prompt_tokens.
package tokens

import (
	"runtime"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	"polly/memory/chat"
)

// Counter counts the tokens of a text.
type Counter interface {
	Count(s string) int
	Name() string
}

// Approx is the characters/4 estimate used for models without a known tokenizer.
type Approx struct{}

func (Approx) Count(s string) int { return (len(s) + 3) / 4 }
func (Approx) Name() string       { return "chars/4" }

// BPE counts with a tiktoken vocabulary.
type BPE struct {
	enc  tokenizer.Encoding
	once sync.Once
	c    tokenizer.Codec
	err  error
}

// NewBPE returns a counter for a tiktoken encoding. The vocabulary is loaded
// on first use (10–16 ms), not at start-up.
func NewBPE(enc tokenizer.Encoding) *BPE { return &BPE{enc: enc} }

func (b *BPE) Count(s string) int {
	b.once.Do(func() { b.c, b.err = tokenizer.Get(b.enc) })
	if b.err != nil {
		return Approx{}.Count(s)
	}
	if len(s) >= parallelMin {
		if parts := splitSafe(s, runtime.GOMAXPROCS(0)); len(parts) > 1 {
			return b.countParallel(parts)
		}
	}
	return b.count(s)
}

func (b *BPE) count(s string) int {
	n, err := b.c.Count(s)
	if err != nil {
		return Approx{}.Count(s)
	}
	return n
}

// parallelMin is the size from which a text is counted in parallel parts.
const parallelMin = 128 << 10

func (b *BPE) countParallel(parts []string) int {
	counts := make([]int, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i] = b.count(p)
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	return total
}

// splitSafe cuts s into about n parts at boundaries where no tiktoken
// pre-token can span: right after a newline that is followed by a
// non-space character (the o200k and cl100k split patterns never carry a
// piece across such a point), so the parts' counts add up exactly.
func splitSafe(s string, n int) []string {
	if n < 2 {
		return []string{s}
	}
	var parts []string
	size := len(s) / n
	start := 0
	for len(parts) < n-1 {
		i := start + size
		if i >= len(s) {
			break
		}
		for i < len(s) && !(s[i-1] == '\n' && !isSpace(s[i])) {
			i++
		}
		if i >= len(s) {
			break
		}
		parts = append(parts, s[start:i])
		start = i
	}
	return append(parts, s[start:])
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func (b *BPE) Name() string { return string(b.enc) }

// ForModel picks the counter for a model name. Provider prefixes such as
// "openai/gpt-4.1" (OpenRouter) are understood.
func ForModel(model string) Counter {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		if !strings.HasPrefix(m, "openai/") {
			return Approx{}
		}
		m = m[i+1:]
	}
	switch {
	case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "gpt-4.1"), strings.HasPrefix(m, "gpt-4.5"),
		strings.HasPrefix(m, "gpt-5"), strings.HasPrefix(m, "chatgpt-4o"), strings.HasPrefix(m, "gpt-oss"),
		strings.HasPrefix(m, "o1"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"):
		return NewBPE(tokenizer.O200kBase)
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-35"):
		return NewBPE(tokenizer.Cl100kBase)
	}
	return Approx{}
}

// Per-message framing the chat format adds around content (role, separators).
const messageOverhead = 4

// Message estimates one message, including its tool calls.
func Message(c Counter, m chat.Message) int {
	n := messageOverhead + c.Count(m.Content)
	for _, tc := range m.ToolCalls {
		n += 3 + c.Count(tc.Name) + c.Count(tc.Arguments)
	}
	if m.ToolCallID != "" {
		n += 2
	}
	return n
}

// Messages estimates a whole context, using each message's cached Tokens
// when it is set and the content has not been rewritten.
func Messages(c Counter, ms []chat.Message) int {
	n := 3 // reply priming
	for _, m := range ms {
		if m.Tokens > 0 {
			n += m.Tokens
		} else {
			n += Message(c, m)
		}
	}
	return n
}

// Calibration scales estimates by what the provider actually reported, so a
// chars/4 guess for a local model converges on the real count.
type Calibration struct {
	ratio float64
}

// Scale applies the calibration to an estimate.
func (k *Calibration) Scale(estimate int) int {
	if k == nil || k.ratio == 0 {
		return estimate
	}
	return int(float64(estimate)*k.ratio + 0.5)
}

// Ratio is the current actual/estimate ratio (1 before any observation).
func (k *Calibration) Ratio() float64 {
	if k.ratio == 0 {
		return 1
	}
	return k.ratio
}

// Observe records one call: estimate is what we counted for the prompt,
// actual the provider's prompt_tokens. The ratio moves halfway each time so
// one odd call does not swing it, and is clamped to a sane range.
func (k *Calibration) Observe(estimate, actual int) {
	if estimate <= 0 || actual <= 0 {
		return
	}
	r := float64(actual) / float64(estimate)
	r = min(max(r, 0.25), 4)
	if k.ratio == 0 {
		k.ratio = r
		return
	}
	k.ratio = (k.ratio + r) / 2
}

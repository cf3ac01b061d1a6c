// Package tokens estimates how many tokens text and messages cost: a real
// BPE tokenizer (offline, vocabularies compiled in) for OpenAI model names,
// characters/4 for everything else, and a calibration from the provider's
// reported prompt_tokens.
//
// The vocabularies are tiktoken's o200k_base and cl100k_base, taken from
// github.com/tiktoken-go/tokenizer by `go generate` (internal/vocabgen) and
// embedded in the compact form of package vocab, read in place: nothing is
// built when a counter starts, a process that never counts with one never
// touches its pages, and counting allocates nothing per token. The counts
// are the library's, exactly (see the tests).
package tokens

//go:generate go run ./internal/vocabgen .

import (
	_ "embed"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"polly/memory/chat"
	"polly/memory/tokens/internal/vocab"
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

var (
	//go:embed o200k_base.vocab
	o200kFile string
	//go:embed cl100k_base.vocab
	cl100kFile string
)

// encoding is one tiktoken encoding: its vocabulary file and the
// pre-tokenizer that cuts text into the pieces merged within.
type encoding struct {
	name  string
	file  string
	split func(s string, i int) int
}

var (
	o200kBase  = encoding{"o200k_base", o200kFile, splitO200k}
	cl100kBase = encoding{"cl100k_base", cl100kFile, splitCl100k}
)

// BPE counts with a tiktoken vocabulary.
type BPE struct {
	enc    encoding
	once   sync.Once
	v      *vocab.Table
	err    error
	opened atomic.Bool // the first count opened the vocabulary

	cacheMu sync.Mutex  // held by the count using the cache; others go without
	cache   *pieceCache // made on the first count
}

func newBPE(enc encoding) *BPE { return &BPE{enc: enc} }

// Count counts s. A vocabulary that does not open (a damaged build) falls
// back to characters/4 rather than failing the caller.
func (b *BPE) Count(s string) int {
	b.once.Do(func() {
		b.v, b.err = vocab.Open(b.enc.file)
		b.opened.Store(true)
	})
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
	s = validUTF8(s)
	m := merger{v: b.v}
	// One count at a time uses the cache (parallel parts, agents sharing
	// a counter): the others count without, rather than wait.
	if b.cacheMu.TryLock() {
		defer b.cacheMu.Unlock()
		if b.cache == nil {
			b.cache = new(pieceCache)
		}
		m.cache = b.cache
	}
	n := 0
	for i := 0; i < len(s); {
		end := b.enc.split(s, i)
		if end <= i { // nothing matches here: the library skips the character
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		n += m.count(s[i:end])
		i = end
	}
	return n
}

// validUTF8 replaces each byte that is not part of valid UTF-8 with
// U+FFFD, as the library's regexp2 does when it turns the text into runes
// (so its pieces, and their tokens, have the replacement's bytes).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
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
// non-space character other than '/' (o200k's punctuation pieces take
// newlines and slashes after them, ";\n//"; no other piece carries on past
// a newline), so the parts' counts add up exactly.
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
		for i < len(s) && !(s[i-1] == '\n' && !isSpace(s[i]) && s[i] != '/') {
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

func (b *BPE) Name() string { return b.enc.name }

// Unopened is c, or Approx when c is a BPE whose vocabulary no count has
// opened yet. A vocabulary is a few MB read in place from the binary: its
// first count makes the process touch (and keep resident) most of it, so
// a figure that can be an estimate — the context meter before the first
// request — does not open it.
func Unopened(c Counter) Counter {
	if b, ok := c.(*BPE); ok && !b.opened.Load() {
		return Approx{}
	}
	return c
}

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
		return newBPE(o200kBase)
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-35"):
		return newBPE(cl100kBase)
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
	// By index, not a copy of each: a Message is 144 bytes, and ms is a
	// whole context.
	for i := range ms {
		if ms[i].Tokens > 0 {
			n += ms[i].Tokens
		} else {
			n += Message(c, ms[i])
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

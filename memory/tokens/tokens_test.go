package tokens

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/memory/chat"
)

func TestForModel(t *testing.T) {
	cases := map[string]string{
		"gpt-4.1":            "o200k_base",
		"gpt-4o-mini":        "o200k_base",
		"o4-mini":            "o200k_base",
		"gpt-5":              "o200k_base",
		"openai/gpt-4.1":     "o200k_base",
		"gpt-4":              "cl100k_base",
		"gpt-3.5-turbo":      "cl100k_base",
		"llama3.1":           "chars/4",
		"anthropic/claude-3": "chars/4",
	}
	for model, want := range cases {
		if got := ForModel(model).Name(); got != want {
			t.Errorf("ForModel(%q) = %s, want %s", model, got, want)
		}
	}
}

func TestCounts(t *testing.T) {
	c := ForModel("gpt-4.1")
	if n := c.Count("hello world"); n != 2 {
		t.Fatalf("o200k hello world = %d, want 2", n)
	}
	if n := (Approx{}).Count(strings.Repeat("a", 400)); n != 100 {
		t.Fatalf("approx = %d", n)
	}
	m := chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "1", Name: "read_file", Arguments: `{"path":"a.go"}`}}}
	if Message(c, m) <= messageOverhead {
		t.Fatal("tool calls not counted")
	}
}

func TestCalibration(t *testing.T) {
	var k Calibration
	if k.Scale(1000) != 1000 || k.Ratio() != 1 {
		t.Fatal("uncalibrated scale must be identity")
	}
	k.Observe(1000, 1500)
	if k.Scale(1000) != 1500 {
		t.Fatalf("scale = %d", k.Scale(1000))
	}
	k.Observe(1000, 1000) // moves halfway
	if k.Scale(1000) != 1250 {
		t.Fatalf("scale = %d", k.Scale(1000))
	}
	k.Observe(1, 1000000) // clamped
	if k.Ratio() > 4 {
		t.Fatalf("ratio %v not clamped", k.Ratio())
	}
}

var sample = func() string {
	var b strings.Builder
	for b.Len() < 1<<20 {
		b.WriteString("func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n\t// Dispatch the request to the handler whose pattern most closely matches.\n\th, _ := s.mux.Handler(r)\n\th.ServeHTTP(w, r)\n}\n")
	}
	return b.String()
}()

// BenchmarkCountO200k is PRODUCT §11's "token counting ≥ 10 MB/s".
func BenchmarkCountO200k(b *testing.B) {
	c := ForModel("gpt-4.1")
	c.Count("warm up")
	b.SetBytes(int64(len(sample)))
	b.ReportAllocs()
	for b.Loop() {
		c.Count(sample)
	}
}

// benchTexts are 1 KB and 100 KB of code, and 100 KB of mixed-script
// prose.
var benchTexts = []struct {
	name, text string
}{
	{"code-1KB", sample[:1<<10]},
	{"code-100KB", sample[:100<<10]},
	{"unicode-100KB", strings.Repeat("Größe naïve café — 日本語のテキスト, русский текст; emoji 😀 and 12345 numbers.\n", 1100)[:100<<10]},
}

// BenchmarkCount is the compact counter; BenchmarkLibraryCount the
// library it replaced, on the same texts.
func BenchmarkCount(b *testing.B) {
	benchCounter(b, func(enc encoding) func(string) {
		c := newBPE(enc)
		c.Count("warm up")
		return func(s string) { c.Count(s) }
	})
}

func BenchmarkLibraryCount(b *testing.B) {
	benchCounter(b, func(enc encoding) func(string) {
		c := libraryCodec(b, enc)
		return func(s string) { _, _ = c.Count(s) }
	})
}

// benchCounter counts each of benchTexts with a counter made for each
// encoding.
func benchCounter(b *testing.B, counter func(encoding) func(string)) {
	for _, enc := range encodings {
		count := counter(enc)
		for _, t := range benchTexts {
			b.Run(enc.name+"/"+t.name, func(b *testing.B) {
				b.SetBytes(int64(len(t.text)))
				b.ReportAllocs()
				for b.Loop() {
					count(t.text)
				}
			})
		}
	}
}

// BenchmarkFirstCount is a new counter's first count: what opening the
// vocabulary costs (the library built a 200,000-entry map, ~40 ms).
func BenchmarkFirstCount(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newBPE(o200kBase).Count("hello world")
	}
}

func BenchmarkCountApprox(b *testing.B) {
	b.SetBytes(int64(len(sample)))
	for b.Loop() {
		Approx{}.Count(sample)
	}
}

// Counting allocates nothing per token or piece: a fixed few allocations
// a text at most (the scratch of long pieces' merges), whatever its size.
func TestCountAllocations(t *testing.T) {
	long := strings.Repeat("x", 500) + strings.Repeat(" ", 300) + strings.Repeat("=", 200) // pieces past scanMax
	for _, enc := range encodings {
		c := newBPE(enc)
		c.Count("open")
		for _, text := range []string{benchTexts[0].text, benchTexts[1].text, benchTexts[2].text, long + benchTexts[1].text + long} {
			if n := testing.AllocsPerRun(5, func() { c.Count(text) }); n > 4 {
				t.Errorf("%s: %v allocations counting %d bytes", enc.name, n, len(text))
			}
		}
	}
}

// Counting in parallel parts gives exactly the sequential count.
func TestParallelCountIsExact(t *testing.T) {
	for _, model := range []string{"gpt-4.1", "gpt-4"} {
		c := ForModel(model).(*BPE)
		c.Count("load the vocabulary")
		texts := []string{sample, strings.Repeat("word  \n\n  more\tstuff }\n{\n", 20000), strings.Repeat("é日本語 テキスト\n", 30000), strings.Repeat("x := 1;\n// comment\n", 20000)}
		for i, text := range texts {
			whole := c.count(text)
			for _, n := range []int{2, 3, 7} {
				got := c.countParallel(splitSafe(text, n))
				if got != whole {
					t.Fatalf("%s text %d: %d parts counted %d, whole %d", model, i, n, got, whole)
				}
			}
		}
	}
}

// A vocabulary that does not open (a damaged build) counts characters/4
// instead of failing or panicking.
func TestDamagedVocabularyFallsBackToApprox(t *testing.T) {
	b := newBPE(encoding{name: "damaged", file: o200kFile[:100], split: splitO200k})
	if n := b.Count(strings.Repeat("word ", 40)); n != 50 {
		t.Fatalf("count %d, want chars/4 = 50", n)
	}
}

// BenchmarkCountSourceFiles counts this module's Go files one by one with
// one counter, as a session counts the files it reads: varied real code,
// each text new (unlike the repeated texts above).
func BenchmarkCountSourceFiles(b *testing.B) {
	var files []string
	size := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || size > 4<<20 {
			return err
		}
		data, err := os.ReadFile(path)
		files = append(files, string(data))
		size += len(data)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		c := ForModel("gpt-4.1")
		for _, f := range files {
			c.Count(f)
		}
	}
}

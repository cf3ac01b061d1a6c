package tokens

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"

	"polly/memory/tokens/internal/vocab"
)

// The compact counter must give exactly the counts of the library its
// vocabularies come from, on any text.

func libraryCodec(t testing.TB, enc encoding) tokenizer.Codec {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.Encoding(enc.name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func libraryCount(t testing.TB, c tokenizer.Codec, s string) int {
	t.Helper()
	n, err := c.Count(s)
	if err != nil {
		t.Fatalf("library: %v", err)
	}
	return n
}

var encodings = []encoding{o200kBase, cl100kBase}

// tricky texts: each targets a branch of the pre-tokenizers or the merge.
var tricky = []string{
	"", "a", " ", "\n", "hello world", "Hello World", "HELLO world", "don't", "DON'T", "I'm", "we'LL", "they're", "You've",
	"it'S", "he'd", "'s", "'sa", "' s", "'ſ", "xſ'ſ", "'ll", "'Ll", "'l", "'re", "'r", "''s", "a's'", "'", "''",
	"foo(bar)", "(foo", " (foo", "\tfoo", "\t\tfoo", "  foo", "   foo", "foo   ", "foo   bar", "a\n\nb", "a \n \n b", "a\r\nb",
	"\r\n\r\n", " \n", "\n ", "   \n   x", "x   \n", "x \u00a0 y", "\u00a0x", "x\u2003\u2003y", "x\u0085y", "\v\f", "\u3000",
	"12345678", "1,234,567.89", "x1y22z333w4444", "٣٤٥٦", "Ⅻ½²", "①②③④",
	"!!!", "...\n", "// comment\n", "//\n/", "a/b/c", "path/to/file.go", " //x", "==========", "-->", " ->", "http://x.y/z?q=1&r=2",
	"e\u0301", "\u0301e", "\u0301\u0301", "x\u0301", "A\u0301B", "(\u0301A", "a\u0301b", "\u0301A ", "Ab\u0301", "ǅemal", "ǅ", "aǅb",
	"ʰello", "Aʰ", "ʰ", "اَلسَّلَامُ", "مرحبا بالعالم", "日本語のテキスト", "中文字符", "한국어 텍스트", "हिन्दी पाठ", "Ελληνικά", "Привет, мир!",
	"emoji 😀👍🏽 👨‍👩‍👧", "🇫🇷", "\u200d", "\ufeffBOM", "tab\tsep\tvalues", "mixedCASEWordsAndCamelCase", "snake_case_name", "XMLHttpRequest",
	"\x00\x01\x02", "\x7f", "invalid \xff\xfe bytes", "\xc3", "a\xe2\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80", "é\xff日",
	strings.Repeat(" ", 200), strings.Repeat("\n", 100), strings.Repeat(" \n", 50), strings.Repeat("a", 1000), strings.Repeat("ab", 500),
	strings.Repeat("9", 100), strings.Repeat("!", 300), strings.Repeat("é", 200), strings.Repeat("日", 300), strings.Repeat("\t", 70),
	strings.Repeat("QmFzZTY0IGVuY29kZWQgZGF0YQ==", 40), strings.Repeat("deadbeef", 64), strings.Repeat("x", 63) + "y", strings.Repeat("x", 64) + "y",
}

func TestCountMatchesLibrary(t *testing.T) {
	for _, enc := range encodings {
		lib, ours := libraryCodec(t, enc), newBPE(enc)
		check := func(what, s string) {
			t.Helper()
			ours.Count("") // open the vocabulary
			if got, want := ours.count(s), libraryCount(t, lib, s); got != want {
				t.Errorf("%s %s %q: %d tokens, library %d", enc.name, what, clip(s), got, want)
			}
		}
		for _, s := range tricky {
			check("tricky", s)
		}
		// Real text: this repository's source and documents, file by file.
		total := 0
		root := filepath.Join("..", "..")
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") || total > 600<<10 {
				return filepath.SkipDir
			}
			if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
				return nil
			}
			b, err := os.ReadFile(path)
			if err == nil && utf8.Valid(b) {
				total += len(b)
				check(path, string(b))
			}
			return nil
		})
		if total < 100<<10 {
			t.Fatalf("only %d bytes of the repository's text compared", total)
		}
		// Random strings over an alphabet of the characters the branches
		// turn on.
		rng := rand.New(rand.NewPCG(1, 2))
		for range 3000 {
			check("random", randomText(rng, 1+rng.IntN(40)))
		}
	}
}

var alphabet = []string{
	"a", "Z", "é", "É", "ǅ", "ʰ", "ا", "日", "\u0301", "1", "٣", "½", " ", "  ", "\t", "\n", "\r", "\u00a0", "\u2003", "\u0085",
	"'", "s", "S", "t", "re", "VE", "m", "ll", "LL", "d", "ſ", "/", "!", "(", "-", "_", ".", "😀", "\x00", "\xff", "\xe2\x82", "x",
}

func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func FuzzCountMatchesLibrary(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	libs := make([]tokenizer.Codec, len(encodings))
	ours := make([]*BPE, len(encodings))
	for i, enc := range encodings {
		libs[i], ours[i] = libraryCodec(f, enc), newBPE(enc)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, enc := range encodings {
			if got, want := ours[i].Count(s), libraryCount(t, libs[i], s); got != want {
				t.Fatalf("%s %q: %d tokens, library %d", enc.name, s, got, want)
			}
		}
	})
}

// The embedded tables are exactly what vocabgen makes of the library's
// vocabularies today: every rank's bytes, and the layout and hash package
// vocab reads.
func TestVocabFilesAreGenerated(t *testing.T) {
	for _, enc := range encodings {
		lib := libraryCodec(t, enc)
		var toks []string
		for id := uint(0); ; id++ {
			s, err := lib.Decode([]uint{id})
			if err != nil {
				break
			}
			toks = append(toks, s)
		}
		want, err := vocab.Build(toks)
		if err != nil {
			t.Fatal(err)
		}
		if string(want) != enc.file {
			t.Errorf("%s.vocab is stale (%d bytes, generated %d): run go generate ./memory/tokens", enc.name, len(enc.file), len(want))
		}
	}
}

// Command vocabgen writes the compact vocabularies memory/tokens embeds
// (o200k_base.vocab, cl100k_base.vocab; layout in package vocab) from the
// tiktoken vocabularies compiled into github.com/tiktoken-go/tokenizer:
// offline, the library carries them. Run it with `go generate
// ./memory/tokens`; TestVocabFilesAreGenerated fails when the files and
// the library (or package vocab's layout or hash) disagree.
package main

import (
	"encoding/binary"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tiktoken-go/tokenizer"

	"polly/memory/tokens/internal/vocab"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for _, enc := range []tokenizer.Encoding{tokenizer.O200kBase, tokenizer.Cl100kBase} {
		if err := write(enc, filepath.Join(dir, string(enc)+".vocab")); err != nil {
			log.Fatalf("%s: %v", enc, err)
		}
	}
}

func write(enc tokenizer.Encoding, path string) error {
	codec, err := tokenizer.Get(enc)
	if err != nil {
		return err
	}
	// The ranks are dense from 0; an ID the codec cannot decode is a gap
	// (the special tokens sit past the last rank and are not merged).
	var tokens []string
	for id := uint(0); ; id++ {
		s, err := codec.Decode([]uint{id})
		if err != nil {
			break
		}
		tokens = append(tokens, s)
	}
	b, err := vocab.Build(tokens)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d ranks, %d bytes (%d-slot table)\n", path, len(tokens), len(b), 1<<binary.LittleEndian.Uint32(b[4:]))
	return nil
}

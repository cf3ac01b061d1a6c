// Command vocabgen writes the compact vocabularies memory/tokens embeds,
// from the tiktoken vocabularies compiled into
// github.com/tiktoken-go/tokenizer (offline: the library carries them).
//
// A file is one read-only table that is used in place, with nothing to
// build at run time (all integers little-endian uint32):
//
//	n, bits             the number of ranks; the hash table has 1<<bits slots
//	offsets [n+1]       where rank r's bytes are in the arena: [off[r], off[r+1])
//	slots   [1<<bits]   open addressing, linear probing: empty, or rank | tag<<rankBits
//	arena               every token's bytes, in rank order
//
// The layout and the hash are package vocab's: a change there needs `go generate`.
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

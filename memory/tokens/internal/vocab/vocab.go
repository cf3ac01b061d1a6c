// Package vocab is the compact form of a BPE vocabulary: one read-only
// byte string (embedded in the binary) holding the tokens, their ranks and
// a hash table over them, used in place. Looking a piece up costs no
// allocation, and opening a table costs nothing but checking its header,
// so the pages a process touches are file-backed and shared, not heap.
//
// Layout (little-endian uint32s, then bytes):
//
//	n, bits            n ranks; the hash table has 1<<bits slots
//	offsets [n+1]      rank r's bytes are arena[offsets[r]:offsets[r+1]]
//	slots [1<<bits]    open addressing, linear probing: empty, or rank | tag<<RankBits
//	arena              every token's bytes, in rank order
package vocab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// RankBits is how many bits of a slot hold the rank; the rest hold a tag
// (more bits of the hash) that rejects most wrong slots without comparing
// bytes.
const RankBits = 18

const (
	maxRanks = 1 << RankBits
	rankMask = maxRanks - 1
	empty    = ^uint32(0)
	header   = 8
)

// Table is an opened vocabulary.
type Table struct {
	n       int
	shift   uint // 64 - bits: a hash's top bits pick its first slot
	mask    uint32
	offsets string
	slots   string
	arena   string
}

// Open checks the layout of a vocabulary file and returns a table that
// reads it in place.
func Open(file string) (*Table, error) {
	if len(file) < header {
		return nil, errors.New("vocab: file too short")
	}
	n, b := int(u32(file, 0)), uint(u32(file, 4))
	if n <= 0 || n > maxRanks || b < 1 || b > 30 || 1<<b < n {
		return nil, fmt.Errorf("vocab: bad header (n=%d bits=%d)", n, b)
	}
	offEnd := header + 4*(n+1)
	slotEnd := offEnd + 4<<b
	if len(file) < slotEnd {
		return nil, errors.New("vocab: file truncated")
	}
	t := &Table{n: n, shift: 64 - b, mask: 1<<b - 1, offsets: file[header:offEnd], slots: file[offEnd:slotEnd], arena: file[slotEnd:]}
	if int(t.offset(n)) != len(t.arena) {
		return nil, fmt.Errorf("vocab: arena is %d bytes, offsets say %d", len(t.arena), t.offset(n))
	}
	return t, nil
}

// Len is the number of ranks.
func (t *Table) Len() int { return t.n }

// Token is the bytes of rank r ("" for a gap).
func (t *Table) Token(r int) string { return t.arena[t.offset(r):t.offset(r+1)] }

// Rank looks a piece up.
func (t *Table) Rank(piece string) (int, bool) {
	i, tag := t.place(Hash(piece))
	for ; ; i = (i + 1) & t.mask {
		s := u32(t.slots, 4*int(i))
		if s == empty {
			return 0, false
		}
		if s>>RankBits == tag {
			r := int(s & rankMask)
			if t.Token(r) == piece {
				return r, true
			}
		}
	}
}

// place is a hash's first slot (its top bits) and its tag (the bits just
// below).
func (t *Table) place(h uint64) (slot, tag uint32) {
	return uint32(h>>t.shift) & t.mask, uint32(h>>(t.shift-(32-RankBits))) & (1<<(32-RankBits) - 1)
}

func (t *Table) offset(r int) uint32 { return u32(t.offsets, 4*r) }

// Build lays out a vocabulary whose rank r is tokens[r] ("" for a gap),
// with the table at most 80% full (the tags keep the probes cheap).
func Build(tokens []string) ([]byte, error) {
	n := len(tokens)
	if n == 0 || n > maxRanks {
		return nil, fmt.Errorf("vocab: %d ranks (1..%d)", n, maxRanks)
	}
	b := uint(bits.Len(uint(n)))
	for n > 1<<b*4/5 {
		b++
	}
	size := 0
	for _, tok := range tokens {
		size += len(tok)
	}
	out := make([]byte, header+4*(n+1)+4<<b, header+4*(n+1)+4<<b+size)
	binary.LittleEndian.PutUint32(out, uint32(n))
	binary.LittleEndian.PutUint32(out[4:], uint32(b))
	offsets, slots := out[header:header+4*(n+1)], out[header+4*(n+1):]
	for i := range slots {
		slots[i] = 0xff
	}
	off := 0
	for r, tok := range tokens {
		binary.LittleEndian.PutUint32(offsets[4*r:], uint32(off))
		out = append(out, tok...)
		off += len(tok)
	}
	binary.LittleEndian.PutUint32(offsets[4*n:], uint32(off))
	t, err := Open(string(out))
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, n)
	for r, tok := range tokens {
		if tok == "" {
			continue
		}
		if seen[tok] {
			return nil, fmt.Errorf("vocab: token %q appears twice", tok)
		}
		seen[tok] = true
		i, tag := t.place(Hash(tok))
		for binary.LittleEndian.Uint32(slots[4*i:]) != empty {
			i = (i + 1) & t.mask
		}
		binary.LittleEndian.PutUint32(slots[4*i:], uint32(r)|tag<<RankBits)
	}
	return out, nil
}

// Hash is FNV-1a over the bytes, then a final mix so the top bits (which
// pick the slot) depend on every byte.
func Hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	return h
}

func u32(s string, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

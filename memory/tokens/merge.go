package tokens

import "polly/memory/tokens/internal/vocab"

// Byte-pair merging, counted: a piece starts as single bytes and the
// adjacent pair whose joined bytes have the lowest rank merges first (the
// leftmost of equal ranks), until no pair is in the vocabulary. Only the
// number of parts left is needed, so nothing is allocated for a piece up
// to scanMax bytes; longer ones use a heap in the caller's scratch.

const noRank = ^uint32(0)

// scanMax is the longest piece merged by rescanning all pairs per merge
// (O(n²), fastest for the short pieces text is made of).
const scanMax = 64

// merger holds the scratch of the heap merge, reused across one text's
// long pieces.
type merger struct {
	v     *vocab.Table
	cache *pieceCache // nil: none
	nodes []mergeNode
	heap  []mergeCandidate
}

// pieceCache holds the counts of recently counted short pieces, one per
// slot (the newest wins). Text repeats its pieces — code its keywords,
// identifiers and indentation — and a vocabulary lookup touches three
// places of a table of megabytes, each likely a cache miss, where the
// slot of a cached piece is in 128 KB.
type pieceCache [cacheSlots]cachedPiece

const (
	cacheBits  = 12
	cacheSlots = 1 << cacheBits
	cachedMax  = 30 // longer pieces are not cached
)

type cachedPiece struct {
	n, count uint8 // n: the piece's length, 0 for an empty slot
	b        [cachedMax]byte
}

// count is the number of tokens piece encodes to.
func (m *merger) count(piece string) int {
	if len(piece) <= 1 {
		return len(piece)
	}
	if m.cache == nil || len(piece) > cachedMax {
		return m.countPiece(piece)
	}
	e := &m.cache[vocab.Hash(piece)>>(64-cacheBits)]
	if int(e.n) == len(piece) && string(e.b[:e.n]) == piece {
		return int(e.count)
	}
	n := m.countPiece(piece)
	e.n, e.count = uint8(len(piece)), uint8(n)
	copy(e.b[:], piece)
	return n
}

// countPiece counts a piece with the vocabulary.
func (m *merger) countPiece(piece string) int {
	if _, ok := m.v.Rank(piece); ok {
		return 1
	}
	if len(piece) <= scanMax {
		return m.countScan(piece)
	}
	return m.countHeap(piece)
}

func (m *merger) rank(s string) uint32 {
	if r, ok := m.v.Rank(s); ok {
		return uint32(r)
	}
	return noRank
}

func (m *merger) countScan(piece string) int {
	// starts[k] is where part k begins; ranks[k] the rank of part k
	// joined with part k+1. starts[parts] == len(piece).
	var starts [scanMax + 1]uint8
	var ranks [scanMax]uint32
	parts := len(piece)
	for k := 0; k <= parts; k++ {
		starts[k] = uint8(k)
	}
	pairRank := func(k int) uint32 {
		if k+1 >= parts {
			return noRank
		}
		return m.rank(piece[starts[k]:starts[k+2]])
	}
	for k := 0; k < parts; k++ {
		ranks[k] = pairRank(k)
	}
	for parts > 1 {
		best, at := noRank, -1
		for k := 0; k < parts-1; k++ {
			if ranks[k] < best {
				best, at = ranks[k], k
			}
		}
		if at < 0 {
			break
		}
		// Part at+1 joins part at.
		copy(starts[at+1:parts], starts[at+2:parts+1])
		copy(ranks[at+1:parts-1], ranks[at+2:parts])
		parts--
		ranks[at] = pairRank(at)
		if at > 0 {
			ranks[at-1] = pairRank(at - 1)
		}
	}
	return parts
}

// mergeNode is one part in the heap merge's linked list: the part starts
// at its index; rank is that of it joined with the next part.
type mergeNode struct {
	prev, next int32
	rank       uint32
}

type mergeCandidate struct {
	rank uint32
	at   int32
}

// countHeap merges with a min-heap of candidate pairs (rank, then
// position), O(n log n) for long pieces; candidates whose part changed
// since are skipped when they come up.
func (m *merger) countHeap(piece string) int {
	n := int32(len(piece))
	if cap(m.nodes) < int(n) {
		m.nodes = make([]mergeNode, 0, n)
		m.heap = make([]mergeCandidate, 0, n)
	}
	m.nodes = m.nodes[:0]
	for k := int32(0); k < n; k++ {
		m.nodes = append(m.nodes, mergeNode{prev: k - 1, next: k + 1, rank: noRank})
	}
	m.nodes[n-1].next = n // n: the end of the piece
	nodes := m.nodes
	pairRank := func(k int32) uint32 {
		j := nodes[k].next
		if j >= n {
			return noRank
		}
		end := nodes[j].next
		return m.rank(piece[k:end])
	}
	m.heap = m.heap[:0]
	for k := int32(0); k+1 < n; k++ {
		if r := pairRank(k); r != noRank {
			nodes[k].rank = r
			m.heap = append(m.heap, mergeCandidate{r, k})
		}
	}
	for k := len(m.heap)/2 - 1; k >= 0; k-- {
		m.down(k)
	}
	parts := int(n)
	for len(m.heap) > 0 {
		top := m.heap[0]
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
		m.down(0)
		k := top.at
		if nodes[k].rank != top.rank || nodes[k].next >= n {
			continue // stale: part k changed after this was pushed
		}
		j := nodes[k].next
		nodes[k].next = nodes[j].next
		if nodes[j].next < n {
			nodes[nodes[j].next].prev = k
		}
		nodes[j].rank = noRank
		parts--
		for _, b := range [2]int32{k, nodes[k].prev} {
			if b < 0 {
				continue
			}
			nodes[b].rank = pairRank(b)
			if nodes[b].rank != noRank {
				m.push(mergeCandidate{nodes[b].rank, b})
			}
		}
	}
	return parts
}

func (m *merger) less(a, b int) bool {
	h := m.heap
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].at < h[b].at
}

func (m *merger) push(c mergeCandidate) {
	m.heap = append(m.heap, c)
	for k := len(m.heap) - 1; k > 0; {
		parent := (k - 1) / 2
		if !m.less(k, parent) {
			return
		}
		m.heap[k], m.heap[parent] = m.heap[parent], m.heap[k]
		k = parent
	}
}

func (m *merger) down(k int) {
	for {
		c := 2*k + 1
		if c >= len(m.heap) {
			return
		}
		if c+1 < len(m.heap) && m.less(c+1, c) {
			c++
		}
		if !m.less(c, k) {
			return
		}
		m.heap[k], m.heap[c] = m.heap[c], m.heap[k]
		k = c
	}
}

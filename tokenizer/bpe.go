package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxID bounds the ids a file may give, so that a hostile file cannot make
// the id table huge.
const maxID = 1 << 24

// bpe is the byte-pair-encoding model: a word starts as its characters
// (or, with byte fallback, the <0xXX> tokens of a character the vocabulary
// lacks), and the adjacent pair of lowest merge rank is merged, leftmost
// first among equals, until no pair has a merge.
type bpe struct {
	vocab        map[string]int
	merges       map[uint64]merge // by pairKey(left, right)
	unk          int              // the unknown token's id, or -1
	fuseUnk      bool             // consecutive unknown characters are one unknown token
	byteFallback bool             // characters the vocabulary lacks are spelled <0xXX>
	ignoreMerges bool             // a word in the vocabulary is its own token
	byteIDs      [256]int         // ids of <0x00>...<0xFF>, -1 where absent

	mu    sync.Mutex
	cache map[string][]int // words encoded so far
}

// merge is the result of merging a pair: its rank (lower merges first) and
// the id of the merged token.
type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

const (
	cacheWords   = 10000 // words cached at most
	cacheMaxWord = 256   // bytes of the longest word cached
)

// bpeJSON is the BPE model of tokenizer.json.
type bpeJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// parseModel reads a tokenizer.json "model"; only BPE is supported.
func parseModel(raw json.RawMessage) (*bpe, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("no model")
	}
	typ, err := typeOf(raw)
	if err != nil {
		return nil, err
	}
	if typ != "BPE" {
		return nil, fmt.Errorf("unsupported type %q (only BPE)", typ)
	}
	var v bpeJSON
	if err := decodeStrict(raw, &v); err != nil {
		return nil, fmt.Errorf("BPE: %w", err)
	}
	if v.Dropout != nil && *v.Dropout != 0 {
		return nil, fmt.Errorf("BPE: unsupported dropout %v", *v.Dropout)
	}
	if v.ContinuingSubwordPrefix != nil && *v.ContinuingSubwordPrefix != "" {
		return nil, fmt.Errorf("BPE: unsupported continuing_subword_prefix %q", *v.ContinuingSubwordPrefix)
	}
	if v.EndOfWordSuffix != nil && *v.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("BPE: unsupported end_of_word_suffix %q", *v.EndOfWordSuffix)
	}
	if v.Vocab == nil {
		return nil, fmt.Errorf("BPE: no vocab")
	}
	m := &bpe{
		unk:          -1,
		fuseUnk:      v.FuseUnk,
		byteFallback: v.ByteFallback,
		ignoreMerges: v.IgnoreMerges,
		cache:        make(map[string][]int),
	}
	for tok, id := range v.Vocab {
		if id < 0 || id >= maxID {
			return nil, fmt.Errorf("BPE: vocab: token %q has id %d, outside [0, %d)", tok, id, maxID)
		}
	}
	m.vocab = v.Vocab
	if v.UnkToken != nil {
		id, ok := m.vocab[*v.UnkToken]
		if !ok {
			return nil, fmt.Errorf("BPE: unk_token %q is not in the vocabulary", *v.UnkToken)
		}
		m.unk = id
	}
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = id
		}
	}
	if err := m.parseMerges(v.Merges); err != nil {
		return nil, fmt.Errorf("BPE: %w", err)
	}
	return m, nil
}

// parseMerges reads the merges, in order of rank: "a b" strings (lines
// starting with "#version" skipped, as in a merges.txt) or ["a", "b"]
// pairs, one form for all. Both halves and their concatenation must be in
// the vocabulary. A pair given twice keeps its last rank, as in Hugging
// Face's map.
func (m *bpe) parseMerges(raw json.RawMessage) error {
	var pairs [][2]string
	var lines []string
	if isNull(raw) {
		return fmt.Errorf("no merges")
	}
	if err := json.Unmarshal(raw, &lines); err != nil {
		lines = nil
		var perr error
		if pairs, perr = parsePairs(raw); perr != nil {
			return fmt.Errorf(`merges: neither all "a b" strings (%v) nor all [a, b] pairs (%v)`, err, perr)
		}
	}
	for i, s := range lines {
		if strings.HasPrefix(s, "#version") {
			continue
		}
		a, b, ok := strings.Cut(s, " ")
		if !ok || strings.Contains(b, " ") {
			return fmt.Errorf("merges[%d]: %q is not two tokens separated by a space", i, s)
		}
		pairs = append(pairs, [2]string{a, b})
	}
	m.merges = make(map[uint64]merge, len(pairs))
	for i, p := range pairs {
		a, b := p[0], p[1]
		ida, oka := m.vocab[a]
		idb, okb := m.vocab[b]
		idm, okm := m.vocab[a+b]
		switch {
		case !oka:
			return fmt.Errorf("merges[%d] (%q, %q): %q is not in the vocabulary", i, a, b, a)
		case !okb:
			return fmt.Errorf("merges[%d] (%q, %q): %q is not in the vocabulary", i, a, b, b)
		case !okm:
			return fmt.Errorf("merges[%d] (%q, %q): the merged token %q is not in the vocabulary", i, a, b, a+b)
		}
		m.merges[pairKey(int32(ida), int32(idb))] = merge{rank: int32(i), id: int32(idm)}
	}
	return nil
}

// parsePairs reads merges given as pairs.
func parsePairs(raw json.RawMessage) ([][2]string, error) {
	var list [][]string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	pairs := make([][2]string, len(list))
	for i, p := range list {
		if len(p) != 2 {
			return nil, fmt.Errorf("merges[%d]: %q is not a pair", i, p)
		}
		pairs[i] = [2]string{p[0], p[1]}
	}
	return pairs, nil
}

// symbol is a token of a word being merged, in a list linked by index.
type symbol struct {
	id         int32
	prev, next int32
	size       int32 // bytes of the word it covers; 0 once merged into its left neighbour
}

// candidate is a possible merge of the symbol at pos with its next.
type candidate struct{ rank, pos, id int32 }

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || c.rank == d.rank && c.pos < d.pos
}

// encode appends the ids of word to dst.
func (m *bpe) encode(word string, dst []int) []int {
	if word == "" {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[word]; ok {
			return append(dst, id)
		}
	}
	m.mu.Lock()
	ids, ok := m.cache[word]
	m.mu.Unlock()
	if ok {
		return append(dst, ids...)
	}
	syms := m.symbols(word)
	m.mergeAll(syms)
	start := len(dst)
	for _, s := range syms {
		if s.size > 0 {
			dst = append(dst, int(s.id))
		}
	}
	if len(word) < cacheMaxWord {
		m.mu.Lock()
		if len(m.cache) < cacheWords {
			// The word is a slice of the text: the key must not keep
			// the whole of it.
			m.cache[strings.Clone(word)] = append([]int(nil), dst[start:]...)
		}
		m.mu.Unlock()
	}
	return dst
}

// symbols splits word into its characters' tokens. A character the
// vocabulary lacks becomes its bytes' <0xXX> tokens with byte fallback
// (when the vocabulary has them all), else the unknown token (runs of them
// one token with fuse_unk), else nothing, as in Hugging Face's BPE.
func (m *bpe) symbols(word string) []symbol {
	syms := make([]symbol, 0, len(word))
	add := func(id, size int) {
		n := int32(len(syms))
		next := n + 1
		syms = append(syms, symbol{id: int32(id), prev: n - 1, next: next, size: int32(size)})
	}
	unkSize := 0 // bytes of the pending unknown token
	flushUnk := func() {
		if unkSize > 0 {
			add(m.unk, unkSize)
			unkSize = 0
		}
	}
	for i := 0; i < len(word); {
		_, size := utf8.DecodeRuneInString(word[i:])
		c := word[i : i+size]
		i += size
		if id, ok := m.vocab[c]; ok {
			flushUnk()
			add(id, size)
			continue
		}
		if m.byteFallback && m.hasBytes(c) {
			// Hugging Face keeps a pending unknown token pending across
			// byte-fallback characters.
			for k := 0; k < len(c); k++ {
				add(m.byteIDs[c[k]], 1)
			}
			continue
		}
		if m.unk < 0 {
			continue
		}
		if unkSize > 0 && !m.fuseUnk {
			flushUnk()
		}
		unkSize += size
	}
	flushUnk()
	if n := len(syms); n > 0 {
		syms[n-1].next = -1
	}
	return syms
}

func (m *bpe) hasBytes(c string) bool {
	for k := 0; k < len(c); k++ {
		if m.byteIDs[c[k]] < 0 {
			return false
		}
	}
	return true
}

// mergeAll merges the symbols' pairs by rank, with a heap of candidates;
// a candidate whose pair has changed since it was pushed is dropped when
// popped.
func (m *bpe) mergeAll(syms []symbol) {
	var h []candidate
	push := func(c candidate) {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !h[i].less(h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
	}
	pop := func() candidate {
		top := h[0]
		n := len(h) - 1
		h[0] = h[n]
		h = h[:n]
		for i := 0; ; {
			l, r, min := 2*i+1, 2*i+2, i
			if l < n && h[l].less(h[min]) {
				min = l
			}
			if r < n && h[r].less(h[min]) {
				min = r
			}
			if min == i {
				break
			}
			h[i], h[min] = h[min], h[i]
			i = min
		}
		return top
	}
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			push(candidate{rank: mg.rank, pos: int32(i), id: mg.id})
		}
	}
	for len(h) > 0 {
		c := pop()
		s := &syms[c.pos]
		if s.size == 0 || s.next < 0 {
			continue
		}
		ri := s.next
		right := syms[ri]
		if mg, ok := m.merges[pairKey(s.id, right.id)]; !ok || mg.id != c.id {
			continue // stale: the pair has changed since
		}
		s.id = c.id
		s.size += right.size
		s.next = right.next
		syms[ri].size = 0
		if right.next >= 0 {
			syms[right.next].prev = c.pos
		}
		if s.prev >= 0 {
			p := syms[s.prev]
			if mg, ok := m.merges[pairKey(p.id, s.id)]; ok {
				push(candidate{rank: mg.rank, pos: s.prev, id: mg.id})
			}
		}
		if s.next >= 0 {
			if mg, ok := m.merges[pairKey(s.id, syms[s.next].id)]; ok {
				push(candidate{rank: mg.rank, pos: c.pos, id: mg.id})
			}
		}
	}
}

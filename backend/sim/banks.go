package sim

import "tec/backend/kir"

// This file counts the shared-memory wavefronts of the warp-level
// shared-memory instructions, with the hardware's rule (NVIDIA's
// l1tex__data_pipe_lsu_wavefronts_mem_shared and
// l1tex__data_bank_conflicts_pipe_lsu_mem_shared): shared memory is 32
// banks of 4-byte words, word w in bank w mod 32, and one wavefront serves
// at most one distinct word of each bank (lanes reading the same word share
// it). A warp's accesses are served in phases: all 32 lanes at once for
// accesses of up to 4 bytes, half-warps for 8 bytes, quarter-warps (lanes
// 8q to 8q+7) for 16-byte accesses (VecCopy's shared side, CopyAsync's
// shared write), and one 8×16-byte matrix at a time for an LdMatrix (the
// rows that lanes 8j to 8j+7 give). A phase takes as many wavefronts as the
// most distinct words any one bank must serve; ideally one. Shared atomics
// are not counted.

// Banks are the shared-memory wavefronts of a kernel's warp-level shared
// accesses and how many of them are conflicts: wavefronts beyond one per
// phase, the ideal (see the package comment's rule).
type Banks struct {
	Wavefronts int64
	Conflicts  int64
}

// Add adds d to c.
func (c *Banks) Add(d Banks) {
	c.Wavefronts += d.Wavefronts
	c.Conflicts += d.Conflicts
}

// The geometry of shared memory.
const (
	bankCount = 32
	wordBytes = 4
)

// phase collects the 4-byte words one phase of a warp's access touches.
type phase struct {
	words [kir.WarpSize]int64 // 32 lanes of up to 4 bytes, 8 of 16, 16 of 8
	n     int
}

// add records the bytes [at, at+size) of shared memory.
func (p *phase) add(at, size int64) {
	for w := at / wordBytes; w <= (at+size-1)/wordBytes; w++ {
		p.words[p.n] = w
		p.n++
	}
}

// wavefronts returns the wavefronts that serve the phase's words: the most
// distinct words of one bank. It sorts the words.
func (p *phase) wavefronts() int64 {
	ws := p.words[:p.n]
	for i := 1; i < len(ws); i++ { // insertion sort: the words are mostly in order
		for j := i; j > 0 && ws[j] < ws[j-1]; j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
	var per [bankCount]int64
	var most int64
	for i, w := range ws {
		if i > 0 && w == ws[i-1] {
			continue
		}
		bank := w % bankCount
		per[bank]++
		most = max(most, per[bank])
	}
	return most
}

// flush adds the phase's wavefronts to c, if it touched anything, and
// empties it.
func (p *phase) flush(c *Banks) {
	if p.n == 0 {
		return
	}
	w := p.wavefronts()
	c.Wavefronts += w
	c.Conflicts += w - 1
	p.n = 0
}

// countShared counts the wavefronts of an access by the active lanes act
// (in ascending order) to the elements ix[lane] of shared array slot, of
// elements of size bytes each, width elements per lane (a 16-byte vector
// access of VecLen elements, or 1).
func (b *block) countShared(slot int, act []int32, ix []float64, size, width int) {
	c := &b.banks[slot]
	bytes := size * width
	per := kir.WarpSize // lanes per phase
	if bytes > wordBytes {
		per = kir.WarpSize * wordBytes / bytes
	}
	var ph phase
	cur := int32(-1)
	for _, l := range act {
		if q := l / int32(per); q != cur {
			ph.flush(c)
			cur = q
		}
		ph.add(int64(ix[l])*int64(size), int64(bytes))
	}
	ph.flush(c)
}

// countLdMatrix counts the wavefronts of an LdMatrix of num matrices from
// shared array slot by the warp of lanes base to base+31, whose row
// addresses are ix[base+r] (16 bytes of 2-byte elements each): one phase
// per matrix.
func (b *block) countLdMatrix(slot, base, num int, ix []float64) {
	c := &b.banks[slot]
	var ph phase
	for j := range num {
		for r := range 8 {
			ph.add(int64(ix[base+8*j+r])*2, kir.VecBytes)
		}
		ph.flush(c)
	}
}

// addBanks adds the block's counts, by shared array, to st.
func (st *KernelStats) addBanks(k *kir.Kernel, bs []Banks) {
	for i, c := range bs {
		if c == (Banks{}) {
			continue
		}
		if st.ArrayBanks == nil {
			st.ArrayBanks = map[string]Banks{}
		}
		a := st.ArrayBanks[k.Shared[i].Name]
		a.Add(c)
		st.ArrayBanks[k.Shared[i].Name] = a
		st.Banks.Add(c)
	}
}

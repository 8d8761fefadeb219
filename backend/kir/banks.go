package kir

// Banks are shared-memory wavefronts, as the simulator counts them and
// the static report predicts them, and how many of them are bank
// conflicts: wavefronts beyond the ideal of one per phase.
//
// Shared memory is 32 banks of 4-byte words, word w in bank w mod 32, and
// one wavefront serves at most one distinct word of each bank (lanes that
// access the same word share it). A warp's access is served in phases: all
// 32 lanes at once for accesses of up to 4 bytes, half-warps for 8 bytes,
// quarter-warps (lanes 8q to 8q+7) for 16-byte accesses (a VecCopy's
// shared side, a CopyAsync's shared write), and one 8×16-byte matrix at a
// time for an LdMatrix (the rows that lanes 8j to 8j+7 give). A phase with
// active lanes takes as many wavefronts as the most distinct words one
// bank must serve. These are the figures of the profiler's
// l1tex__data_pipe_lsu_wavefronts_mem_shared and
// l1tex__data_bank_conflicts_pipe_lsu_mem_shared. Shared atomics are not
// counted.
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

// PhaseLanes returns the lanes of a warp that one phase of a shared-memory
// access of bytes bytes per lane serves.
func PhaseLanes(bytes int) int {
	if bytes <= wordBytes {
		return WarpSize
	}
	return WarpSize * wordBytes / bytes
}

// BankPhase collects the 4-byte words that one phase of a warp's
// shared-memory access touches; the zero value is empty.
type BankPhase struct {
	words [WarpSize]int64 // 32 lanes of up to 4 bytes, 16 of 8, 8 of 16
	n     int
}

// Add records the bytes [at, at+size) of shared memory.
func (p *BankPhase) Add(at, size int64) {
	for w := at / wordBytes; w <= (at+size-1)/wordBytes; w++ {
		p.words[p.n] = w
		p.n++
	}
}

// Flush adds the phase's wavefronts to c, if it touched anything, and
// empties it.
func (p *BankPhase) Flush(c *Banks) {
	if p.n == 0 {
		return
	}
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
	c.Wavefronts += most
	c.Conflicts += most - 1
	p.n = 0
}

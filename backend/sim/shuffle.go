package sim

import (
	"math/bits"

	"tec/backend/kir"
)

// maxWarps is the number of warps of the largest block.
const maxWarps = kir.MaxBlockThreads / kir.WarpSize

// shuffle compiles a warp shuffle. The lanes that evaluate it together are
// the active lanes act; for each warp, the membermask of every one of them
// must be the same and must be exactly the warp's active lanes (a lane of the
// mask that is not there would hang the warp on a GPU, a lane there that is
// not in the mask is undefined behaviour), and a lane must not read one
// outside the mask, whose value would be undefined. Each is a fault.
func (p *program) shuffle(e *kir.Shuffle) vfn {
	x, mask := p.expr(e.X), p.expr(e.Mask)
	out := p.newScratch()
	mode, offset, width := e.Mode, e.Offset, e.Width
	return func(b *block, act []int32) []float64 {
		xv, mv, o := x(b, act), mask(b, act), b.scratch[out]
		var active, masks [maxWarps]uint32
		var seen [maxWarps]bool
		for _, l := range act {
			w, lane := l/kir.WarpSize, l%kir.WarpSize
			active[w] |= 1 << lane
			m := uint32(int32(mv[l]))
			if seen[w] && m != masks[w] {
				b.faultf(l, "shuffle with mask %#08x in warp %d, whose lane %d gave %#08x", m, w, firstLane(active[w]&^(1<<lane)), masks[w])
			}
			seen[w], masks[w] = true, m
		}
		for w := range active {
			if !seen[w] {
				continue
			}
			if missing := masks[w] &^ active[w]; missing != 0 {
				b.faultf(int32(w*kir.WarpSize+firstLane(active[w])), "shuffle with mask %#08x in warp %d reached only by lanes %#08x: lane %d of the mask is missing",
					masks[w], w, active[w], firstLane(missing))
			}
			if extra := active[w] &^ masks[w]; extra != 0 {
				b.faultf(int32(w*kir.WarpSize+firstLane(extra)), "shuffle with mask %#08x in warp %d executed by lane %d, which is not in the mask",
					masks[w], w, firstLane(extra))
			}
		}
		for _, l := range act {
			w, lane := l/kir.WarpSize, int(l%kir.WarpSize)
			src, _ := kir.ShuffleSource(mode, lane, offset, width)
			if masks[w]&(1<<src) == 0 {
				b.faultf(l, "shuffle.%s reads lane %d of warp %d, which is not in the mask %#08x: the value is undefined", mode, src, w, masks[w])
			}
			o[l] = xv[int(w)*kir.WarpSize+src]
		}
		b.counts.Shuffles += int64(len(act))
		return o
	}
}

// firstLane returns the lowest lane set in a lane mask.
func firstLane(m uint32) int { return bits.TrailingZeros32(m) }

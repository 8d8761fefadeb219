package partition

import (
	"tec/schedule"
)

// maskEnumLimit bounds the tiles a schedule enumerates to count the ones
// its mask skips; a larger stage is priced as if it skipped none.
const maskEnumLimit = 1 << 20

// skipped counts the tiles of the contraction schedule s that its mask
// removes, the output points those tiles hold, and the factor elements
// they do not load (their rows of X and columns of Y over all of K).
func (s stage) skipped() (tiles, points, factors int64) {
	mk := s.Mask
	if mk == nil || s.MatVec != nil || s.Resident != nil {
		return 0, 0, 0
	}
	mt, nt := ceilDiv(s.M, s.TileM), ceilDiv(s.N, s.TileN)
	batches, reps := s.Batch, int64(1)
	if !mk.UsesBatch() {
		batches, reps = 1, int64(s.Batch)
	}
	if int64(batches)*int64(mt)*int64(nt) > maskEnumLimit {
		return 0, 0, 0
	}
	for b := range batches {
		for mi := range mt {
			for ni := range nt {
				r := schedule.TileRange{MLo: mi * s.TileM, MHi: min(s.M, (mi+1)*s.TileM) - 1, NLo: ni * s.TileN, NHi: min(s.N, (ni+1)*s.TileN) - 1, B: b}
				if !mk.Dead(r) {
					continue
				}
				rows, cols := int64(r.MHi-r.MLo+1), int64(r.NHi-r.NLo+1)
				tiles += reps
				points += reps * rows * cols
				factors += reps * int64(s.K) * (rows + cols)
			}
		}
	}
	return tiles, points, factors
}

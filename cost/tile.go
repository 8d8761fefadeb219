package cost

import (
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// TileBytes returns what the tiles of contraction s load and store: each
// tile its rows of X and its columns of Y over all of K, elem bytes an
// element, and the out bytes of the output.
func TileBytes(s *schedule.Schedule, elem int, out int64) int64 {
	mt, nt := te.CeilDiv(s.M, s.TileM), te.CeilDiv(s.N, s.TileN)
	return int64(elem)*int64(s.Batch)*(int64(s.M)*int64(s.K)*int64(nt)+int64(s.K)*int64(s.N)*int64(mt)) + out
}

// MatVecBytes returns what the tiles of contraction d load and store under
// the matrix-vector tiling mv: the wide factor once, the narrow factor's
// rows once per tile, each at its own element size (bf16 weights are half
// the bytes of f32 ones), and the out bytes of the output.
func MatVecBytes(d contraction.Dims, mv *schedule.MatVec, out int64) int64 {
	rows, cols, wide, narrow := d.M, d.N, d.Y, d.X
	if mv.Wide == 0 {
		rows, cols, wide, narrow = d.N, d.M, d.X, d.Y
	}
	return int64(d.Batch)*(int64(ElemSize(wide))*int64(d.K)*int64(cols)+int64(ElemSize(narrow))*int64(rows)*int64(d.K)*int64(mv.NT)) + out
}

// ResidentBytes returns what the tiles of a weight-resident contraction d
// load and store (schedule.Resident): the rows of its other factor (rows
// of them) once per tile of its nt per batch entry, the share missed of
// its stationary factor (cols columns) that the weight cache does not
// keep, and the out bytes of the output.
func ResidentBytes(d contraction.Dims, rows, cols, nt int, missed float64, out int64) int64 {
	weights := 4 * int64(d.Batch) * int64(d.K) * int64(cols)
	acts := 4 * int64(d.Batch) * int64(rows) * int64(d.K) * int64(nt)
	return acts + int64(missed*float64(weights)) + out
}

// SkipMasked leaves out of p what the tiles that masked contraction s
// skips do not do: their products, from UnmaskedFLOPs, and the factor
// elements they do not load, elem bytes each, from bytes, what the stage
// requests with no tile skipped. It returns the tiles skipped
// (schedule.Schedule.Skipped).
func (p *Price) SkipMasked(s *schedule.Schedule, elem int, bytes int64) int {
	tiles, points, factors := Skipped(s)
	p.FLOPs = p.UnmaskedFLOPs - points*p.Products
	p.Bytes = bytes - int64(elem)*factors
	return int(tiles)
}

// ScaleK prices a stage whose k mask leaves live of its K where it was
// priced with was of them: its FLOPs and Bytes scale by live/was.
func (p *Price) ScaleK(live, was int) {
	p.FLOPs = p.FLOPs * int64(live) / int64(was)
	p.Bytes = p.Bytes * int64(live) / int64(was)
}

package partition

import "tec/te"

// TensorCoreType returns the type in which tensor cores multiply the
// operands X and Y of a contraction (as Factors splits it), and whether
// they can: te.F16 or te.BF16 where both are values of that type (loads of
// such tensors or casts to it, as the precision pass writes them under
// --precision f16 or bf16), te.F32 meaning TF32 where both are rounded to
// TF32 (round_tf32, under --precision tf32). A select between such a value
// and zero (a padded convolution) counts as the value. On either path the
// products are exact in f32, so a tensor-core contraction computes the
// same terms as the SIMT one.
func TensorCoreType(X, Y te.Expr) (te.DType, bool) {
	x, okx := operandType(X)
	y, oky := operandType(Y)
	if !okx || !oky || x != y {
		return 0, false
	}
	return x, true
}

func operandType(e te.Expr) (te.DType, bool) {
	switch e := e.(type) {
	case *te.Load:
		if e.Tensor.DType == te.F16 || e.Tensor.DType == te.BF16 {
			return e.Tensor.DType, true
		}
	case *te.Cast:
		if e.To == te.F16 || e.To == te.BF16 {
			return e.To, true
		}
	case *te.Unary:
		if e.Op == te.RoundTF32 {
			return te.F32, true
		}
	case *te.Select:
		if c, ok := e.Else.(*te.ConstExpr); ok && c.Value == 0 {
			return operandType(e.Then)
		}
		if c, ok := e.Then.(*te.ConstExpr); ok && c.Value == 0 {
			return operandType(e.Else)
		}
	}
	return 0, false
}

// TensorPeak returns the dense tensor-core rate for operands of type in
// (te.F16 or te.BF16; te.F32 meaning TF32), FLOP per second.
func (g GPU) TensorPeak(in te.DType) float64 {
	if in != te.F32 {
		return g.FP16Peak
	}
	if g.TF32Peak > 0 {
		return g.TF32Peak
	}
	return g.FP16Peak / 2
}

// The shape of a tensor-core contraction's blocks, as backend/lower
// builds them: TensorCoreWarps warps over a TensorCoreTile(M) ×
// TensorCoreTile(N) tile of outputs, staging TensorCoreTileK of the
// reduction at a time.
const (
	TensorCoreWarps = 4
	TensorCoreTileK = 32
)

// TensorCoreTile returns a tensor-core block's tile along an output
// extent n: 64, or 32 where n is at most 32.
func TensorCoreTile(n int) int {
	if n <= 32 {
		return 32
	}
	return 64
}

// TensorCoreFits reports whether a contraction of extents M, N, K with
// operands of type in (see TensorCoreType) is large enough for tensor
// cores: at least an MMA's 16 rows, two of its 8 columns and its k (16,
// or 8 for TF32).
func TensorCoreFits(in te.DType, M, N, K int) bool {
	k := 16
	if in == te.F32 {
		k = 8
	}
	return M >= 16 && N >= 16 && K >= k
}

// tensorCoreSync is the share of the tensor cores' rate a block keeps
// while it also stages its operands at every k step, with a barrier
// before and after the warps' MMAs (and, where the operands allow it, the
// next step's cp.async copies in flight meanwhile, which the model does
// not credit separately): a model parameter, to be measured.
const tensorCoreSync = 0.5

// unfusedTensorCores makes the schedule of contraction t, in a kernel of
// its own with blocks of at most threads threads, the tensor-core one
// that backend/lower.Unfused builds where it applies, and reports whether
// it did.
func (s *Schedule) unfusedTensorCores(t *te.Tensor, threads int) bool {
	if s.Kind != Contraction || threads < TensorCoreWarps*32 {
		return false
	}
	d, ok := ContractionDims(t)
	if !ok || d.Masked {
		return false // a masked contraction skips SIMT tiles (MaskedReduce)
	}
	in, ok := TensorCoreType(d.X, d.Y)
	if !ok || !TensorCoreFits(in, d.M, d.N, d.K) {
		return false
	}
	size := 2
	if in == te.F32 {
		size = 4
	}
	s.TensorCores, s.TensorIn = true, in
	s.MatVec = nil
	s.Threads = TensorCoreWarps * 32
	s.RegM, s.RegN = 1, 1
	s.TileM, s.TileN, s.TileK = TensorCoreTile(d.M), TensorCoreTile(d.N), TensorCoreTileK
	mt, nt := ceilDiv(d.M, s.TileM), ceilDiv(d.N, s.TileN)
	s.Tiles = s.Batch * mt * nt
	s.SharedBytes = size * (s.TileM*s.TileK + s.TileK*s.TileN)
	// A warp's accumulators (a quarter of the tile over 32 lanes), its
	// fragments and the indexes.
	s.RegsPerThread = 32 + s.TileM*s.TileN/4/32 + 16
	s.Bytes = int64(size)*int64(s.Batch)*(int64(s.M)*int64(s.K)*int64(nt)+int64(s.K)*int64(s.N)*int64(mt)) + t.Bytes()
	return true
}

// tensorCoreEfficiency is the fraction of the tensor cores' peak that a
// tensor-core schedule's tiles reach, a model: the share of the MMAs that
// compute outputs (not a tile's tail past M or N), times the warp tile's
// ratio of MMAs to fragment loads (mt·nt MMA tiles for mt+nt fragment
// loads per k step, taken as saturating at 3, CUTLASS's 64×64 warp tiles),
// times tensorCoreSync.
func (s *Schedule) tensorCoreEfficiency() float64 {
	mt, nt := ceilDiv(s.M, s.TileM), ceilDiv(s.N, s.TileN)
	used := float64(s.M*s.N) / float64(mt*s.TileM*nt*s.TileN)
	wm, wn := s.TileM/2/16, s.TileN/2/8 // MMA tiles of a warp
	ratio := min(1, float64(wm*wn)/float64(wm+wn)/3)
	return used * ratio * tensorCoreSync
}

package cost

import (
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// The work of a stage, counted from its body and its schedule: the
// pieces that a Price adds up.

// RequestBytes counts the bytes t's body loads and stores when every thread
// reads what it needs from global memory, with nothing cached: each load
// once per point of the variables around it (output axes and enclosing
// reduction axes; both branches of a select).
func RequestBytes(t *te.Tensor) int64 {
	n := t.Bytes()
	var walk func(e te.Expr, points int64)
	seen := map[*te.Reduce]bool{}
	walk = func(e te.Expr, points int64) {
		te.Walk(e, func(x te.Expr) bool {
			switch x := x.(type) {
			case *te.Load:
				n += points * int64(x.Tensor.DType.Size())
			case *te.Reduce:
				if !seen[x] { // a shared node is computed once
					seen[x] = true
					// those nested in it that do not move with it are
					// computed once before its loops (backend/lower)
					for _, n := range te.InvariantReductions(x) {
						if !seen[n] {
							seen[n] = true
							walk(n.Body, points*int64(contraction.Points(n.Axes)))
						}
					}
					walk(x.Body, points*int64(contraction.Points(x.Axes)))
				}
				return false
			}
			return true
		})
	}
	walk(t.Body, int64(t.NumElements()))
	return n
}

// Ops counts the arithmetic operations of one element of e as the
// analysis does (a reduction over N points counts N × (body + 1)), but not
// a select whose condition reads no tensor (see below), counting
// a reduction node that occurs more than once (shared by the vertical
// transform) once.
func Ops(e te.Expr, seen map[*te.Reduce]bool) int64 {
	switch e := e.(type) {
	case *te.Unary:
		return 1 + Ops(e.X, seen)
	case *te.Binary:
		return 1 + Ops(e.X, seen) + Ops(e.Y, seen)
	case *te.Select:
		if !te.HasLoad(e.Cond) {
			// A condition on indexes only (padding, a packed operand's part)
			// picks the code to run, not a value: no arithmetic.
			return max(Ops(e.Then, seen), Ops(e.Else, seen))
		}
		return 1 + Ops(e.Cond, seen) + max(Ops(e.Then, seen), Ops(e.Else, seen))
	case *te.Cast:
		return Ops(e.X, seen)
	case *te.Reduce:
		if seen[e] {
			return 0
		}
		seen[e] = true
		// Those nested in it that do not move with it are computed once,
		// before its loops (backend/lower).
		var once int64
		for _, n := range te.InvariantReductions(e) {
			once += Ops(n, seen)
		}
		return once + int64(contraction.Points(e.Axes))*(1+Ops(e.Body, seen))
	}
	return 0
}

// ElemSize returns the bytes of one element of the tensors e loads (the
// widest, if they differ; 4 if it loads none).
func ElemSize(e te.Expr) int {
	n := 0
	te.Walk(e, func(x te.Expr) bool {
		if l, ok := x.(*te.Load); ok {
			n = max(n, l.Tensor.DType.Size())
		}
		return true
	})
	if n == 0 {
		return 4
	}
	return n
}

// ElementBytes returns the bytes that one point of e loads: each distinct
// load (tensor and indexes) once, at its element size, leaving out the
// loads of reductions nested in e.
func ElementBytes(e te.Expr) int64 {
	seen := map[string]bool{}
	var n int64
	te.Walk(e, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Reduce:
			return false
		case *te.Load:
			if k := te.FormatExpr(x); !seen[k] {
				seen[k] = true
				n += int64(x.Tensor.DType.Size())
			}
		}
		return true
	})
	return n
}

// RunShare returns the share num/den of a contraction's factor loads
// that its tiles make: those of the tiles its mask does not skip, and
// of the k its k mask does not.
func RunShare(s *schedule.Schedule) (num, den int64) {
	num, den = 1, 1
	if s.Skipped > 0 && s.Tiles > 0 {
		num, den = int64(s.Tiles-s.Skipped), int64(s.Tiles)
	}
	if s.KMask != nil && s.LiveK < s.K && s.K > 0 {
		num, den = num*int64(s.LiveK), den*int64(s.K)
	}
	return num, den
}

// maskEnumLimit bounds the tiles a schedule enumerates to count the ones
// its mask skips; a larger stage is priced as if it skipped none.
const maskEnumLimit = 1 << 20

// Skipped counts the tiles of the contraction schedule s that its mask
// removes, the output points those tiles hold, and the factor elements
// they do not load (their rows of X and columns of Y over all of K).
func Skipped(s *schedule.Schedule) (tiles, points, factors int64) {
	mk := s.Mask
	if mk == nil || s.Resident != nil {
		return 0, 0, 0
	}
	mt, nt := te.CeilDiv(s.M, s.TileM), te.CeilDiv(s.N, s.TileN)
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

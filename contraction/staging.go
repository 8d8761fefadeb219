package contraction

import (
	"fmt"
	"slices"

	"tec/schedule"
	"tec/te"
)

// StageMode says how a tensor-core tile moves one operand from global to
// shared memory each k step.
type StageMode int

// The stage modes, slowest first.
const (
	// StageElements computes the tile element by element: a load (or an
	// expression of loads) and a store of one element per instruction.
	StageElements StageMode = iota
	// StageVector reads the operand's loads that move along the tile's
	// contiguous axis 16 bytes per instruction into registers (8, 4 or
	// an element where the layout allows no wider: Operand.Vec), computes a
	// vector's elements from them there (casts, roundings, exp(s - max)...)
	// and stores them to shared memory 16 bytes at a time. The lowering
	// issues the next k step's loads before this step's MMAs, so that
	// their latency hides under the MMAs (a register prefetch).
	StageVector
	// StageAsync copies the operand, a bare load, with 16-byte cp.async
	// copies that bypass registers, the next step's in flight while the
	// warps compute this one.
	StageAsync
)

func (m StageMode) String() string {
	switch m {
	case StageVector:
		return "vector loads through registers"
	case StageAsync:
		return "16-byte cp.async"
	}
	return "element by element"
}

// String describes the operand's staging for people: "8-byte loads
// through registers", or why it is element by element.
func (o Operand) String() string {
	switch o.Mode {
	case StageVector:
		return fmt.Sprintf("%d-byte loads through registers", o.Width)
	case StageElements:
		return "element by element: " + o.Why
	}
	return o.Mode.String()
}

// Narrow describes, for an operand that moves fewer than 16 bytes a
// load, its loads and why ("8-byte loads: its extent along the tile's
// contiguous axis, 196, is not a multiple of 8 (a 16-byte vector)"); it
// returns "" for 16-byte operands.
func (o Operand) Narrow() string {
	if o.Mode != StageElements && (o.Width == 0 || o.Width >= 16) {
		return ""
	}
	s := o.String()
	if o.Mode == StageVector && o.Why != "" {
		s += ": " + o.Why
	}
	return s
}

// Operand is how a tensor-core tile stages one operand of a contraction.
type Operand struct {
	Mode StageMode
	// KMajor says that the staged tile's rows are the operand's m or n
	// points and its columns k, k contiguous in shared memory: X's rows of
	// a matrix, Y's [out, in] weight, the K of Q·Kᵀ. Otherwise the tile's
	// rows are k: an NCHW convolution's X (its pixels contiguous), a
	// weight laid out [in, out]. ldmatrix reads k-major tiles without .trans,
	// the others with it.
	KMajor bool
	// Load is the load that StageAsync copies (no-op casts around it
	// removed).
	Load *te.Load
	// Vec is, for StageVector and StageAsync, the points along the
	// tile's contiguous axis that each load of the operand reads at once,
	// consecutive and aligned: a 16-byte vector of the tile's type (8
	// halves) where the layout allows, else 4 or 2 halves (a weight at an
	// offset of 4 halves mod 8, a channel of 14×14 pixels), read with 8-
	// or 4-byte loads, else 1 (rows of 49 halves, a strided im2col):
	// element loads, still all of a step issued before the last step's
	// MMAs. The tile's extent
	// along the axis is a multiple of it; vectors past the extent read
	// the last (their products reach no stored output) or, along k, zeros.
	Vec int
	// Loads counts the load instructions of one 16-byte vector of the
	// tile (StageVector): those of the operand's loads that move along
	// the tile's contiguous axis (two for an f32 tensor's 8 elements of a
	// half tile, two for 8-byte loads of halves).
	Loads int
	// Width is the bytes of the narrowest of those loads (16, 8, 4 or an
	// element's), and Bytes the bytes they read for one vector of the
	// tile.
	Width, Bytes int
	// Choices counts, for a StageVector under selects whose conditions a
	// vector's points share, the loads among which they choose (the
	// tensors of a horizontally concatenated contraction's batches): one
	// is fetched, but each has its addresses; 0 or 1 where there is no
	// choice.
	Choices int
	// Why says, for StageElements, why no register prefetch applies, not
	// even of single elements (a select over a moving load, a
	// reduction); for a StageVector of narrower loads than 16 bytes, why
	// 16 bytes do not apply along its axis.
	Why string
}

// Staging is how a tensor-core tile stages both operands (StagingOf).
type Staging struct{ X, Y Operand }

// Async reports whether both operands are copied by cp.async.
func (s Staging) Async() bool { return s.X.Mode == StageAsync }

// Stages returns the copies of each operand tile that shared memory holds:
// two where an operand moves a vector per instruction (16 bytes, or 8 or
// 4: the next step's tile fills one while the warps read the other, one
// barrier a step), else one.
func (s Staging) Stages() int {
	if s.X.Mode != StageElements || s.Y.Mode != StageElements {
		return 2
	}
	return 1
}

// StagingOf returns how a tensor-core tile of the contraction
// sum[k](X·Y), whose m axes are ms and n axes ns, of extents M, N and K,
// stages its operands of type in (TensorCoreType). Each operand's tile is
// k-major (its rows the operand's m or n points, its columns k) where its
// loads are contiguous along k, else m- or n-major where they are along
// its m or n points, else k-major for X and n-major for Y. An operand moves
// 16 bytes per instruction where each of its loads that moves along the
// tile's contiguous axis reads, at every vector of that axis, consecutive
// and 16-byte aligned elements (te.Load.Contiguous), none of them under a
// select (which may guard a read out of bounds), with an extent along
// that axis a multiple of the vector; several axes count as one, row-major.
// Where no orientation allows 16 bytes, the widest of 8 and 4 bytes that
// one does, else element loads (Operand.Vec), along the axis that they
// move by one element a point, else along k. Where the target has
// cp.async (async, gpu.Arch.AsyncCopy), both operands are copied by it
// when both move 16 bytes, are bare loads of the tile's type (no-op casts
// stripped) and K is a multiple of the staged k; without it (sm_75), such
// operands are 16-byte register prefetches.
func StagingOf(X, Y te.Expr, in te.DType, ms, ns []*te.Var, r *te.Reduce, M, N, K int, async bool) Staging {
	n := 16 / in.Size()
	s := Staging{X: operandStaging(X, in, r.Axes, ms, K, M, n, true), Y: operandStaging(Y, in, r.Axes, ns, K, N, n, false)}
	if async && K%schedule.TensorCoreTileK == 0 && s.X.Vec == n && s.Y.Vec == n {
		xl, okx := bareLoad(X, in)
		yl, oky := bareLoad(Y, in)
		if okx && oky {
			s.X.Mode, s.X.Load = StageAsync, xl
			s.Y.Mode, s.Y.Load = StageAsync, yl
		}
	}
	return s
}

// operandStaging returns the staging of operand e of type in, whose tile
// is k-major along ks (of K points) or else major along its own axes own
// (of ext points), n elements to a 16-byte vector of the tile: at the
// widest loads that either orientation allows, k-major first, down to
// element loads that move by one element a point (coalesced across a
// warp's threads), else element loads along k at any stride; staged
// element by element, it is k-major where kMajor is set.
func operandStaging(e te.Expr, in te.DType, ks, own []*te.Var, K, ext, n int, kMajor bool) Operand {
	for v := n; v >= 1; v /= 2 {
		op := vectorOperand(e, in, ks, K, n, v, false)
		op.KMajor = true
		if op.Mode != StageElements {
			return narrowed(op, vectorOperand(e, in, ks, K, n, n, false))
		}
		if o := vectorOperand(e, in, own, ext, n, v, false); o.Mode != StageElements {
			return narrowed(o, vectorOperand(e, in, own, ext, n, n, false))
		}
	}
	op := vectorOperand(e, in, ks, K, n, 1, true)
	if op.Mode != StageElements {
		op.KMajor = true
		return narrowed(op, vectorOperand(e, in, ks, K, n, n, false))
	}
	op.KMajor = kMajor
	return op
}

// narrowed returns op, a vector staging, with the reason that wide, the
// same orientation's 16-byte staging, gives where op's loads are
// narrower.
func narrowed(op, wide Operand) Operand {
	if wide.Mode == StageElements {
		op.Why = wide.Why
	}
	return op
}

// vectorOperand returns the staging of operand e of type in along axes
// (row-major) of ext points, n elements to a 16-byte vector of the tile,
// each load reading v of them at once: consecutive and aligned, or, where
// strided is set (v = 1), wherever they lie.
func vectorOperand(e te.Expr, in te.DType, axes []*te.Var, ext, n, v int, strided bool) Operand {
	if ext%v != 0 {
		return Operand{Why: fmt.Sprintf("its extent along the tile's contiguous axis, %d, is not a multiple of %d (a %d-byte vector)", ext, v, v*in.Size())}
	}
	if te.Contains(e, func(x te.Expr) bool { _, ok := x.(*te.Reduce); return ok }) {
		return Operand{Why: "it holds a reduction"}
	}
	along, sub := te.FlatAxes(axes, ext)
	moves := func(x te.Expr) bool {
		ld, ok := x.(*te.Load)
		if !ok {
			return false
		}
		used := te.UsedVars(ld)
		for _, a := range axes {
			if used[a] {
				return true
			}
		}
		return false
	}
	op := Operand{Mode: StageVector, Vec: v, Width: 16}
	te.Walk(e, func(x te.Expr) bool {
		if op.Mode == StageElements {
			return false
		}
		if s, ok := x.(*te.Select); ok && (te.Contains(s.Then, moves) || te.Contains(s.Else, moves)) {
			if usesAny(s.Cond, axes) {
				op = Operand{Why: "a load that moves along its contiguous axis lies under a select"}
				return false
			}
			// A condition the vector's points share (a horizontally
			// concatenated contraction's batch): a vector of the
			// branch it takes, which the staging fetches alone.
			a := vectorOperand(s.Then, in, axes, ext, n, v, strided)
			b := vectorOperand(s.Else, in, axes, ext, n, v, strided)
			for _, br := range []Operand{a, b} {
				if br.Mode == StageElements {
					op = br
					return false
				}
			}
			op.Loads += max(a.Loads, b.Loads)
			op.Bytes += max(a.Bytes, b.Bytes)
			op.Width = min(op.Width, a.Width, b.Width)
			op.Choices += max(a.Choices, min(a.Loads, 1)) + max(b.Choices, min(b.Loads, 1))
			return false
		}
		if !moves(x) {
			return true
		}
		ld := x.(*te.Load)
		if !ld.IsGather() {
			idx := make([]te.Index, len(ld.Index))
			for i, ix := range ld.Index {
				idx[i] = ix.Substitute(sub)
			}
			ld = &te.Load{Tensor: ld.Tensor, Index: idx}
		}
		bytes := n * ld.Tensor.DType.Size() // one vector's
		width := min(v*ld.Tensor.DType.Size(), 16)
		if bytes%16 != 0 || !strided && !ld.Contiguous(along, v) {
			op = Operand{Why: fmt.Sprintf("its load of %s is not contiguous and %d-byte aligned along the tile's axis", ld.Tensor.Name, width)}
			return false
		}
		op.Loads += bytes / width
		op.Bytes += bytes
		op.Width = min(op.Width, width)
		return false
	})
	return op
}

// usesAny reports whether e uses any of axes.
func usesAny(e te.Expr, axes []*te.Var) bool {
	used := te.UsedVars(e)
	for _, a := range axes {
		if used[a] {
			return true
		}
	}
	return false
}

// bareLoad returns e as a load of a tensor of type in, looking through
// casts that do not change its value (to in, or to f32 and back).
func bareLoad(e te.Expr, in te.DType) (*te.Load, bool) {
	for {
		switch x := e.(type) {
		case *te.Load:
			return x, x.Tensor.DType == in && !x.IsGather()
		case *te.Cast:
			if x.To != in && x.To != te.F32 {
				return nil, false
			}
			e = x.X
		default:
			return nil, false
		}
	}
}

// EpilogueColumns returns the loads of t's body outside its sum that move
// with t's n axes ns (of N points) alone — a bias —, each contiguous along
// them in 16-byte vectors (te.Load.Contiguous) and under no select: those
// that a tensor-core tile stages in shared memory once per tile for its
// epilogue (backend/lower), an array of the tile's columns each.
func EpilogueColumns(t *te.Tensor, ns []*te.Var, N int) []*te.Load {
	along, sub := te.FlatAxes(ns, N)
	var cols []*te.Load
	te.Walk(t.Body, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Reduce, *te.Select:
			return false
		case *te.Load:
			used := te.UsedVars(x)
			if len(used) == 0 || x.IsGather() || slices.Contains(cols, x) {
				return false
			}
			for v := range used {
				if !slices.Contains(ns, v) {
					return false
				}
			}
			switch x.Tensor.DType {
			case te.F32, te.I32, te.F16, te.BF16:
			default:
				return false
			}
			n := 16 / x.Tensor.DType.Size()
			idx := make([]te.Index, len(x.Index))
			for i, ix := range x.Index {
				idx[i] = ix.Substitute(sub)
			}
			if N%n == 0 && (&te.Load{Tensor: x.Tensor, Index: idx}).Contiguous(along, n) {
				cols = append(cols, x)
			}
			return false
		}
		return true
	})
	return cols
}

// ColumnBytes returns the shared memory that a tile tn columns wide takes
// to stage the epilogue columns cols (EpilogueColumns).
func ColumnBytes(cols []*te.Load, tn int) int {
	n := 0
	for _, ld := range cols {
		n += tn * ld.Tensor.DType.Size()
	}
	return n
}

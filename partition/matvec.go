package partition

import (
	"math"
	"slices"

	"tec/contraction"
	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// The wide factor's loads of a matrix-vector stage. A horizontally
// concatenated product (transform.Horizontal's q/k/v or gate/up
// projections) reads its wide factor through selects on the column
// among its parts' tensors: wideParts finds the runs of columns that
// read one tensor, and the planner takes a tile width that divides each
// (schedule.MatVec.Parts), so that a tile chooses its tensor once, not at
// every load. Where every part is a tensor read contiguously along k,
// 16-byte aligned, its tiles load it 16 bytes at a time (MatVec.Vec),
// with enough loads in flight to cover the DRAM's latency (InFlight).

// Bounds of matrix-vector tiles.
const (
	matVecMaxRows  = 8        // rows of the narrow factor
	matVecMaxStage = 16 << 10 // bytes of them staged in shared memory
	matVecMaxChunk = 64 << 10 // bytes of them staged, where deeper chunks keep more loads in flight
	matVecMaxTileF = 16       // widest tile, in columns
	matVecMaxCols  = 4        // columns per thread, with several rows
	matVecMinK     = 8        // k each thread sums, at least, when tiles are narrowed
)

// maxPartCols bounds the columns wideParts evaluates a wide factor's
// selects at.
const maxPartCols = 1 << 16

// colPart is a run of the wide factor's columns, from col on, that read
// it as f.
type colPart struct {
	col int
	f   te.Expr
}

// wideParts returns the parts of the wide factor f over its columns (the
// points of axes, row-major): where f selects by conditions on the
// columns alone, the runs of columns that take the same branches, each
// with f resolved there. It returns one part where f has no such select,
// and nil where there are too many columns to evaluate them all.
func wideParts(f te.Expr, axes []*te.Var) []colPart {
	onCols := map[*te.Var]bool{}
	for _, a := range axes {
		onCols[a] = true
	}
	at := map[*te.Select]int{}
	var sels []*te.Select
	te.Walk(f, func(x te.Expr) bool {
		if s, ok := x.(*te.Select); ok && colCond(s.Cond, onCols) {
			if _, seen := at[s]; !seen {
				at[s] = len(sels)
				sels = append(sels, s)
			}
		}
		return true
	})
	if len(sels) == 0 {
		return []colPart{{0, f}}
	}
	cols := product(axes)
	if cols > maxPartCols {
		return nil
	}
	env := map[*te.Var]int{}
	val := func(v *te.Var) int {
		if x, ok := env[v]; ok {
			return x
		}
		return -1 << 40
	}
	var parts []colPart
	var last []bool
	for c := range cols {
		rest := c
		for d := len(axes) - 1; d >= 0; d-- {
			env[axes[d]] = rest % axes[d].Extent
			rest /= axes[d].Extent
		}
		taken := make([]bool, len(sels))
		for i, s := range sels {
			taken[i], _ = indexCond(s.Cond, val)
		}
		if c > 0 && slices.Equal(taken, last) {
			continue
		}
		last = taken
		parts = append(parts, colPart{c, resolveSelects(f, at, taken)})
	}
	return parts
}

// colCond reports whether e is a condition on the columns alone:
// comparisons of index expressions over the variables of cols and of
// integral constants, and their conjunctions and disjunctions.
func colCond(e te.Expr, cols map[*te.Var]bool) bool {
	b, ok := e.(*te.Binary)
	switch {
	case !ok:
		return false
	case b.Op.IsLogical():
		return colCond(b.X, cols) && colCond(b.Y, cols)
	}
	return b.Op.IsComparison() && colIndex(b.X, cols) && colIndex(b.Y, cols)
}

// colIndex reports whether e is an index expression over the variables
// of cols, or an integral constant.
func colIndex(e te.Expr, cols map[*te.Var]bool) bool {
	switch e := e.(type) {
	case *te.IndexExpr:
		return !slices.ContainsFunc(e.Index.Vars(), func(v *te.Var) bool { return !cols[v] })
	case *te.ConstExpr:
		return e.Value == float64(int(e.Value))
	}
	return false
}

// resolveSelects returns f with each select of at replaced by its branch:
// Then where taken[at[s]], else Else.
func resolveSelects(f te.Expr, at map[*te.Select]int, taken []bool) te.Expr {
	return te.Replace(f, func(x te.Expr) te.Expr {
		s, ok := x.(*te.Select)
		if !ok {
			return nil
		}
		i, ok := at[s]
		switch {
		case !ok:
			return nil
		case taken[i]:
			return resolveSelects(s.Then, at, taken)
		}
		return resolveSelects(s.Else, at, taken)
	})
}

// partExprs returns the wide factor of each part.
func partExprs(parts []colPart) []te.Expr {
	fs := make([]te.Expr, len(parts))
	for i, p := range parts {
		fs[i] = p.f
	}
	return fs
}

// tileParts returns the parts of a wide factor as runs of tiles width
// columns wide, or false where a part does not begin at a tile's first
// column.
func tileParts(parts []colPart, width int) ([]schedule.Part, bool) {
	out := make([]schedule.Part, len(parts))
	for i, p := range parts {
		if p.col%width != 0 {
			return nil, false
		}
		out[i] = schedule.Part{Tile: p.col / width, F: p.f}
	}
	return out, true
}

// widthFits reports whether tiles width columns wide cover cols columns
// without straddling a part (parts may be nil: none known).
func widthFits(width, cols int, parts []colPart) bool {
	_, ok := tileParts(parts, width)
	return cols%width == 0 && ok
}

// vecElems returns the elements along the reduction axis k that a thread
// reads at once from each of the wide factor's parts fs: 16 bytes of the
// widest type among the loads that move with k. It returns 0 unless every
// part has such loads, each of a floating-point type, not a gather, and
// read as te.VectorLoads allows: contiguous and aligned along k (since
// every buffer starts 16-byte aligned, the elements at k0, ..., k0+n-1, k0
// a multiple of n, are then 16-byte aligned, or 8 or 4 bytes for a
// narrower type), under selects whose conditions are uniform over the
// vector (a decode step's t == pos[b], choosing between the new key and
// the cache), with no reduction.
func vecElems(fs []te.Expr, k *te.Var) int {
	size := 0
	for _, f := range fs {
		te.Walk(f, func(x te.Expr) bool {
			if ld, ok := x.(*te.Load); ok && te.UsedVars(ld)[k] {
				size = max(size, ld.Tensor.DType.Size())
			}
			return true
		})
	}
	if size == 0 || 16%size != 0 {
		return 0
	}
	n := 16 / size
	for _, f := range fs {
		moving, _, ok := te.VectorLoads(f, k, n, nil)
		if !ok || len(moving) == 0 {
			return 0
		}
		for _, ld := range moving {
			if dt := ld.Tensor.DType; ld.IsGather() || dt != te.F32 && dt != te.F16 && dt != te.BF16 {
				return 0
			}
		}
	}
	return n
}

// stageElems returns the elements of one 16-byte load of each load of the
// narrow factor a that moves with the reduction axis k, or 0 unless each
// is contiguous and aligned along k as vecElems requires, all of one
// length, with no other variable than k and the row's axes own, and none
// under a select (a concatenation along k reads each tensor only within
// its part, where a vector would read past it).
func stageElems(a te.Expr, k *te.Var, own []*te.Var) int {
	n, ok := 0, true
	moves := func(ld *te.Load) bool {
		return slices.ContainsFunc(ld.Index, func(ix te.Index) bool { return slices.Contains(ix.Vars(), k) })
	}
	te.Walk(a, func(x te.Expr) bool {
		if s, isSel := x.(*te.Select); isSel && ok {
			for _, b := range []te.Expr{s.Then, s.Else} {
				ok = ok && !te.Contains(b, func(y te.Expr) bool { ld, isLoad := y.(*te.Load); return isLoad && moves(ld) })
			}
		}
		ld, isLoad := x.(*te.Load)
		if !isLoad || !ok {
			return ok
		}
		if !moves(ld) {
			return true
		}
		var vars []*te.Var
		for _, ix := range ld.Index {
			vars = append(vars, ix.Vars()...)
		}
		m := vecElems([]te.Expr{ld}, k)
		ok = m > 0 && (n == 0 || m == n) && !slices.ContainsFunc(vars, func(v *te.Var) bool { return v != k && !slices.Contains(own, v) })
		n = m
		return ok
	})
	if !ok {
		return 0
	}
	return n
}

// Bounds of the 16-byte loads a thread has in flight.
const (
	minInFlight = 2 // the next loads issue while the last ones return
	maxInFlight = 8 // each takes 4 registers per column
)

// setLoads sets the matrix-vector schedule mv's Parts, Vec and InFlight
// for the contraction d (see MatVec), once its tiling is chosen, and the
// stage's load path (schedule.LoadPath): InFlight 16-byte loads per
// column a thread sums where Vec is set, InFlight 16-byte loads across
// its columns where ColVec is (set by setMatVec, columnVectors), else
// scalar loads of the wide factor's element (scalarMatVecLoads).
func (s stage) setLoads(d contraction.Dims, mv *schedule.MatVec, g gpu.Model) {
	f, axes := d.Y, d.NAxes
	if mv.Wide == 0 {
		f, axes = d.X, d.MAxes
	}
	cols := product(axes)
	parts := wideParts(f, axes)
	mv.Parts, mv.Vec, mv.InFlight, mv.StageVec, mv.KLanes, mv.Ring, mv.RingType = nil, 0, 0, 0, false, 0, 0
	defer func() {
		vec, bytes := max(mv.Vec, 1), 0
		if mv.Vec > 0 || mv.ColVec > 0 {
			bytes = 16
		}
		if len(d.Reduce.Axes) == 1 {
			s.Load.Lines = warpLines(f, axes, d.Reduce.Axes[0], mv, vec, bytes)
		}
	}()
	tp, ok := tileParts(parts, mv.Width())
	ok = ok && cols%mv.Width() == 0
	s.Load = schedule.LoadPath{Width: cost.ElemSize(f), InFlight: scalarMatVecLoads(d, mv, !ok && len(parts) > 1)}
	if !ok {
		return
	}
	if len(tp) > 1 {
		mv.Parts = tp
	}
	fs := partExprs(parts)
	if len(d.Reduce.Axes) != 1 {
		return
	}
	k, staged := d.Reduce.Axes[0], mv.StagedK(d.K)
	narrow, own := d.X, d.MAxes
	if mv.Wide == 0 {
		narrow, own = d.Y, d.NAxes
	}
	if n := stageElems(narrow, k, append(slices.Clone(own), d.BatchAxes...)); n > 0 && staged%n == 0 {
		mv.StageVec = n
	}
	if mv.ColVec > 0 {
		// One vector across the thread's columns at each of its k. The
		// vectors hold the weights of its columns, which setMatVec
		// counted one register each: the element in use is computed
		// from them, and its register is the array's.
		mv.InFlight = s.inFlight(g, te.CeilDiv(staged, mv.Split))
		s.Load = schedule.LoadPath{Width: 16, InFlight: mv.InFlight}
		s.RegsPerThread += 4*mv.InFlight - mv.Cols
		return
	}
	if contraction.KMaskOf(d) != nil {
		return
	}
	n := vecElems(fs, k)
	if n == 0 || staged%n != 0 || mv.Cols > 1 && !plainLoads(fs) {
		// A wide factor computed from its loads (a select of the new key
		// or the cache) holds an array per load and column: with several
		// columns per thread, more registers than the scalar loads of
		// its columns, which are in flight together already.
		return
	}
	mv.Vec = n
	// Rows staged in narrower loads than the lanes read (f32 rows for
	// bf16 weights) take the lanes where a warp's staging stores then fall
	// in distinct banks: a column's 32 lanes, 32 vectors a chunk at least.
	narrower := mv.StageVec > 0 && mv.StageVec < n && n%mv.StageVec == 0 && mv.Split == warpLanes && (staged/n)%warpLanes == 0
	mv.KLanes = product(own) <= matVecMaxRows && mv.Cols <= 1 && mv.Split > 1 && warpLanes%mv.Split == 0 && (mv.StageVec == n || narrower)
	mv.InFlight = s.inFlight(g, te.CeilDiv(staged/n, mv.Split))
	if mv.Ring = s.ringDepth(g, mv, fs, staged, d.K); mv.Ring > 0 {
		// One vector in registers, read back from the ring; Ring − 1 in
		// flight, without a gap between rounds or tiles.
		s.Load = schedule.LoadPath{Width: 16, InFlight: mv.Ring - 1, Prefetch: true}
		s.RegsPerThread += 4
		return
	}
	mv.RingType = 0
	s.Load = schedule.LoadPath{Width: 16, InFlight: mv.InFlight * max(mv.Cols, 1)}
	s.RegsPerThread += 4 * mv.InFlight * max(mv.Cols, 1)
}

// Bounds of the depth of a weight ring (schedule.MatVec.Ring).
const (
	minRing = 4 // three vectors in flight while the thread sums one
	maxRing = 8 // 128 bytes of shared memory a thread
)

// ringDepth returns the depth of the ring of shared memory through which
// the threads of matrix-vector stage s (schedule mv, its lanes along k
// chosen) stream the parts fs of its wide factor with cp.async
// (MatVec.Ring), or 0 where they cannot: a ring needs a column's threads
// on a warp's lanes, no mask, a GPU with cp.async, K staged whole or in
// equal chunks (staged divides k: the ring runs on across them), and
// every part a param of one type (which it sets as
// mv.RingType) read by a plain load of 16-byte vectors. Its depth keeps an SM's share of the DRAM's
// bandwidth × latency in flight over the SM's blocks that have tiles
// (loadsToCover), one slot more for the vector being summed, within [minRing, maxRing] (minRing across chunks), and divides the vectors
// a thread sums a tile, so that a slot is a constant of the unrolled
// loop over them.
func (s stage) ringDepth(g gpu.Model, mv *schedule.MatVec, fs []te.Expr, staged, k int) int {
	if !mv.KLanes || k%staged != 0 || s.Mask != nil || !g.Arch.AsyncCopy() {
		// A tile its mask skips would leave the copies that its block's
		// last tile prefetched for it in flight, and its next tile's
		// slots empty.
		return 0
	}
	for i, f := range fs {
		ld, ok := f.(*te.Load)
		if !ok || ld.Tensor.Kind != te.Param || ld.Tensor.DType.Size()*mv.Vec != 16 || i > 0 && ld.Tensor.DType != mv.RingType {
			return 0
		}
		mv.RingType = ld.Tensor.DType
	}
	per := mv.RingVectors(staged)
	if per == 0 || per*mv.Vec*mv.Split != staged {
		return 0
	}
	// The blocks of an SM that have tiles: a stage of fewer tiles than
	// its blocks (the Q·K·V projection's 192 on 132 SMs) keeps its share
	// in flight with fewer.
	blocks, _ := g.BlocksPerSM(s.Resources().Block())
	blocks = min(blocks, te.CeilDiv(s.Tiles, max(g.SMs, 1)))
	depth := min(max(te.NextPow2(loadsToCover(g, blocks, s.Threads)+1), minRing), maxRing)
	if staged < k {
		// Across chunks, the round of slots, unrolled, comes beside the
		// staging of each chunk: at 8 slots ptxas 11.8 spilled the
		// down projection's stage (24 B at 80 registers, the decode
		// step on the H200), at 4 it does not.
		depth = minRing
	}
	for depth > 1 && per%depth != 0 {
		depth /= 2
	}
	if depth < 2 {
		return 0
	}
	return depth
}

// warpLines returns the L1 wavefronts per 128 bytes moved of a warp's
// loads of the wide factor f of a matrix-vector tiling mv
// (schedule.LoadPath.Lines), the most over f's loads: lane l of a warp
// takes the tile's column l mod TileF (its first of Cols consecutive ones
// where ColVec is set) and the k of vector l / TileF (column l / Split and
// vector l mod Split where KLanes is set), vec elements a
// vector, each load moving bytes bytes (0: the load's element). Each
// load's offset is placed from its strides along the column axes cols and
// k, the tile's first column and k at a 128-byte boundary. A tiling whose
// lanes take columns whose rows lie apart (a thread per key of an
// attention's scores, 256 bytes apart) has 32 lines a load; one whose
// lanes read along k shares lines among them. It returns 0 where a load's
// offset is not affine in the columns and k (a gather, a reshape's floor).
func warpLines(f te.Expr, cols []*te.Var, k *te.Var, mv *schedule.MatVec, vec, bytes int) float64 {
	tileF, split := max(mv.TileF, 1), max(mv.Split, 1)
	worst, known := 0.0, true
	te.Walk(f, func(x te.Expr) bool {
		ld, ok := x.(*te.Load)
		if !ok || !known {
			return known
		}
		colStride := make([]int, len(cols))
		for i, c := range cols {
			st, ok := loadStride(ld, c)
			if !ok {
				known = false
				return false
			}
			colStride[i] = st
		}
		kStride, ok := loadStride(ld, k)
		if !ok {
			known = false
			return false
		}
		size := ld.Tensor.DType.Size()
		n := bytes
		if n == 0 {
			n = size
		}
		lines := map[int]bool{}
		for lane := range warpLanes {
			col, kz := lane%tileF, lane/tileF
			if mv.KLanes {
				col, kz = lane/split, lane%split
			}
			if mv.ColVec > 0 {
				col *= max(mv.Cols, 1)
			}
			off := kz * vec * kStride
			for i := len(cols) - 1; i >= 0; i-- {
				ext := max(cols[i].Extent, 1)
				off += col % ext * colStride[i]
				col /= ext
			}
			first := te.FloorDiv(off*size, 128)
			for line := first; line <= te.FloorDiv(off*size+n-1, 128); line++ {
				lines[line] = true
			}
		}
		worst = max(worst, float64(len(lines))*128/float64(warpLanes*n))
		return true
	})
	if !known {
		return 0
	}
	return worst
}

// warpLanes is the threads of a warp.
const warpLanes = 32

// loadsToCover returns the 16-byte loads that each thread of blocks
// blocks of threads threads on an SM of g must keep in flight for the SM
// to draw its share of g's DRAM bandwidth (Little's law:
// cost.InFlightPerSM).
func loadsToCover(g gpu.Model, blocks, threads int) int {
	return int(math.Ceil(cost.InFlightPerSM(g) / float64(max(blocks, 1)*threads*16)))
}

// inFlight returns the 16-byte loads a thread of stage s issues before it
// uses any, of the per it loads in all (per thread and column): by
// Little's law, an SM must have the DRAM's bandwidth × latency, its
// share, in flight, which its blocks' threads share; within
// [minInFlight, maxInFlight], and no more than per and a divisor of it,
// so that every round of loads is whole.
func (s stage) inFlight(g gpu.Model, per int) int {
	u := s.wantInFlight(g)
	for u > 1 && (u > per || per%u != 0) {
		u /= 2
	}
	return u
}

// wantInFlight returns the 16-byte loads a thread of stage s should keep
// in flight by Little's law (loadsToCover at the blocks of s an SM
// holds), a power of two within [minInFlight, maxInFlight].
func (s stage) wantInFlight(g gpu.Model) int {
	blocks, _ := g.BlocksPerSM(s.Resources().Block())
	return min(max(te.NextPow2(loadsToCover(g, blocks, s.Threads)), minInFlight), maxInFlight)
}

// columnVectors returns the elements of the wide factor of d (X where
// wide is 0, else Y) that a thread of a matrix-vector tiling of d, width
// columns wide (Width, one column per thread), would load at once across
// consecutive columns (MatVec.ColVec). It returns 0 where the wide factor
// has more than one column axis or d more than one reduction axis, where
// its loads are read 16 bytes at a time along k already (vecElems: no k
// mask), where its parts' loads do not move contiguously and aligned along
// the columns, and where the tile's threads, each taking ColVec columns,
// would leave some with no k to sum.
func columnVectors(d contraction.Dims, wide, width, threads int) int {
	f, axes := d.Y, d.NAxes
	if wide == 0 {
		f, axes = d.X, d.MAxes
	}
	if len(axes) != 1 || len(d.Reduce.Axes) != 1 {
		return 0
	}
	parts := wideParts(f, axes)
	tp, ok := tileParts(parts, width)
	if !ok {
		return 0
	}
	fs := make([]te.Expr, len(tp))
	for i, p := range tp {
		fs[i] = p.F
	}
	if contraction.KMaskOf(d) == nil && vecElems(fs, d.Reduce.Axes[0]) > 0 {
		return 0
	}
	n := vecElems(fs, axes[0])
	if n == 0 || width%n != 0 || threads%(width/n) != 0 || threads/(width/n) > d.K {
		return 0
	}
	return n
}

// plainLoads reports whether every one of fs is a load.
func plainLoads(fs []te.Expr) bool {
	for _, f := range fs {
		if _, ok := f.(*te.Load); !ok {
			return false
		}
	}
	return true
}

// scalarUnroll is the trips of a loop of constant trip count that nvcc
// unrolls, at least (its default for a loop too long to unroll whole):
// the loads of those trips issue before the first is used. The decode
// step's SASS before its 16-byte loads (docs/benchmarks.md, "Issue 25:
// decode weights") had 8 and 16 scalar weight loads in flight in the
// gate/up and W_o loops, one in the Q·K·V loop that chose its tensor at
// every load.
const scalarUnroll = 4

// scalarMatVecLoads returns the scalar loads of the wide factor that a
// thread of matrix-vector tiling mv of d has in flight: one per column
// it sums for each of the trips of its k loop (a serial loop of constant
// trip count, backend/lower's sumChunk) that nvcc unrolls (scalarUnroll),
// or one per column where selects (a tile straddling the parts of a
// horizontal concatenation: selects is set) or a k mask branch around
// every load.
func scalarMatVecLoads(d contraction.Dims, mv *schedule.MatVec, selects bool) int {
	cols := max(mv.Cols, 1)
	if selects || contraction.KMaskOf(d) != nil {
		return cols
	}
	return cols * min(scalarUnroll, te.CeilDiv(mv.StagedK(d.K), max(mv.Split, 1)))
}

// indexCond evaluates a condition on indices alone (comparisons of index
// expressions and constants, and their conjunctions and disjunctions) at
// the point val binds, or reports it unknown.
func indexCond(e te.Expr, val func(*te.Var) int) (bool, bool) {
	b, ok := e.(*te.Binary)
	if !ok {
		return false, false
	}
	if b.Op.IsLogical() {
		x, xok := indexCond(b.X, val)
		y, yok := indexCond(b.Y, val)
		if !xok || !yok {
			return false, false
		}
		if b.Op == te.And {
			return x && y, true
		}
		return x || y, true
	}
	if !b.Op.IsComparison() {
		return false, false
	}
	x, xok := indexValue(b.X, val)
	y, yok := indexValue(b.Y, val)
	if !xok || !yok {
		return false, false
	}
	switch b.Op {
	case te.Lt:
		return x < y, true
	case te.Le:
		return x <= y, true
	case te.Gt:
		return x > y, true
	case te.Ge:
		return x >= y, true
	case te.Eq:
		return x == y, true
	case te.Ne:
		return x != y, true
	}
	return false, false
}

// indexValue evaluates an index expression or an integral constant.
func indexValue(e te.Expr, val func(*te.Var) int) (int, bool) {
	switch e := e.(type) {
	case *te.IndexExpr:
		for _, v := range e.Index.Vars() {
			if val(v) < 0 {
				return 0, false
			}
		}
		return e.Index.Eval(val), true
	case *te.ConstExpr:
		if e.Value == float64(int(e.Value)) {
			return int(e.Value), true
		}
	}
	return 0, false
}

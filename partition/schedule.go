package partition

import (
	"fmt"
	"slices"

	"tec/analysis"
	"tec/contraction"
	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// tile sets a contraction's tile: a tm×tn grid of threads, each computing
// rm×rn outputs; out is the size of the output in bytes.
func (s stage) tile(tm, tn, rm, rn int, out int64) {
	s.tileK(tm, tn, rm, rn, min(tileK, te.NextPow2(s.K)), out)
}

// tileK is tile with the factors staged tk of K at a time.
func (s stage) tileK(tm, tn, rm, rn, tk int, out int64) {
	s.RegM, s.RegN = rm, rn
	s.TileM, s.TileN = tm*rm, tn*rn
	s.TileK = tk
	mt, nt := te.CeilDiv(s.M, s.TileM), te.CeilDiv(s.N, s.TileN)
	s.Tiles = s.Batch * mt * nt
	s.SetArrays(schedule.Array{DType: te.F32, Len: s.TileM * s.TileK}, schedule.Array{DType: te.F32, Len: s.TileK * s.TileN})
	// The accumulators, one factor element per row and column of the
	// thread's outputs, and the indexes.
	s.RegsPerThread = 32 + rm*rn + rm + rn
	// Each factor staged by a block-stride loop, a load a trip.
	s.Load.InFlight, s.Load.Prefetch = 1, false
	s.Bytes = cost.TileBytes(s.Schedule, 4, out)
	s.UnmaskedBytes = s.Bytes
	s.priceMask()
}

// priceMask leaves the products and factor loads of the tiles its mask
// skips out of a masked contraction's FLOPs and Bytes.
func (s stage) priceMask() {
	if s.Mask == nil {
		return
	}
	s.Skipped = s.Price.SkipMasked(s.Schedule, 4, s.UnmaskedBytes)
}

// priceKMask leaves the products and factor loads of the k its k mask
// skips, at its Context, out of a matrix-vector contraction's FLOPs and
// Bytes.
func (s stage) priceKMask() {
	if s.KMask == nil || s.K == 0 {
		return
	}
	live := s.KMask.LiveK()
	if live == s.LiveK {
		return
	}
	s.Price.ScaleK(live, s.LiveK)
	s.LiveK = live
}

// Unfused makes a contraction's schedule the one that a kernel of its own
// runs (-O0 to -O2, backend/lower.Unfused): a tile of up to 16×16 outputs,
// one per thread, halved along its longer side until it has at most the
// schedule's threads (the plan's block, within the GPU's limit). Other
// kinds are left alone.
func (s stage) Unfused(out int64) {
	if s.Kind != schedule.Contraction {
		return
	}
	s.MatVec = nil
	tm, tn := min(unfusedTile, te.NextPow2(s.M)), min(unfusedTile, te.NextPow2(s.N))
	for tm*tn > max(s.Threads, 1) {
		if tm >= tn {
			tm /= 2
		} else {
			tn /= 2
		}
	}
	s.tile(tm, tn, 1, 1, out)
	s.Threads = tm * tn
}

// unfusedTile bounds the tile of a contraction in a kernel of its own.
const unfusedTile = 16

// rowReduceArrays returns the scratch arrays of a block of threads that
// reduces reds together, as backend/lower's blockReduce declares them: a
// slot per thread for each type of the sums, maxima and products, and for
// the argmaxes and argmins a value per thread of each value type and one
// position per thread.
func rowReduceArrays(reds []*te.Reduce, threads int) []schedule.Array {
	var arrays []schedule.Array
	seen := map[string]bool{}
	add := func(name string, dt te.DType) {
		if !seen[name] {
			seen[name] = true
			arrays = append(arrays, schedule.Array{DType: dt, Len: threads})
		}
	}
	for _, r := range reds {
		if !r.Op.IsArg() {
			rt := te.TypeOf(r)
			add("red_"+rt.String(), rt)
			continue
		}
		vt := te.F32
		if te.TypeOf(r.Body) == te.I32 {
			vt = te.I32
		}
		add("argv_"+vt.String(), vt)
		add("argi", te.I32)
	}
	return arrays
}

// argPass is the positions a thread reads at a time in a split argmax or
// argmin: one 16-byte load of f32 values (backend/lower's argChunkVec).
const argPass = 4

// argChunks returns the chunks per output of a split argmax or argmin
// (split, in partition.go) over ext positions, in blocks of threads
// threads with at most most blocks per output: chunks of whole passes of
// the block's loads (argPass positions per thread), as few passes per
// chunk as most allows, so that backend/lower gives every chunk but the
// last the same whole passes; at least 2.
func argChunks(ext, threads, most int) int {
	passes := te.CeilDiv(ext, argPass*threads)
	each := te.CeilDiv(passes, max(1, min(most, passes)))
	return max(2, te.CeilDiv(passes, each))
}

// Scheduler chooses the schedule of one compute tensor. It is the place
// where a tuner plugs in; Analytic is the default.
type Scheduler interface {
	Schedule(t *te.Tensor, x *analysis.TE, g gpu.Model, threads int) (*schedule.Schedule, *cost.Price, error)
}

// Analytic chooses schedules without search: contraction tiles whose
// product is the block size, shaped to waste the least padding; a block
// per output for long reductions, or a thread per output where its loads
// coalesce and the cost model prefers it (serialReduces); a thread per
// element otherwise.
type Analytic struct{}

// Thresholds of the analytic scheduler.
const (
	rowReduceMin = 64   // reductions at least this long may get a block per output
	splitMin     = 2048 // and at least this long may be split across blocks
	tileK        = 16
)

// Schedule implements Scheduler.
func (Analytic) Schedule(t *te.Tensor, x *analysis.TE, g gpu.Model, threads int) (*schedule.Schedule, *cost.Price, error) {
	s, err := analytic(t, x, g, threads)
	return s.Schedule, s.Price, err
}

// analytic is Analytic's Schedule.
func analytic(t *te.Tensor, x *analysis.TE, g gpu.Model, threads int) (stage, error) {
	if t.Kind != te.Compute || t.Body == nil {
		return stage{}, fmt.Errorf("schedule %s: not a compute tensor", t.Name)
	}
	n := t.NumElements()
	p := cost.Of(t, x)
	s := stage{&schedule.Schedule{Threads: threads, RegsPerThread: 32, Load: scalarPath(t)}, &p}
	if d, ok := contraction.Of(t); ok {
		base := s.clone()
		s.Kind = schedule.Contraction
		s.M, s.N, s.K, s.Batch = d.M, d.N, d.K, d.Batch
		if d.Masked {
			// Its mask in the epilogue; a tile whose outputs the mask
			// makes false throughout skips its products, matrix-vector
			// tiles too (backend/lower's tileMask).
			s.Mask = contraction.MaskOf(d)
			s.Products = cost.Ops(d.Reduce, map[*te.Reduce]bool{})
			s.UnmaskedFLOPs = s.FLOPs
		}
		if s.matVec(d, g, t.Bytes()) {
			if s.Mask != nil {
				s.UnmaskedBytes = s.Bytes
				s.priceMask()
			}
			narrow := d.X
			if s.MatVec.Wide == 0 {
				narrow = d.Y
			}
			s.hoist(t, d, narrow)
			if s.KMask = contraction.KMaskOf(d); s.KMask != nil {
				s.LiveK = s.K
			}
			return s, nil
		}
		if !nestsReduce(d.Reduce) {
			tm, tn := tileShape(d.M, d.N, threads)
			s.regTile(tm, tn, g, t.Bytes())
			return s, nil
		}
		// A reduction nested in a factor is computed once per tile and
		// row only by matrix-vector tiles (recompute.go); backend/lower
		// computes any other such contraction a block per output, and
		// its schedule is that one's, shared memory and all.
		s.set(base)
	}
	reds := te.TopReduces(t.Body)
	if ext := maxExtent(reds); len(reds) > 0 && ext >= rowReduceMin {
		// An argmax too: the block's threads merge their candidates
		// (backend/lower's argBlockReduce), so the greedy token of a
		// 128256-word vocabulary is not one thread's serial loop; where
		// the outputs are too few to fill the GPU, split makes it a
		// split reduction of (value, position) pairs (argChunks).
		s.Kind = schedule.RowReduce
		s.Tiles = n
		s.SetArrays(rowReduceArrays(reds, threads)...)
		if p, ok := reduceVectorPath(t); ok {
			s.Load = p
		}
		if !serialReduces(t, reds) {
			return s, nil
		}
		// A thread an output: backend/lower's reduce, scalar loads in
		// unrolled loops.
		serial := stage{&schedule.Schedule{Kind: schedule.Elementwise, Threads: threads, RegsPerThread: 32,
			Tiles: te.CeilDiv(n, threads), Load: unrolledPath(t)}, s.Price}
		// Each alone on the GPU, its re-reads hitting in L2; a block per
		// output at least a round trip a wave of tiles.
		dram := p.Foot
		if dram == 0 {
			dram = p.Bytes
		}
		own, _ := g.BlocksPerSM(s.Resources().Block())
		block := max(cost.Alone(g, s.Schedule, s.Price, dram), cost.RowTilesTime(g, s.Schedule, g.SMs*max(own, 1)))
		// Where the outputs are fewer than a block's threads, only
		// theirs have loads in flight.
		alone := max(cost.Alone(g, serial.Schedule, serial.Price, dram), cost.LatencyTime(g, serial.Schedule, serial.Price, dram, n))
		if alone < block {
			return serial, nil
		}
		return s, nil
	}
	s.Kind = schedule.Elementwise
	s.Tiles = te.CeilDiv(n, threads)
	s.Load = unrolledPath(t)
	return s, nil
}

// tileShape returns TileM×TileN = threads, TileM a power of two up to 32
// that divides threads and TileN at least 8, that loads the least from
// global memory: each of the ⌈N/TileN⌉ column tiles reads all of X (M×K),
// each of the ⌈M/TileM⌉ row tiles all of Y (K×N); ties go to the squarer
// tile. Any block size has one (TileM = 1 divides it), so a block that is
// not a power of two (a GPU allowing 96 or 33 threads) still has every
// thread on the tile.
func tileShape(m, n, threads int) (int, int) {
	bestM, bestN := 1, threads
	var best float64 = -1
	for tm := 1; tm <= 32 && tm <= threads; tm *= 2 {
		tn := threads / tm
		if tn < 8 || tm*tn != threads {
			continue
		}
		cost := float64(m)*float64(te.CeilDiv(n, tn)) + float64(n)*float64(te.CeilDiv(m, tm))
		if best < 0 || cost < best || (cost == best && abs(tm-tn) < abs(bestM-bestN)) {
			bestM, bestN, best = tm, tn, cost
		}
	}
	return bestM, bestN
}

// Limits of register tiles: the outputs of a contraction's thread along
// each dimension, and the block tile's extent along one dimension (the
// staged factor tile is that × TileK × 4 bytes of shared memory: 8 KB).
const (
	maxReg  = 4
	maxTile = 128
)

// regTile gives the contraction s, on a tm×tn grid of threads, the
// register tile (up to maxReg×maxReg outputs per thread, powers of two)
// that lets it run fastest on g: a larger tile reaches more of the FP32
// peak (Efficiency) but makes fewer, larger tiles, and a stage with fewer
// tiles than SMs leaves SMs idle (as the cost model charges it). A tile is not considered if it
// pads a dimension by more than an eighth beyond one output per thread
// along it, exceeds maxTile along it, or, where the other dimension has a
// single thread (a matrix-vector product), grows along it at all: the
// other factor is not re-read, and the larger tile would only cost shared
// memory. out is the size of the output in bytes.
func (s stage) regTile(tm, tn int, g gpu.Model, out int64) {
	options := func(n, t, u int) []int {
		rs := []int{1}
		pad := func(r int) int { return te.CeilDiv(n, r*t) * r * t }
		for r := 2; u > 1 && r <= maxReg && r*t <= min(n, maxTile); r *= 2 {
			if 8*pad(r) <= 9*pad(1) {
				rs = append(rs, r)
			}
		}
		return rs
	}
	bestM, bestN, best := 1, 1, -1.0
	for _, rm := range options(s.M, tm, tn) {
		for _, rn := range options(s.N, tn, tm) {
			s.tile(tm, tn, rm, rn, out)
			score := cost.Efficiency(s.Schedule) * min(1, float64(s.Tiles)/float64(g.SMs))
			if score > best || score == best && rm*rn > bestM*bestN {
				bestM, bestN, best = rm, rn, score
			}
		}
	}
	s.tile(tm, tn, bestM, bestN, out)
}

// shrink makes the tile of a contraction on a grid of threads (not a
// matrix-vector, resident or tensor-core one) smaller until a block of it
// fits on an SM of g, and reports whether one does: it halves the larger
// side of the register tile down to one output per thread, then the k
// staged at once (TileK) down to 1, so that the staged factors take less
// shared memory. The block keeps its threads. out is the size of the
// output in bytes.
func (s stage) shrink(g gpu.Model, out int64) bool {
	if s.Kind != schedule.Contraction || s.MatVec != nil || s.Resident != nil || s.TensorCores || s.RegM < 1 || s.RegN < 1 {
		return false
	}
	tm, tn := s.TileM/s.RegM, s.TileN/s.RegN
	for {
		if n, _ := g.BlocksPerSM(s.Resources().Block()); n > 0 {
			return true
		}
		rm, rn, tk := s.RegM, s.RegN, s.TileK
		switch {
		case rm >= rn && rm > 1:
			rm /= 2
		case rn > 1:
			rn /= 2
		case tk > 1:
			tk /= 2
		default:
			return false
		}
		s.tileK(tm, tn, rm, rn, tk, out)
	}
}

// matVec gives the contraction d a MatVec schedule and reports whether it
// is one: one factor with at most matVecMaxRows rows whose rows fit in
// shared memory. It takes the widest tile (a power of two that divides the
// columns, and each part of a horizontally concatenated wide factor, up
// to matVecMaxTileF, or a warp's columns where K is short) that still
// gives every SM a tile, or one column per tile; with several rows,
// several columns per thread or one, whichever the cost model predicts
// faster. out is the size of the output in bytes.
func (s stage) matVec(d contraction.Dims, g gpu.Model, out int64) bool {
	mv := &schedule.MatVec{Wide: 1}
	rows, cols := d.M, d.N
	wide, axes := d.Y, d.NAxes
	if d.N < d.M {
		mv.Wide, rows, cols = 0, d.N, d.M
		wide, axes = d.X, d.MAxes
	}
	// A few rows rounded to f16 or bf16 on tensor cores where they can.
	if s.mmaMatVec(d, g, out) {
		return true
	}
	// A tile reads one part of a horizontally concatenated wide factor
	// where it can (setLoads).
	parts := wideParts(wide, axes)
	if rows > matVecMaxRows || s.Threads%matVecMaxTileF != 0 {
		return false
	}
	// Narrower tiles make more of them, for more SMs, but split K among
	// more threads: keep at least matVecMinK of it to each.
	// A K so short that tiles of matVecMaxTileF columns leave a thread
	// less than that (an attention head's 64) takes tiles of a column a
	// thread up to twice as wide as leave it that much: two 16-byte loads
	// in flight a thread rather than one.
	short := te.NextPow2(te.CeilDiv(s.Threads*matVecMinK, d.K))
	widestF := matVecMaxTileF
	if short > widestF && short <= min(warpLanes, s.Threads) {
		// a power of two that divides the threads (of a block of 96,
		// 32), which split K among them
		widestF = min(2*short, s.Threads)
		for s.Threads%widestF != 0 {
			widestF /= 2
		}
	}
	narrowest := min(widestF, short)
	// Several rows share each thread's load of the wide factor; several
	// columns per thread share its loads of the rows too (Efficiency), as
	// long as the tiles still fill the SMs.
	// The threads' partial sums, rows × Cols each, take shared memory:
	// no more than the rows staged.
	// On a GPU of little shared memory, the partials take at most half
	// of a block's, the rows staged the rest.
	cols1 := 1
	for rows > 1 && cols1 < matVecMaxCols && 4*s.Threads*rows*cols1*2 <= min(matVecMaxStage, g.SharedPerBlock/2) {
		cols1 *= 2
	}
	// The widest tile that divides the columns (and the parts, where
	// parts is set) and still fills the SMs, at most columns per thread
	// or fewer.
	widest := func(parts []colPart, most int) (int, int) {
		mv.Cols = most
		for {
			mv.TileF = matVecMaxTileF
			if mv.Cols == 1 {
				mv.TileF = widestF
			}
			for mv.TileF > 1 && (!widthFits(mv.Width(), cols, parts) || (mv.TileF > narrowest && d.Batch*cols/mv.Width() < g.SMs)) {
				mv.TileF /= 2
			}
			if mv.Cols == 1 || widthFits(mv.Width(), cols, parts) && d.Batch*cols/mv.Width() >= g.SMs {
				return mv.TileF, mv.Cols
			}
			mv.Cols /= 2
		}
	}
	// Tiles within the parts of a horizontally concatenated wide factor,
	// unless that makes them narrower: then they read it through its
	// selects (a select on one column, as a decode step's new key, makes
	// a part of one column).
	tiling := func(most int) (int, int) {
		tf, c := widest(parts, most)
		if tf0, c0 := widest(nil, most); tf*c < tf0*c0 {
			tf, c = tf0, c0
		}
		return tf, c
	}
	tf, c := tiling(cols1)
	if c == 1 || plainLoads(partExprs(parts)) {
		mv.TileF, mv.Cols = tf, c
		return s.setMatVec(d, mv, g, out)
	}
	// A thread's columns share its loads of the rows, but a wide factor
	// computed from its loads (a select of a decode step's new key or the
	// cache) is then read a scalar at a time (setLoads), where one column
	// a thread reads it 16 bytes at a time: the cost model chooses.
	// (tiling works in mv: each tiling is taken before the next.)
	tf1, _ := tiling(1)
	mv.TileF, mv.Cols = tf, c
	one := *mv
	one.TileF, one.Cols = tf1, 1
	kept := s.clone()
	if !s.setMatVec(d, &one, g, out) {
		s.set(kept)
		return s.setMatVec(d, mv, g, out)
	}
	alt := s.clone()
	s.set(kept)
	if !s.setMatVec(d, mv, g, out) || cost.Solo(g, alt.Schedule, alt.Price) < cost.Solo(g, s.Schedule, s.Price) {
		s.set(alt)
	}
	return true
}

// setMatVec gives the contraction d the matrix-vector schedule mv, whose
// Wide, TileF and Cols are chosen, and reports whether it is one: every
// thread has k to sum, and the rows fit in shared memory (in chunks of K
// if need be, beside the partials in g's shared memory per block). out is
// the size of the output in bytes.
//
// Rows staged in chunks take matVecMaxStage bytes, or more where a chunk
// of that size gives a thread fewer 16-byte loads of the wide factor than
// it must keep in flight (wantInFlight: a chunk's loads are all a thread
// can issue before the barrier that stages the next), as long as the
// deeper chunk keeps the blocks an SM holds: eight rows of an FFN's 8192,
// 512 of k a chunk, leave a thread of 64 a column one load in flight
// between barriers; 2048 give it four.
func (s stage) setMatVec(d contraction.Dims, mv *schedule.MatVec, g gpu.Model, out int64) bool {
	first := *mv
	if !s.setMatVecStaged(d, mv, g, out, matVecMaxStage) {
		return false
	}
	for budget := 2 * matVecMaxStage; budget <= matVecMaxChunk && mv.Chunk > 0 && mv.Vec > 0 && mv.InFlight < s.wantInFlight(g); budget *= 2 {
		blocks, _ := g.BlocksPerSM(s.Resources().Block())
		kept := s.clone()
		deeper := first
		if !s.setMatVecStaged(d, &deeper, g, out, budget) || deeper.StagedK(d.K) <= mv.StagedK(d.K) || deeper.InFlight <= mv.InFlight {
			s.set(kept)
			break
		}
		if n, _ := g.BlocksPerSM(s.Resources().Block()); n < blocks {
			s.set(kept)
			break
		}
		*mv = deeper
		s.MatVec = mv
	}
	return true
}

// setMatVecStaged is setMatVec with at most budget bytes of the rows
// staged at once.
func (s stage) setMatVecStaged(d contraction.Dims, mv *schedule.MatVec, g gpu.Model, out int64, budget int) bool {
	rows, cols := d.M, d.N
	if mv.Wide == 0 {
		rows, cols = d.N, d.M
	}
	if mv.Cols <= 1 {
		if n := columnVectors(d, mv.Wide, mv.Width(), s.Threads); n > 0 {
			mv.TileF, mv.Cols, mv.ColVec = mv.Width()/n, n, n
		}
	}
	mv.NT, mv.Split = cols/mv.Width(), s.Threads/mv.TileF
	if mv.Split > d.K {
		return false // threads with no k to sum: a tile of one output per thread does better
	}
	stage := min(budget, g.SharedPerBlock-4*s.Threads*rows*mv.Cols)
	if 4*rows*d.K > stage {
		mv.Chunk = matVecChunk(d.K, rows, mv.Split, stage)
		if mv.Chunk == 0 {
			return false
		}
	}
	s.MatVec = mv
	staged := mv.StagedK(d.K)
	// A thread's outputs are rows × Cols, its loads per k rows from
	// shared memory and Cols from global: Efficiency's RegM × RegN.
	s.TileM, s.TileN, s.TileK, s.RegM, s.RegN = rows, mv.Width(), staged, rows, mv.Cols
	if mv.Wide == 0 {
		s.TileM, s.TileN = mv.Width(), rows
	}
	s.Tiles = d.Batch * mv.NT
	s.SetArrays(schedule.Array{DType: te.F32, Len: rows * staged}, schedule.Array{DType: te.F32, Len: rows * max(mv.Cols, 1) * s.Threads})
	s.RegsPerThread = 32 + rows*mv.Cols + rows + mv.Cols
	s.setLoads(d, mv, g)
	if mv.KLanes {
		arrays := []schedule.Array{{DType: te.F32, Len: rows * mv.StagedLen(staged)}, {DType: te.F32, Len: rows * max(mv.Cols, 1) * s.Threads}}
		if mv.Ring > 0 {
			arrays = append(arrays, mv.RingArray(s.Threads))
		}
		s.SetArrays(arrays...)
	}
	s.Bytes = cost.MatVecBytes(d, mv, out)
	return true
}

// matVecChunk returns the largest part of K, a multiple of split that
// divides K, whose rows fit in stage bytes of shared memory, or 0 if there
// is none.
func matVecChunk(k, rows, split, stage int) int {
	for c := stage / (4 * rows) / split * split; c >= split; c -= split {
		if k%c == 0 {
			return c
		}
	}
	return 0
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func maxExtent(rs []*te.Reduce) int {
	m := 0
	for _, r := range rs {
		m = max(m, product(r.Axes))
	}
	return m
}

// nestsReduce reports whether a reduction lies in r's body.
func nestsReduce(r *te.Reduce) bool {
	found := false
	te.Walk(r.Body, func(e te.Expr) bool {
		_, found = e.(*te.Reduce)
		return !found
	})
	return found
}

// hoist gives matrix-vector stage s (dims d, narrow factor x) the shared
// array in which its tiles keep the reductions nested in x, one per row
// (HoistedReductions), and prices its tiles as they work
// (cost.Price.Hoisted).
func (s stage) hoist(t *te.Tensor, d contraction.Dims, x te.Expr) {
	s.Price.Hoisted(t, d, s.MatVec, x)
	rows := d.M
	if s.MatVec.Wide == 0 {
		rows = d.N
	}
	if hs := contraction.HoistedReductions(x); len(hs) > 0 {
		s.SetArrays(append(slices.Clip(s.Arrays), schedule.Array{DType: te.F32, Len: len(hs) * rows})...)
	}
}

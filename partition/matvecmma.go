package partition

import (
	"tec/contraction"
	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// Matrix-vector products of a few rows on tensor cores
// (schedule.MatVec.MMA). A batched decode step's projections multiply 2 to
// 16 rows by weights read once: on CUDA cores each weight element loaded
// costs each row a word of the staged rows from shared memory, eight rows
// a shared-memory wavefront for every 16 bytes of weights that a warp
// loads, which an SM's share of the DRAM's bandwidth outruns. An MMA takes
// the rows as A, zero-padded to 16, and eight columns as B: a lane's
// 16-byte load of its column is its B fragments of two MMAs, and two
// one 16-byte read of its row in shared memory their A fragments (k permuted
// within each step of 32, schedule.MMAPhysK), a quarter of a wavefront
// per 16 bytes of weights.

// mmaMaxRows bounds the rows of a tensor-core matrix-vector tile: an
// MMA's M.
const mmaMaxRows = 16

// mmaMatVec gives the contraction d a tensor-core matrix-vector schedule
// and reports whether it is one: 2 to mmaMaxRows rows of a narrow factor
// rounded to f16 or bf16, a wide factor whose parts are plain loads of
// that type, contiguous and 16-byte aligned along k, columns (and parts)
// in multiples of MMAColumns, no mask, and a GPU with mma.m16n8k16. A
// tile is G groups of MMAColumns columns, a group to each of the block's
// warps in turn, the S warps of a group each taking every S-th step of
// MMAStepK of the k staged. The rows are staged as setMatVec stages them,
// but in the operands' type, MMARowPad elements longer, in chunks of whole
// rounds of a group's steps: at most matVecMaxStage bytes, or deeper, to
// matVecMaxChunk, while the deeper chunk, whose warps have more steps'
// loads in flight between barriers, does not make the stage slower alone
// on g (cost.Solo: its shared memory and registers may cost blocks). out
// is the size of the output in bytes.
func (s stage) mmaMatVec(d contraction.Dims, g gpu.Model, out int64) bool {
	mv := &schedule.MatVec{Wide: 1, TileF: schedule.MMAColumns, Cols: 1, Vec: 8, MMA: true}
	rows, cols := d.M, d.N
	wide, narrow, axes := d.Y, d.X, d.NAxes
	if d.N < d.M {
		mv.Wide, rows, cols = 0, d.N, d.M
		wide, narrow, axes = d.X, d.Y, d.MAxes
	}
	if rows < 2 || rows > mmaMaxRows || !g.Arch.MMAK16() || s.Mask != nil || contraction.KMaskOf(d) != nil ||
		len(d.Reduce.Axes) != 1 || s.Threads%warpLanes != 0 {
		return false
	}
	parts := wideParts(wide, axes)
	// The widest tile, a column group of MMAColumns for each of 1, 2, 4,
	// ... of the block's warps, that divides the columns and the parts,
	// whose warps of a group split K in whole steps, and that still gives
	// every SM a tile (or the narrowest): the tiles' shared work (staging
	// the rows, a nested reduction's prologue) is then spread over the
	// most columns.
	warps := s.Threads / warpLanes
	var tp []schedule.Part
	ok := false
	for tf := schedule.MMAColumns * warps; tf >= schedule.MMAColumns && !ok; tf /= 2 {
		mv.TileF = tf
		tp, ok = tileParts(parts, tf)
		ok = ok && cols%tf == 0 && d.K%(schedule.MMAStepK*warps*schedule.MMAColumns/tf) == 0 &&
			(d.Batch*cols/tf >= g.SMs || tf == schedule.MMAColumns)
	}
	if !ok {
		return false
	}
	fs := make([]te.Expr, len(parts))
	for i, p := range parts {
		fs[i] = p.f
	}
	k := d.Reduce.Axes[0]
	in, ok := contraction.TensorCoreType(narrow, fs[0])
	if !ok || in == te.F32 || !plainLoads(fs) || vecElems(fs, k) != mv.Vec {
		return false
	}
	for _, f := range fs[1:] {
		if f.(*te.Load).Tensor.DType != in {
			return false
		}
	}
	if len(tp) > 1 {
		mv.Parts = tp
	}
	mv.NT, mv.Split = cols/mv.TileF, s.Threads/mv.TileF
	// k a round of a column group's warps takes.
	step := schedule.MMAStepK * warps * schedule.MMAColumns / mv.TileF
	red := 4 * rows * s.Threads
	// chunk returns the deepest k staged at once, a multiple of step that
	// divides K, within budget bytes of shared memory beside the
	// partials; 0 where none fits.
	chunk := func(budget int) int {
		for c := d.K; c >= step; c -= step {
			if d.K%c == 0 && in.Size()*rows*(c+schedule.MMARowPad) <= min(budget, g.SharedPerBlock-red) {
				return c
			}
		}
		return 0
	}
	set := func(staged int) {
		mv.Chunk = 0
		if staged < d.K {
			mv.Chunk = staged
		}
		if n := stageElems(narrow, k, append(append([]*te.Var{}, d.MAxes...), d.BatchAxes...)); n > 0 && staged%n == 0 {
			mv.StageVec = n
		}
		s.MatVec = mv
		s.TileM, s.TileN, s.TileK, s.RegM, s.RegN = rows, mv.TileF, staged, rows, 1
		if mv.Wide == 0 {
			s.TileM, s.TileN = mv.TileF, rows
		}
		s.Tiles = d.Batch * mv.NT
		s.SetArrays(schedule.Array{DType: in, Len: rows * mv.StagedLen(staged)}, schedule.Array{DType: te.F32, Len: rows * s.Threads})
		// A warp issues the loads of all its steps of a chunk, or of the
		// most of them up to maxInFlight that divide them into whole
		// rounds, before it computes any: the barrier that stages the
		// next chunk would drain them anyway.
		steps := staged / step
		mv.InFlight = min(steps, maxInFlight)
		for steps%mv.InFlight != 0 {
			mv.InFlight--
		}
		s.RegsPerThread = mmaMatVecRegs(mv.InFlight, rows)
		// A warp's load takes 64 bytes of each of eight columns: two
		// lines of 128 bytes for each 128 bytes.
		s.Load = schedule.LoadPath{Width: 16, InFlight: mv.InFlight, Lines: 2}
		s.Bytes = cost.MatVecBytes(d, mv, out)
	}
	staged := chunk(matVecMaxStage)
	if staged == 0 {
		return false
	}
	set(staged)
	for budget := 2 * matVecMaxStage; budget <= matVecMaxChunk && staged < d.K; budget *= 2 {
		deeper := chunk(budget)
		if deeper <= staged {
			continue
		}
		before := cost.Solo(g, s.Schedule, s.Price)
		kept, had := s.clone(), *mv
		set(deeper)
		if cost.Solo(g, s.Schedule, s.Price) > before {
			s.set(kept)
			*mv = had
			s.MatVec = mv
			break
		}
		staged = deeper
	}
	return true
}

// mmaMatVecRegs is the registers a thread of a tensor-core matrix-vector
// tile takes with inFlight steps' loads in flight: the indexes, the four
// accumulators, each step's vector of its column (4), and, for the step
// it computes, its row's staged vector and the A fragments packed from it
// (8, 16 where there are more than 8 rows).
func mmaMatVecRegs(inFlight, rows int) int {
	a := 8
	if rows > 8 {
		a = 16
	}
	return 36 + 4*inFlight + a
}

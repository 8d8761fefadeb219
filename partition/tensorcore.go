package partition

import (
	"strings"

	"tec/contraction"
	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// unfusedTensorCores makes the schedule of contraction t, in a kernel of
// its own with blocks of at most threads threads, the tensor-core one
// that backend/lower.Unfused builds where it applies (TensorCoreBlock),
// and reports whether it did.
func (s stage) unfusedTensorCores(t *te.Tensor, threads int, g gpu.Model) bool {
	if threads < schedule.TensorCoreWarps*32 || s.Kind != schedule.Contraction {
		return false
	}
	d, ok := contraction.Of(t)
	if !ok {
		return false
	}
	simt := s.clone()
	if !s.tensorCores(t, d, schedule.TensorCoreBlock(d.M, d.N), g) || !fits(s.Schedule, g) {
		s.set(simt)
		return false
	}
	return true
}

// fits reports whether a block of s's stage fits on an SM of g (its shared
// memory, registers and threads): a tensor-core tile that does not is left
// for the SIMT one.
func fits(s *schedule.Schedule, g gpu.Model) bool {
	n, _ := g.BlocksPerSM(s.Resources().Block())
	return n > 0
}

// fusedTensorCores makes the schedule of contraction t, a stage of a fused
// kernel whose blocks have threads threads, a tensor-core one that
// backend/lower.Fused builds, with the block of the kernel's warps
// (TensorCoreBlocks) that the cost model predicts fastest on g (the
// tiles' fraction of the tensor peak, times the share of the SMs they
// keep busy), where it applies and is faster than the SIMT tile, and
// reports whether it did. A matrix-vector schedule (a factor of at most
// eight rows, too few for an MMA's sixteen) is kept.
func (s stage) fusedTensorCores(t *te.Tensor, threads int, g gpu.Model) bool {
	if s.Kind != schedule.Contraction || s.MatVec != nil || threads%32 != 0 {
		return false
	}
	d, ok := contraction.Of(t)
	if !ok {
		return false
	}
	simt := s.clone()
	best, bestTime := s.clone(), cost.Ideal(g, s.Schedule, s.Price)
	for _, b := range schedule.TensorCoreBlocks(d.M, d.N, threads/32) {
		s.set(simt)
		if !s.tensorCores(t, d, b, g) {
			break
		}
		if !fits(s.Schedule, g) {
			continue
		}
		whole := s.clone()
		for split := 1; split == 1 || s.splitK(split, g); split *= 2 {
			if tt := cost.Ideal(g, s.Schedule, s.Price); tt < bestTime {
				best, bestTime = s.clone(), tt
			}
			s.set(whole)
		}
	}
	s.set(best)
	return s.TensorCores
}

// splitK makes tensor-core schedule s split its K over split blocks per
// output tile, each summing an equal chunk of K that is a multiple of the
// staged k (so that every block's k loop has the same trips), where the output
// tiles alone keep fewer blocks busy than g has SMs; it reports whether it
// did.
// A masked contraction (dead tiles write the select's other branch; a
// mask on K prices a live share of it) is not split.
func (s stage) splitK(split int, g gpu.Model) bool {
	if s.Mask != nil || s.KMask != nil || s.Tiles*split/2 >= g.SMs {
		return false
	}
	if split < 2 || s.K%(split*schedule.TensorCoreTileK) != 0 {
		return false
	}
	s.KSplit, s.KChunk = split, s.K/split
	s.Tiles *= split
	// A split tile stores partials: its epilogue's columns are the
	// finishing pass's, not staged (the arrays after the operands' and
	// the k slices' sums).
	base := 2
	if s.KSlices > 1 {
		base++
	}
	s.SetArrays(s.Arrays[:min(base, len(s.Arrays))]...)
	return true
}

// tensorCores makes the schedule of contraction t (of dimensions d) the
// tensor-core one of block b, where t's operands and extents allow it,
// and reports whether it did. A masked contraction skips the tiles its
// mask removes (schedule.Schedule.Mask), priced as the SIMT tiles are.
func (s stage) tensorCores(t *te.Tensor, d contraction.Dims, b schedule.TCBlock, g gpu.Model) bool {
	in, ok := contraction.TensorCoreType(d.X, d.Y)
	if !ok || !contraction.TensorCoreFits(in, d.M, d.N, d.K) {
		return false
	}
	size := 2
	if in == te.F32 {
		size = 4
	}
	warps := b.WGM * b.WGN * b.KSlices()
	s.TensorCores, s.TensorIn = true, in
	s.MatVec = nil
	s.Threads = warps * 32
	s.RegM, s.RegN = 1, 1
	s.TileM, s.TileN, s.TileK = b.TM, b.TN, schedule.TensorCoreTileK
	s.WarpsM, s.WarpsN, s.KSlices = b.WGM, b.WGN, b.KSlices()
	mt, nt := te.CeilDiv(d.M, s.TileM), te.CeilDiv(d.N, s.TileN)
	s.Tiles = s.Batch * mt * nt
	// Two stages of operands where the lowering double-buffers them
	// (those it moves 16 bytes at a time), else one.
	st := contraction.StagingOf(d.X, d.Y, in, d.MAxes, d.NAxes, d.Reduce, d.M, d.N, d.K, g.Arch.AsyncCopy())
	stages := st.Stages()
	var reduce []schedule.Array
	if b.KSlices() > 1 {
		reduce = append(reduce, schedule.Array{DType: te.F32, Len: b.ReduceBytes() / 4})
	}
	// The epilogue's columns (a bias), staged once per tile where K is
	// not split (splitK drops them) and they fit beside the operands; as
	// backend/lower does, one stage of operands where two do not fit.
	cols := contraction.EpilogueColumns(t, d.NAxes, d.N)
	colBytes := contraction.ColumnBytes(cols, s.TileN)
	if stages == 2 && 2*(s.TileM+s.TileN)*s.TileK*size+b.ReduceBytes()+colBytes > g.SharedPerBlock {
		stages = 1
	}
	if stages*(s.TileM+s.TileN)*s.TileK*size+b.ReduceBytes()+colBytes > g.SharedPerBlock {
		cols = nil
	}
	arrays := append([]schedule.Array{{DType: in, Len: stages * s.TileM * s.TileK}, {DType: in, Len: stages * s.TileK * s.TileN}}, reduce...)
	for _, ld := range cols {
		arrays = append(arrays, schedule.Array{DType: ld.Tensor.DType, Len: s.TileN})
	}
	s.SetArrays(arrays...)
	// A warp's accumulators, its fragments and the indexes.
	s.RegsPerThread = 32 + s.TileM*s.TileN*b.KSlices()/warps/32 + 16 +
		prefetchRegs(st.X, s.TileM*s.TileK, in, s.Threads) + prefetchRegs(st.Y, s.TileK*s.TileN, in, s.Threads)
	s.PipelineStages = 0 // two; deepened per kernel (deepenPipelines)
	s.Load = tensorCorePath(st, stages, s.TileM, s.TileN, s.TileK, in, s.Threads)
	s.Load.Narrow = narrowOperands(st)
	s.Bytes = cost.TileBytes(s.Schedule, size, t.Bytes())
	if s.Mask != nil {
		s.Skipped = s.Price.SkipMasked(s.Schedule, size, s.Bytes)
	}
	return true
}

// prefetchRegs returns the registers per thread that a tile of elems
// elements of type in, staged as op says by threads threads, holds
// between its loads and its stores: the bytes a register prefetch
// (contraction.StageVector) loads for each of a thread's 16-byte vectors
// of the tile, a register per 4 (the values it stores take the registers
// of those it has used), and where the vector chooses among several
// tensors (Operand.Choices), the 64-bit address of each but one.
func prefetchRegs(op contraction.Operand, elems int, in te.DType, threads int) int {
	if op.Mode != contraction.StageVector {
		return 0
	}
	per := te.CeilDiv(elems/(16/in.Size()), threads)
	return per * (op.Bytes/4 + 2*max(op.Choices-1, 0))
}

// narrowOperands describes the operands of st that move fewer than 16
// bytes a load, and why ("X 8-byte loads through registers: ..."), or "".
func narrowOperands(st contraction.Staging) string {
	var parts []string
	for _, o := range []struct {
		name string
		op   contraction.Operand
	}{{"X", st.X}, {"Y", st.Y}} {
		if n := o.op.Narrow(); n != "" {
			parts = append(parts, o.name+" "+n)
		}
	}
	return strings.Join(parts, "; ")
}

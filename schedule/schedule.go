// Package schedule is the schedule as data: how each compute tensor of a
// partition plan is computed on the GPU — the kind of code (Kind), its
// block and tiles, its matrix-vector or weight-resident tiling, its masks,
// its tensor-core use, and the scratch arrays it lays out in shared memory
// (Place) — as the planner (package partition) decides it and the
// lowering (backend/lower) reads it. It decides nothing and prices
// nothing: the planner chooses schedules, and package cost prices them.
package schedule

import (
	"fmt"

	"tec/te"
)

// Kind is the shape of the code a stage becomes; the lowering implements
// each kind, and the partitioner reasons about which block computes which
// element from it.
type Kind int

// The stage kinds.
const (
	// Elementwise computes a thread per output element over a
	// thread-stride loop; reductions in the body run serially.
	Elementwise Kind = iota
	// RowReduce computes a block per output element over a grid-stride loop:
	// the block's threads share the top-level reductions and combine them in
	// shared memory.
	RowReduce
	// Contraction computes a TileM×TileN tile of outputs per block, RegM×RegN
	// of them per thread (in registers), staging TileM×TileK and
	// TileK×TileN tiles of the two factors in shared memory.
	Contraction
	// SplitReduce is a two-phase reduction for few outputs over long
	// reductions: blocks reduce chunks of each output's range into partials
	// (atomics into global accumulators that the kernel zeroes itself, or a
	// partials buffer under --deterministic), a grid sync, then a pass that
	// finishes each output. It needs an all-resident grid.
	SplitReduce
	// Rows computes a block per row over a grid-stride loop, the block's
	// threads sharing the row's elements: an element-wise stage shaped like
	// the row reduction it reads (-O4), so that the block that reduced a
	// row also consumes it, after a block barrier instead of a grid sync.
	Rows
)

var kindNames = [...]string{Elementwise: "elementwise", RowReduce: "row-reduce", Contraction: "contraction", SplitReduce: "split-reduce", Rows: "rows"}

// String returns the kind's name.
func (k Kind) String() string { return kindNames[k] }

// Schedule is how one compute tensor is computed on the GPU: the kind of
// code, the block it runs in, its tiles and the resources of one block.
type Schedule struct {
	Kind    Kind
	Threads int // threads per block
	// Tiles is the number of block-sized work items (grid-stride loop trips
	// over the whole grid): output tiles of a contraction, outputs of a row
	// reduction, blocks' worth of elements of an element-wise stage, chunks
	// of a split reduction.
	Tiles int
	// TileM, TileN and TileK are a contraction's tile; RegM×RegN are the
	// outputs of each thread (the block's threads form a TileM/RegM ×
	// TileN/RegN grid); M, N, K and Batch its problem size.
	TileM, TileN, TileK int
	RegM, RegN          int
	M, N, K, Batch      int
	// Chunks is the number of partial reductions per output of a split
	// reduction.
	Chunks int
	// RowAxes is the number of leading axes that make a row of a Rows
	// stage (its other axes are the row's elements).
	RowAxes int
	// Arrays are the scratch arrays in shared memory that backend/lower
	// declares for the stage, and SharedBytes what they take in the
	// kernel's arenas (Place), plus the weight cache of a resident stage.
	// RegsPerThread estimates a thread's registers.
	Arrays        []Array
	SharedBytes   int
	RegsPerThread int
	// From is the compute-intensive tensor whose schedule a memory-intensive
	// one took (paper Alg. 1, lines 13-18), or nil.
	From *te.Tensor
	// MatVec, when set, tiles the contraction as matrix-vector products;
	// Resident, when set instead, does so with the wide factor kept in the
	// kernel's weight cache (-O4).
	MatVec   *MatVec
	Resident *Resident
	// EpilogueOf, when set, is the resident contraction in whose tiles'
	// epilogue this element-wise stage is computed (see Resident.Group).
	EpilogueOf *te.Tensor
	// Mask, when set, is the mask of a masked contraction (see
	// contraction.MaskedReduce): Skipped of its Tiles compute no
	// products, only the other branch of the select, and its price
	// (cost.Price) leaves their products and factor loads out.
	Mask    *Mask
	Skipped int
	// KMask, when set, is the k mask of a matrix-vector contraction (see
	// contraction.KMaskOf): its tiles skip the k where a factor is exactly 0, and
	// LiveK of its K are priced as run (all of K unless Context is set).
	KMask *Mask
	LiveK int
	// TensorCores marks a contraction computed with tensor-core MMAs of
	// operands of type TensorIn (te.F16, te.BF16, or te.F32 for TF32), in
	// a kernel of its own or a fused one, as backend/lower builds them.
	TensorCores bool
	TensorIn    te.DType
	// WarpsM×WarpsN is the grid of a tensor-core block's warps over its
	// tile, KSlices its groups of such warps along K (TCBlock).
	WarpsM, WarpsN, KSlices int
	// PipelineStages is, for a tensor-core tile whose operands cp.async
	// copies, the k steps of them its shared memory holds, 3 or 4: that
	// many less one in flight while the warps compute one (TCBlock.Stages);
	// 0 for the default, two.
	PipelineStages int
	// KSplit is the number of blocks that share each output tile of a
	// tensor-core contraction, each summing its chunk of K (KChunk) into
	// f32 partials that a finishing pass, after a grid sync, adds in chunk
	// order before the epilogue; 0 or 1 means none.
	KSplit, KChunk int
	// Load is how the stage's code moves its operands from global memory
	// (LoadPath), what the cost model prices its round trips from.
	Load LoadPath
}

// Resources returns what one block of the stage occupies.
func (s *Schedule) Resources() Resources {
	return Resources{Threads: s.Threads, SharedBytes: s.SharedBytes, Scratch: ArenasOf(s.Arrays), RegsPerThread: s.RegsPerThread}
}

// SetArrays makes arrays the stage's scratch arrays in shared memory, and
// their bytes in the kernel's arenas its SharedBytes.
func (s *Schedule) SetArrays(arrays ...Array) {
	s.Arrays = arrays
	s.SharedBytes = ArenasOf(arrays).Bytes()
}

// String formats the schedule on one line.
func (s *Schedule) String() string {
	str := fmt.Sprintf("%s threads=%d tiles=%d smem=%dB regs=%d", s.Kind, s.Threads, s.Tiles, s.SharedBytes, s.RegsPerThread)
	switch s.Kind {
	case Contraction:
		str += fmt.Sprintf(" tile=%dx%dx%d (M=%d N=%d K=%d batch=%d)", s.TileM, s.TileN, s.TileK, s.M, s.N, s.K, s.Batch)
		if s.RegM*s.RegN > 1 {
			str += fmt.Sprintf(" %dx%d per thread", s.RegM, s.RegN)
		}
		if s.Mask != nil {
			str += fmt.Sprintf(" masked: %d tiles skipped", s.Skipped)
			if n := len(s.Mask.Scalars); n > 0 {
				str += fmt.Sprintf(" (at run time, by %d scalars", n)
				if s.Mask.Context > 0 {
					str += fmt.Sprintf("; priced at context %d", s.Mask.Context)
				}
				str += ")"
			}
		}
		if s.KMask != nil {
			str += fmt.Sprintf(" zero past a mask: %d of K=%d live", s.LiveK, s.K)
			if s.KMask.Context > 0 {
				str += fmt.Sprintf(" (priced at context %d)", s.KMask.Context)
			}
		}
		if s.TensorCores {
			in := s.TensorIn.String()
			if s.TensorIn == te.F32 {
				in = "tf32"
			}
			str += fmt.Sprintf(" tensor cores %s, %dx%d warps", in, max(s.WarpsM, 1), max(s.WarpsN, 1))
			if s.KSlices > 1 {
				str += fmt.Sprintf(" × %d k slices", s.KSlices)
			}
			if s.PipelineStages > 2 {
				str += fmt.Sprintf(", %d cp.async stages", s.PipelineStages)
			}
			if s.KSplit > 1 {
				str += fmt.Sprintf(", k split over %d blocks", s.KSplit)
			}
		}
	case SplitReduce:
		str += fmt.Sprintf(" chunks=%d", s.Chunks)
	case Rows:
		str += fmt.Sprintf(" row-axes=%d", s.RowAxes)
	}
	if m := s.MatVec; m != nil {
		str += fmt.Sprintf(" matvec: %d columns per tile, %d threads per column", m.Width(), m.Split)
		if m.KLanes {
			str += " on a warp's lanes"
		}
		if m.Cols > 1 {
			str += fmt.Sprintf(", %d columns per thread", m.Cols)
		}
		if len(m.Parts) > 1 {
			str += fmt.Sprintf(", %d parts", len(m.Parts))
		}
		switch {
		case m.MMA:
			str += fmt.Sprintf(", on tensor cores (m16n8k16, rows padded to 16), 16-byte loads (%d in flight)", m.InFlight)
		case m.Ring > 0:
			str += fmt.Sprintf(", 16-byte cp.async through a ring of %d", m.Ring)
		case m.Vec > 0:
			str += fmt.Sprintf(", 16-byte loads (%d in flight)", m.InFlight)
		case m.ColVec > 0:
			str += fmt.Sprintf(", 16-byte loads across them (%d in flight)", m.InFlight)
		}
	}
	if r := s.Resident; r != nil {
		str += fmt.Sprintf(" resident weights: %d×%d slices, %d threads per column", s.K, r.TileF, r.Split)
	}
	if r := s.Resident; r != nil && r.Group > 1 {
		str += fmt.Sprintf(", %d batch entries per tile", r.Group)
	}
	if s.EpilogueOf != nil {
		str += " in the epilogue of " + s.EpilogueOf.Name
	}
	if s.From != nil {
		str += " from " + s.From.Name
	}
	return str
}

// MatVec tiles a contraction one of whose factors has few rows (at most
// matVecMaxRows points of its own axes: a matrix-vector product, or a few
// vectors) by the columns of the other, wide factor: a tile computes every
// row for TileF columns, the block's threads forming Split × TileF, each
// summing every Split-th k of its column, and the Split partial sums of a
// column are combined in shared memory. All the tile's rows are staged in
// shared memory for the whole of K. Unlike a TileM × TileN tile, whose
// threads along M would have no rows to compute, every thread works, and
// the wide factor is read once.
type MatVec struct {
	// Wide is 0 when the wide factor is the contraction's X (Dims.X; its
	// own axes, M, are the columns), 1 when it is Y (N).
	Wide int
	// TileF is the wide factor's columns per tile, NT its tiles along
	// them, Split the threads that share one column's k range.
	TileF, NT, Split int
	// Chunk, when not 0, is the part of K whose rows are staged in shared
	// memory at once (a multiple of Split that divides K): a tile stages
	// and sums K/Chunk chunks in turn, so that rows too long for shared
	// memory (an FFN's 8192, or eight rows of 2048) still make a
	// matrix-vector tile. 0 stages all of K.
	Chunk int
	// Cols is the columns each thread sums (0 or 1: one): thread col of
	// a tile takes columns col + c·TileF, c < Cols, of the tile's
	// TileF·Cols (col·Cols + c where ColVec is set), so that each row
	// element it loads from shared memory serves Cols products.
	Cols int
	// ColVec, when not 0, is the elements of the wide factor a thread
	// loads at once across its columns, which are then consecutive
	// (Cols = ColVec; thread col takes col·Cols to col·Cols + Cols − 1):
	// at each k, one 16-byte load of every part's loads that move along
	// its one column axis, contiguous and aligned there. It is the path
	// of a wide factor that runs along its columns, not along k (the
	// attention's weighted sum of a V cache, ctx[e] = Σ_t p[t]·v[t, e]),
	// or under a k mask, which a vector along k would straddle; Vec is
	// then 0, and InFlight is the vectors a thread issues before it uses
	// any.
	ColVec int
	// Parts, when set, are the parts of a wide factor that selects, by
	// its column, among tensors (a horizontal concatenation of
	// projections, transform.Horizontal): the tiles from Parts[i].Tile
	// up to the next part's read it as Parts[i].F. The tile width
	// divides every part, so that a tile chooses its tensor once,
	// outside its k loop, instead of at every load.
	Parts []Part
	// Vec, when not 0, is the elements of the wide factor a thread loads
	// at once, along k, with one 16-byte load (8 of f16 or bf16, 4 of
	// f32): every part reads one tensor contiguously along k, 16-byte
	// aligned at every multiple of Vec, and Vec divides the k staged at
	// once. InFlight is the 16-byte loads a thread issues before it uses
	// any of them (Little's law on the GPU's DRAM: bytes in flight per SM
	// at least its share of bandwidth × latency).
	Vec, InFlight int
	// StageVec, when not 0, is the elements of the narrow factor a thread
	// stages at once: each of its loads that moves with k reads them with
	// one 16-byte load, contiguous and aligned as Vec's are.
	StageVec int
	// KLanes, when set, lays a column's Split threads on consecutive lanes
	// of one warp: thread tid takes column tid / Split and share tid mod
	// Split of K (else column tid mod TileF and share tid / TileF). A
	// warp's 16-byte loads of a column are then contiguous, its sums
	// combine by shuffles alone, with no shared memory and no barrier, and
	// the lane of share 0 writes the column. The staged rows are laid out
	// for those lanes (StagedLen). Set where Vec is, StageVec is Vec (or
	// divides it, for rows staged from narrower loads), the narrow factor
	// has at most 8 rows (a decode step's one, or the query heads that
	// share a key head: transform.GroupRows), each of whose elements a
	// lane reads once for its column, a thread sums one column, Split
	// divides a warp, and the tile has no k mask.
	KLanes bool
	// Ring, when not 0, is the depth of a ring of shared memory, Ring
	// 16-byte slots a thread, through which the thread streams the wide
	// factor's vectors with cp.async: it keeps Ring − 1 of them in flight
	// while it sums one, across its rounds and on into the first vectors
	// of its next tile, instead of issuing InFlight loads into registers
	// and waiting for them all (what the hand-written decode megakernels
	// do). Set where KLanes is, every part is a weight (a param, which no
	// stage writes, so that the next tile's vectors may be copied before
	// that tile's dependences are met) read as a plain load, the tile
	// stages all of K at once, and the GPU has cp.async; Ring divides the
	// vectors a thread sums a tile (RingVectors).
	Ring int
	// RingType is the element type of the wide factor that the ring
	// holds (its parts all have it).
	RingType te.DType
	// MMA, when set, computes the tile's products on tensor cores
	// (mma.m16n8k16 of f16 or bf16, f32 sums), the matrix-vector product
	// of a few rows that a batched decode step's projections are: the
	// narrow factor's rows, zero-padded to 16, are A, and each warp takes
	// a group of MMAColumns of the tile's columns as B and every S-th
	// step of MMAStepK of k, S the warps of a group (Split/4: a warp
	// holds four threads of each of its columns). K is permuted within
	// a step (MMAPhysK) so that one 16-byte load of a column, Vec = 8
	// elements along k, is the warp's B fragments of the step's two MMAs,
	// and one 16-byte read of a staged row its A fragments. The rows are
	// staged in the operands' type, each MMARowPad elements longer than
	// the k staged (StagedLen), so that a quarter-warp's 16-byte reads
	// of two rows fall in distinct banks. Set where Vec is 8, every part
	// is a plain load of one f16 or bf16 type that the narrow factor is
	// rounded to (contraction.TensorCoreType), there are 2 to 16 rows, no
	// mask, TileF is a multiple of MMAColumns, and the GPU has
	// mma.m16n8k16.
	MMA bool
}

// The geometry of a tensor-core matrix-vector tile (MatVec.MMA).
const (
	// MMAColumns is the columns of a warp: an MMA's N.
	MMAColumns = 8
	// MMAStepK is the k of a warp's step: two MMAs of k 16, whose B
	// fragments one 16-byte load of eight elements holds for each lane.
	MMAStepK = 32
	// MMARowPad is the elements past each staged row of K: 64 bytes, so
	// that rows start 16 words apart modulo the 32 banks, and the two rows
	// a quarter-warp reads, 16 words each (four lanes of 16 bytes), fall
	// in distinct banks.
	MMARowPad = 32
)

// MMAPhysK returns the physical k, within a step of MMAStepK, of the
// logical k of a fragment element (A's column or B's row, as FragElem
// gives it) in the step's MMA s (0 or 1) at a lane of threadID_in_group
// t: logical 2t+e and 2t+8+e (e = 0, 1) are physical 8t+4s+e and
// 8t+4s+2+e, so that the lane's eight physical k of the step, 8t to
// 8t+7, are its B fragments in order (0-3 MMA 0's, 4-7 MMA 1's).
func MMAPhysK(s, t, logical int) int {
	return 8*t + 4*s + 2*(logical/8) + logical%2
}

// RingArray returns the ring's scratch array for blocks of threads
// threads: Ring slots of Vec elements a thread.
func (mv *MatVec) RingArray(threads int) Array {
	return Array{DType: mv.RingType, Len: mv.Ring * threads * mv.Vec}
}

// RingVectors returns the 16-byte vectors of the wide factor that a
// thread of a tile sums when the tile stages staged of K: the vectors
// along k, staged/Vec, over the Split threads of a column.
func (mv *MatVec) RingVectors(staged int) int {
	if mv.Vec <= 0 || mv.Split <= 0 {
		return 0
	}
	return staged / mv.Vec / mv.Split
}

// StagedLen returns the words a row of the narrow factor takes in shared
// memory when a tile stages staged of its k: staged, or, with KLanes, the
// row laid out for the lanes that read it, vector share kz of group i
// (vector v = i·Split + kz, of Vec elements) with element j at
// (i·(Vec+1) + j)·Split + kz. A warp's lanes then read consecutive words
// at each element, and a warp staging consecutive vectors stores to
// distinct banks at each element (its groups start Split·(Vec+1) words
// apart, not a multiple of the 32 banks).
func (mv *MatVec) StagedLen(staged int) int {
	if mv.MMA {
		return staged + MMARowPad
	}
	if !mv.KLanes || mv.Vec <= 0 || mv.Split <= 0 {
		return staged
	}
	groups := (staged/mv.Vec + mv.Split - 1) / mv.Split
	return groups * (mv.Vec + 1) * mv.Split
}

// Part is a run of a matrix-vector stage's tiles that read its wide
// factor as one expression (MatVec.Parts).
type Part struct {
	// Tile is the part's first tile along the wide factor's columns.
	Tile int
	// F is the wide factor in these tiles, its selects on the column
	// resolved.
	F te.Expr
}

// Width returns the columns of a tile, TileF × Cols.
func (mv *MatVec) Width() int { return mv.TileF * max(mv.Cols, 1) }

// StagedK returns how much of K a tile stages in shared memory at once.
func (mv *MatVec) StagedK(k int) int {
	if mv.Chunk > 0 {
		return mv.Chunk
	}
	return k
}

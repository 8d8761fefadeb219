package schedule

import "tec/te"

// The shape of a tensor-core contraction's blocks, as backend/lower
// builds them (TensorCoreBlock): TensorCoreWarps warps in a kernel of its
// own, the kernel's block in a fused one, staging TensorCoreTileK of the
// reduction at a time.
const (
	TensorCoreWarps = 4
	TensorCoreTileK = 32
)

// maxWarpMMAs bounds a warp tile's m16n8 tiles: 16 of them hold 64 f32
// accumulators per thread, which with the fragments and the indexes stay
// within the registers a thread can have without spilling.
const maxWarpMMAs = 16

// TCBlock is the shape of a tensor-core block: TM×TN outputs, its warps
// Slices groups (sliced K: group g computes the g-th share of every staged
// k step, and the groups' accumulators are summed in shared memory before
// the epilogue), each a WGM×WGN grid of warps computing a
// (TM/WGM)×(TN/WGN) warp tile of m16n8 MMA tiles. Slices 0 means 1.
type TCBlock struct {
	TM, TN, WGM, WGN, Slices int
	// Stages is the k steps of operands that the block's shared memory
	// holds where cp.async copies them (2 to MaxPipelineStages; 0 means
	// 2): Stages − 1 steps' copies in flight while the warps compute one,
	// with one block barrier a step.
	Stages int
}

// MaxPipelineStages bounds TCBlock.Stages.
const MaxPipelineStages = 4

// PipelineStages returns the k steps of operands b's shared memory holds
// where cp.async copies them: b.Stages, or 2 where it is not set.
func (b TCBlock) PipelineStages() int {
	if b.Stages < 2 {
		return 2
	}
	return b.Stages
}

// WarpTile returns the MMA tiles of one warp along M and N.
func (b TCBlock) WarpTile() (mt, nt int) { return b.TM / b.WGM / 16, b.TN / b.WGN / 8 }

// KSlices returns the block's groups of warps along K, at least 1.
func (b TCBlock) KSlices() int { return max(b.Slices, 1) }

// ReduceBytes returns the shared memory in which the groups after the
// first leave their accumulators for the first to sum.
func (b TCBlock) ReduceBytes() int { return 4 * (b.KSlices() - 1) * b.TM * b.TN }

// Valid reports whether b is a block of warps warps in which every warp
// computes whole m16n8 MMA tiles, at most maxWarpMMAs of them, and every group of a sliced K a whole
// number of an MMA's k (16; 8 for TF32) of each staged k step.
func (b TCBlock) Valid(warps int) bool {
	sl := b.KSlices()
	if b.WGM <= 0 || b.WGN <= 0 || b.WGM*b.WGN*sl != warps || b.TM%b.WGM != 0 || b.TN%b.WGN != 0 || TensorCoreTileK%(16*sl) != 0 {
		return false
	}
	wm, wn := b.TM/b.WGM, b.TN/b.WGN
	return wm >= 16 && wn >= 8 && wm%16 == 0 && wn%8 == 0 && wm/16*wn/8 <= maxWarpMMAs
}

// InnerSync reports whether s's stage has a grid sync between two phases
// of its own: a split reduction's, or a tensor-core contraction's whose K
// is split over blocks (KSplit).
func (s *Schedule) InnerSync() bool { return s.Kind == SplitReduce || s.KSplit > 1 }

// PartialBytes returns the f32 partial sums of a tensor-core contraction
// whose K is split over blocks: KSplit per output.
func (s *Schedule) PartialBytes() int64 {
	if s.KSplit <= 1 {
		return 0
	}
	return 4 * int64(s.KSplit) * int64(s.Batch) * int64(s.M) * int64(s.N)
}

// TCBlock returns the tensor-core block of schedule s.
func (s *Schedule) TCBlock() TCBlock {
	return TCBlock{TM: s.TileM, TN: s.TileN, WGM: max(s.WarpsM, 1), WGN: max(s.WarpsN, 1), Slices: s.KSlices, Stages: s.PipelineStages}
}

// TensorCoreTile returns a tensor-core block's tile along an output
// extent n: 64, or 32 where n is at most 32.
func TensorCoreTile(n int) int {
	if n <= 32 {
		return 32
	}
	return 64
}

// TensorCoreBlock returns the block of a tensor-core contraction of M
// rows and N columns in a kernel of its own: TensorCoreWarps warps as 2×2
// over a TensorCoreTile(M) × TensorCoreTile(N) tile.
func TensorCoreBlock(M, N int) TCBlock {
	return TCBlock{TM: TensorCoreTile(M), TN: TensorCoreTile(N), WGM: 2, WGN: 2}
}

// TensorCoreBlocks returns the blocks that warps warps (a power of two, at
// least TensorCoreWarps) can form over a contraction of M rows and N
// columns, one per tile: tiles of 16 (along M), 32, 64 or 128 along each
// extent (no larger than the extent needs), each with the warp grid whose warp tiles
// have the most MMAs per fragment load, then the squarest. A fused
// kernel's stage takes the one its cost model prefers
// (partition's fusedTensorCores).
func TensorCoreBlocks(M, N, warps int) []TCBlock {
	if warps < TensorCoreWarps || warps&(warps-1) != 0 {
		return nil
	}
	var out []TCBlock
	for _, tm := range []int{16, 32, 64, 128} {
		for _, tn := range []int{32, 64, 128} {
			if tm > max(16, te.NextPow2(M)) || tn > max(32, te.NextPow2(N)) {
				continue
			}
			if b, ok := warpGrid(tm, tn, warps); ok {
				out = append(out, b)
			}
		}
	}
	return out
}

// warpGrid returns the block of warps warps over a tm×tn tile whose warp
// tiles have the most MMAs per fragment load (then that slices K the
// least, then whose warp tiles are the squarest), and whether one gives
// every warp whole MMAs. Slicing K in two halves the warps of a grid and
// doubles their warp tiles, for the price of a sum of accumulators in
// shared memory once per tile.
func warpGrid(tm, tn, warps int) (TCBlock, bool) {
	var b TCBlock
	best := -1.0
	dist := func(x, y int) int { return max(x-y, y-x) }
	for _, slices := range []int{1, 2} {
		for wgm := 1; wgm*slices <= warps; wgm *= 2 {
			c := TCBlock{TM: tm, TN: tn, WGM: wgm, WGN: warps / slices / wgm, Slices: slices}
			if !c.Valid(warps) {
				continue
			}
			mt, nt := c.WarpTile()
			score := float64(mt*nt) / float64(mt+nt)
			if score > best || score == best && c.Slices == b.Slices && dist(tm/wgm, tn/c.WGN) < dist(tm/b.WGM, tn/b.WGN) {
				best, b = score, c
			}
		}
	}
	return b, best > 0
}

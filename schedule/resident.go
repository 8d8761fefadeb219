package schedule

import (
	"fmt"

	"tec/te"
)

// Resident says how a contraction stage keeps the slices of its stationary
// factor (a factor that loads only params: the weights of a matrix-vector
// product) in shared memory across the stages of its kernel (-O4), so that
// a weight reused by later stages (the steps of an LSTM) is read from
// global memory once per kernel, not once per step.
//
// The stationary factor F(b, f, k) is cut into slices of TileF columns:
// tile (b, nf) of the stage reads the slice F(b, nf·TileF + [0, TileF), all
// k). Slices that are equal whatever stage reads them share a key: the key
// of tile (b, nf) is Keys[b]·NT + nf, where Keys[b] numbers the distinct
// F(b, ·, ·) of the kernel. Key κ belongs to virtual block κ mod V and to
// its cache slot ⌊κ/V⌋ mod S (WeightCache), and is computed by whichever
// block runs that virtual block, so in every stage the same block reads
// the same slice: from shared memory after the first time, if its slot has
// kept it.
//
// A tile computes every output row of the other factor (M of them, few) for
// its TileF columns: the block's threads form Split × TileF, each summing
// every Split-th k of its column, and combine their sums in shared memory.
type Resident struct {
	// MatVec is the tiling, its wide factor the stationary one.
	MatVec
	// Keys[b] numbers the distinct slice families of batch entry b.
	Keys []int
	// Group is the number of consecutive batch entries a tile computes
	// (Keys then numbers the families of groups: Keys[i] for entries
	// [i·Group, (i+1)·Group)), so that the element-wise stages in
	// Epilogue, each reading the stage only within one group and at its
	// own output's columns and rows, are computed in the tile's epilogue
	// by the threads that wrote what they read, instead of after a grid
	// sync. EpilogueGroup[e] is the group Epilogue[e] reads, and
	// EpilogueAxes[e] maps each of its axes to the stage's axis it reads
	// at.
	Group         int
	Epilogue      []*te.Tensor
	EpilogueGroup []int
	EpilogueAxes  []map[*te.Var]*te.Var
}

// WeightCache is a kernel's shared-memory cache of stationary factors'
// slices (Resident): Slots slices of SliceFloats elements per block and a
// tag per slot, keyed as Resident describes over Virtual virtual blocks.
type WeightCache struct {
	Keys, Virtual, Slots, SliceFloats int
	// Stages are the contraction stages that read through it.
	Stages []*te.Tensor
}

// Bytes returns the cache's shared memory per block: the slices and their
// tags.
func (w *WeightCache) Bytes() int { return w.Slots * (4*w.SliceFloats + 4) }

// Resident returns how many of the cache's keys stay in shared memory once
// loaded (every block's first Slots keys; the rest evict one another).
func (w *WeightCache) Resident() int { return min(w.Keys, w.Slots*w.Virtual) }

// String describes the cache on one line.
func (w *WeightCache) String() string {
	return fmt.Sprintf("weights on chip: %d slices of %d B for %d stages, %d slots × %d virtual blocks (%d resident, %d reloaded per use)",
		w.Keys, 4*w.SliceFloats, len(w.Stages), w.Slots, w.Virtual, w.Resident(), w.Keys-w.Resident())
}

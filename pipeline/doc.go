// Package pipeline runs the whole compiler after the front end: the TE
// transforms, the partitioner and the lowering to kernel IR, at one of the
// optimisation levels of Souffle's ablation (ASPLOS'24, Table 4):
//
//	-O0  one kernel per TE
//	-O1  + horizontal transform (independent TEs concatenated)
//	-O2  + vertical transform (one-relies-on-one chains inlined)
//	-O3  + global sync: the program partitioned into grid-synced persistent
//	     kernels, two-phase split reductions, and cheap producers of
//	     matrix-vector products recomputed in each of their tiles where
//	     the cost model prices that below the grid sync it saves
//	     (transform.Recompute)
//	-O4  + subprogram-level reuse: a stage reads its own block's rows of an
//	     earlier stage after a block barrier instead of a grid sync, and row
//	     statistics read only so stay in shared memory (slots shared by
//	     results whose lives do not overlap; the least recently used spilled
//	     to global memory when Options.OnChipBytes runs out), and weights
//	     that several stages of a kernel read (an LSTM's steps) kept in a
//	     shared-memory cache, each slice always read by the same block
//	     (Options.ResidentBytes bounds it)
//
// Before them all, Options.Precision other than f32 runs the precision pass
// (package precision): half storage, or TF32 rounding of contraction
// operands, with the same rounding points for every level and for the
// reference evaluator.
//
// Build runs a table of passes (Table), in this order, each where its
// options say, and checks the program (and the plan, once made) after
// every one:
//
//	precision   Precision other than f32
//	            half storage, or TF32 rounding of contraction operands (package precision)
//	groups      -O3 and up
//	            grouped convolutions as a batched contraction of their groups (transform.GroupConvolutions)
//	flash       -O3 and up, or FlashChunks > 1
//	            softmax-weighted reductions split across blocks (flash-decoding, transform.SplitSoftmax)
//	pad         -O3 and up
//	            softmax axes of half scores padded to a multiple of 8 positions for 16-byte rows, if predicted faster (transform.PadSoftmax)
//	horizontal  -O1 and up
//	            independent TEs concatenated (transform.Horizontal)
//	vertical    -O2 and up
//	            one-relies-on-one chains inlined (transform.Vertical)
//	recompute   -O3 and up
//	            cheap producers recomputed in their consumers' tiles, if predicted faster (transform.Recompute)
//	plan        every level
//	            dependences analysed, the program partitioned into kernels (package partition)
//	kir         every level
//	            lowered to kernel IR: a kernel per TE, or grid-synced ones from -O3 (package lower)
//
// Every level computes the same result. Options.Dump receives each pass's
// result under its name, as tec build --dump-after NAME prints it.
package pipeline

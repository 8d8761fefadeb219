package kir

import "fmt"

// Counts are what executing kernels does, as the simulator measures it and
// the static report predicts it; the two must agree.
//
// FLOPs counts one for each f32-typed Unary and each f32-typed arithmetic
// Binary (+ - * / % max min pow, not comparisons) a thread evaluates, and one
// for each f32 Atomic; i32 index arithmetic, casts, comparisons and selects
// count nothing. An Atomic on a global element counts its element both as
// loaded and as stored. Shuffles counts one for each thread that evaluates
// a Shuffle. MMAs counts one for each warp that executes an MMA, whose
// 2·M·N·K multiply-adds count among the FLOPs; a VecCopy or CopyAsync
// moves 16 bytes per thread, counted as loaded from or stored to global
// memory where that is the space of its source or destination.
type Counts struct {
	LoadBytes     int64 // bytes read from global memory
	StoreBytes    int64 // bytes written to global memory
	FLOPs         int64 // f32 arithmetic operations
	BlockBarriers int64 // SyncThreads passed, once per block
	GridSyncs     int64 // GridSyncs passed, once per grid
	Shuffles      int64 // warp shuffles, once per thread
	MMAs          int64 // tensor-core MMAs, once per warp
	// CounterSignals and CounterWaits count the counter Signals and Waits
	// executed, once per block; their accesses to the counters are not
	// among the bytes, nor their block barriers among BlockBarriers.
	CounterSignals int64
	CounterWaits   int64
}

// Add adds d to c.
func (c *Counts) Add(d Counts) {
	c.LoadBytes += d.LoadBytes
	c.StoreBytes += d.StoreBytes
	c.FLOPs += d.FLOPs
	c.BlockBarriers += d.BlockBarriers
	c.GridSyncs += d.GridSyncs
	c.Shuffles += d.Shuffles
	c.MMAs += d.MMAs
	c.CounterSignals += d.CounterSignals
	c.CounterWaits += d.CounterWaits
}

// String formats the counts for people.
func (c Counts) String() string {
	s := fmt.Sprintf("load %d B, store %d B, %d FLOPs, %d block barriers, %d grid syncs",
		c.LoadBytes, c.StoreBytes, c.FLOPs, c.BlockBarriers, c.GridSyncs)
	if c.Shuffles > 0 {
		s += fmt.Sprintf(", %d shuffles", c.Shuffles)
	}
	if c.MMAs > 0 {
		s += fmt.Sprintf(", %d mma", c.MMAs)
	}
	if c.CounterSignals > 0 || c.CounterWaits > 0 {
		s += fmt.Sprintf(", %d counter signals, %d counter waits", c.CounterSignals, c.CounterWaits)
	}
	return s
}

package schedule

import "tec/gpu"

// Resources are what one block of a kernel occupies on an SM.
type Resources struct {
	Threads     int // threads per block
	SharedBytes int // shared memory per block
	// Scratch is the part of SharedBytes in the kernel's scratch arenas
	// (see Place); the rest is persistent: results kept on chip and the
	// weight cache.
	Scratch       Arenas
	RegsPerThread int
}

// Block returns the part of r that bounds a GPU's occupancy
// (gpu.Model.BlocksPerSM).
func (r Resources) Block() gpu.Block {
	return gpu.Block{Threads: r.Threads, SharedBytes: r.SharedBytes, RegsPerThread: r.RegsPerThread}
}

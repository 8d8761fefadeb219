package gpu

import "fmt"

// Block is what one thread block of a kernel occupies on an SM.
type Block struct {
	Threads       int // threads per block
	SharedBytes   int // shared memory per block
	RegsPerThread int
}

// BlocksPerSM returns how many blocks with resources b fit on one SM at
// once (occupancy), and 0 with the limiting resource when not one does.
// Registers are allocated per warp in units of 256, shared memory in units
// of 128 bytes, as on Ampere and Hopper. A block takes at least
// g.MinRegsPerThread registers per thread.
func (g Model) BlocksPerSM(b Block) (int, string) {
	b.RegsPerThread = max(b.RegsPerThread, g.MinRegsPerThread)
	if b.Threads > g.MaxThreadsPerBlock {
		return 0, fmt.Sprintf("%d threads per block > %d", b.Threads, g.MaxThreadsPerBlock)
	}
	if g.CheckShared("", int64(b.SharedBytes)) != nil {
		return 0, fmt.Sprintf("%d B shared memory per block > %d", b.SharedBytes, g.SharedPerBlock)
	}
	if b.RegsPerThread > g.MaxRegsPerThread {
		return 0, fmt.Sprintf("%d registers per thread > %d", b.RegsPerThread, g.MaxRegsPerThread)
	}
	n := g.MaxBlocksPerSM
	if b.Threads > 0 {
		n = min(n, g.MaxThreadsPerSM/b.Threads)
	}
	if b.SharedBytes > 0 {
		n = min(n, g.SharedPerSM/roundUp(b.SharedBytes, 128))
	}
	if b.RegsPerThread > 0 {
		warps := (b.Threads + 31) / 32
		perWarp := roundUp(b.RegsPerThread*32, 256)
		n = min(n, g.RegsPerSM/(perWarp*warps))
	}
	if n == 0 {
		return 0, fmt.Sprintf("%d threads × %d registers and %d B shared memory exceed one SM", b.Threads, b.RegsPerThread, b.SharedBytes)
	}
	return n, ""
}

// ResidentBlocks returns the size of an all-resident grid of blocks with
// resources b: SM count × blocks per SM (0 if a block does not fit).
func (g Model) ResidentBlocks(b Block) int {
	n, _ := g.BlocksPerSM(b)
	return g.SMs * n
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

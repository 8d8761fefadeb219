package partition

import (
	"slices"

	"tec/schedule"
	"tec/te"
)

// A matrix-vector stage's loads in flight (MatVec.InFlight, or the depth
// of its weight ring, MatVec.Ring) are chosen with the stage's own
// occupancy, before the stages are cut into kernels: by Little's law, the
// fewer of its blocks an SM runs, the more bytes each must keep in flight.
// A kernel runs at the occupancy of its heaviest stage, often fewer
// blocks than a matrix-vector stage alone would have (the decode step's
// one kernel: 4 blocks of 256 threads an SM, where its projections alone
// would have 5 to 8), so that, once the kernels are formed, each such
// stage is given what its kernel's blocks need, where that does not cost
// the kernel a block per SM: more loads in flight take 4 registers each,
// a deeper ring 16 bytes of shared memory a thread a slot. The kernels
// are then priced again with the new load paths, as after deeper
// tensor-core pipelines (deepenPipelines).

// deepenStreams gives the matrix-vector stages of the kernels that start
// at starts (c's stages, ending at the next start) the loads in flight
// that their kernel's occupancy needs, and reports whether it changed one.
func deepenStreams(c *coster, starts []int) bool {
	changed := false
	g := c.pl.GPU
	for i, s := range starts {
		e := len(c.stages)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		occ := c.kernel(s, e).BlocksPerSM
		if occ == 0 {
			continue
		}
		for j := s; j < e; j++ {
			st := c.pl.stage(c.stages[j])
			mv := st.MatVec
			if mv == nil || mv.Vec <= 0 || st.Load.Width != 16 {
				continue
			}
			blocks := min(occ, te.CeilDiv(st.Tiles, max(g.SMs, 1)))
			need := loadsToCover(g, blocks, st.Threads)
			staged := mv.StagedK(st.K)
			if mv.Ring > 0 && staged < st.K {
				changed = unring(c, s, e, occ, st, need, staged, c.pl.stageRegs[c.stages[j].Name]) || changed
				continue
			}
			if mv.Ring > 0 {
				changed = deepenRing(c, s, e, occ, st, need, staged) || changed
				continue
			}
			changed = deepenLoads(c, s, e, occ, st, need, staged, c.pl.stageRegs[c.stages[j].Name]) || changed
		}
	}
	return changed
}

// deepenRing deepens the weight ring of stage st, in kernel [s, e) of occ
// blocks per SM, to keep need vectors in flight, as far as the ring's
// bounds and the kernel's occupancy allow.
func deepenRing(c *coster, s, e, occ int, st stage, need, staged int) bool {
	mv := st.MatVec
	at := slices.Index(st.Arrays, mv.RingArray(st.Threads))
	if at < 0 || staged < st.K {
		// A ring across chunks stays at its depth (ringDepth).
		return false
	}
	per := mv.RingVectors(staged)
	base, before := slices.Clone(st.Arrays), mv.Ring
	depth := before
	for n := before * 2; n <= maxRing && n <= te.NextPow2(need+1) && per%n == 0; n *= 2 {
		mv.Ring = n
		arrays := slices.Clone(base)
		arrays[at] = mv.RingArray(st.Threads)
		st.SetArrays(arrays...)
		if st.SharedBytes > c.pl.GPU.SharedPerBlock || c.kernel(s, e).BlocksPerSM < occ {
			break
		}
		depth = n
	}
	mv.Ring = depth
	arrays := slices.Clone(base)
	arrays[at] = mv.RingArray(st.Threads)
	st.SetArrays(arrays...)
	if depth == before {
		return false
	}
	st.Load = schedule.LoadPath{Width: 16, InFlight: depth - 1, Prefetch: true, Lines: st.Load.Lines}
	return true
}

// unring takes the weight ring of stage st, whose rows are staged in
// chunks (which ringDepth keeps at minRing: deeper, ptxas spilled), back
// to register loads deepened for the kernel [s, e) of occ blocks per SM
// (deepenLoads), where the ring holds fewer than the need vectors in
// flight that its blocks need and the loads then hold more, at no block
// per SM. It reports whether it did.
func unring(c *coster, s, e, occ int, st stage, need, staged, floor int) bool {
	mv := st.MatVec
	at := slices.Index(st.Arrays, mv.RingArray(st.Threads))
	if at < 0 || need < mv.Ring {
		return false
	}
	saved, savedMV := *st.Schedule, *mv
	restore := func() bool {
		*st.Schedule, *mv = saved, savedMV
		return false
	}
	cols := max(mv.Cols, 1)
	st.SetArrays(slices.Delete(slices.Clone(st.Arrays), at, at+1)...)
	inFlight := mv.Ring - 1
	mv.Ring, mv.RingType = 0, 0
	// The ring counted one vector's registers; the loads take InFlight.
	st.RegsPerThread += 4 * (mv.InFlight*cols - 1)
	st.Load = schedule.LoadPath{Width: 16, InFlight: mv.InFlight * cols, Lines: st.Load.Lines}
	if c.kernel(s, e).BlocksPerSM < occ {
		return restore()
	}
	deepenLoads(c, s, e, occ, st, need, staged, floor)
	if st.Load.InFlight <= inFlight {
		return restore()
	}
	return true
}

// deepenLoads raises the 16-byte loads in flight of stage st's threads
// (MatVec.InFlight, into registers), in kernel [s, e) of occ blocks per
// SM, towards need, as far as maxInFlight, the loads a thread issues a
// chunk, and the kernel's occupancy allow. Each more load takes 4
// registers more than the stage has: its estimate, or the floor a
// register check found for its code (Options.StageRegs), which counted
// the loads it had then.
func deepenLoads(c *coster, s, e, occ int, st stage, need, staged int, floor int) bool {
	mv := st.MatVec
	per := te.CeilDiv(staged/mv.Vec, mv.Split)
	cols := max(mv.Cols, 1)
	u, regs := mv.InFlight, st.RegsPerThread
	base := max(regs, floor)
	for n := u * 2; n <= maxInFlight && n <= te.NextPow2(need) && per%n == 0; n *= 2 {
		st.RegsPerThread = base + 4*(n-mv.InFlight)*cols
		if c.kernel(s, e).BlocksPerSM < occ {
			break
		}
		u = n
	}
	if u == mv.InFlight {
		st.RegsPerThread = regs
		return false
	}
	st.RegsPerThread = base + 4*(u-mv.InFlight)*cols
	mv.InFlight = u
	st.Load = schedule.LoadPath{Width: 16, InFlight: u * cols, Lines: st.Load.Lines}
	return true
}

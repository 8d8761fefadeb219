package partition

import (
	"slices"

	"tec/contraction"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// Deeper cp.async pipelines. A tensor-core stage whose operands cp.async
// copies is planned, and its kernels formed, with two stages of operand
// tiles in shared memory: the next k step's copies in flight while the
// warps compute this one. Once the kernels are formed, deepenPipelines
// gives each such stage the most stages, up to
// schedule.MaxPipelineStages, that its kernel's shared memory holds
// without fewer blocks per SM (schedule.TCBlock.Stages): stages − 1 steps'
// copies in flight, which a tile whose k steps wait on DRAM or L2 needs to
// cover their latency (Little's law), at the occupancy the kernel has
// anyway. The kernels are then priced again with the deeper stages' load
// paths. Deciding after the kernels are formed keeps the deeper pipelines
// from changing which stages share a kernel: they only use shared memory
// that the kernel's occupancy leaves idle.

// deepenPipelines deepens the cp.async pipelines of the tensor-core stages
// of the kernels that start at starts (c's stages, ending at the next
// start), each as deep as its kernel's occupancy allows, and reports
// whether it deepened one.
func deepenPipelines(c *coster, starts []int) bool {
	deepened := false
	for i, s := range starts {
		e := len(c.stages)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		occ := c.kernel(s, e).BlocksPerSM
		for j := s; j < e; j++ {
			st := c.pl.stage(c.stages[j])
			staging, ok := asyncStaging(c.stages[j], st, c.pl.GPU)
			if !ok {
				continue
			}
			base := slices.Clone(st.Arrays)
			steps := st.K / st.TileK
			if st.KSplit > 1 {
				steps = st.KChunk / st.TileK
			}
			depth := 2
			for n := 3; n <= min(schedule.MaxPipelineStages, steps+1); n++ {
				st.SetArrays(pipelineArrays(base, n)...)
				if st.SharedBytes > c.pl.GPU.SharedPerBlock || c.kernel(s, e).BlocksPerSM < occ {
					break
				}
				depth = n
			}
			st.SetArrays(pipelineArrays(base, depth)...)
			if depth > 2 {
				st.PipelineStages = depth
				narrow := st.Load.Narrow
				st.Load = tensorCorePath(staging, depth, st.TileM, st.TileN, st.TileK, st.TensorIn, st.Threads)
				st.Load.Narrow = narrow
				deepened = true
			}
		}
	}
	return deepened
}

// asyncStaging returns the staging of stage s of t where it is a
// tensor-core stage, not yet deepened, with two stages of operand tiles
// (its first two shared arrays) that cp.async copies
// (contraction.StagingOf).
func asyncStaging(t *te.Tensor, s stage, g gpu.Model) (contraction.Staging, bool) {
	if !s.TensorCores || s.PipelineStages > 2 || !s.Load.Prefetch || len(s.Arrays) < 2 || s.TileK <= 0 {
		return contraction.Staging{}, false
	}
	d, ok := contraction.Of(t)
	if !ok {
		return contraction.Staging{}, false
	}
	st := contraction.StagingOf(d.X, d.Y, s.TensorIn, d.MAxes, d.NAxes, d.Reduce, d.M, d.N, d.K, g.Arch.AsyncCopy())
	return st, st.Async()
}

// pipelineArrays returns a tensor-core stage's shared arrays base (two
// stages of operand tiles first) with n stages of operand tiles.
func pipelineArrays(base []schedule.Array, n int) []schedule.Array {
	out := slices.Clone(base)
	out[0].Len = base[0].Len / 2 * n
	out[1].Len = base[1].Len / 2 * n
	return out
}

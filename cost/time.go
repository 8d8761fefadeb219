package cost

import (
	"math"

	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// stageFloor is the least time a stage takes however little it does: about
// one round trip to DRAM, since every stage reads what an earlier one wrote.
const stageFloor = 0.5e-6

// tensorCoreSync is the share of the tensor cores' rate a block keeps
// while it also stages its operands at every k step, with a barrier
// before and after the warps' MMAs (and, where the operands allow it, the
// next step's cp.async copies in flight meanwhile, which the model does
// not credit separately): a model parameter, to be measured.
const tensorCoreSync = 0.5

// StageTime predicts the time of a stage (schedule s, price p) on a grid
// of grid blocks of g, own of them resident per SM, moving dram bytes from
// DRAM: its work at full rate (the largest of FLOPs over the attainable
// rate, the DRAM bytes over DRAM bandwidth, and the bytes its tiles load,
// all through L2, over L2 bandwidth) scaled by the share of the blocks it
// needs to saturate the GPU (SMs × its own occupancy) that run
// concurrently, and when fewer blocks than SMs run, by the share of the
// SMs they keep busy; plus the grid syncs of its own phases. A split
// reduction is charged two grid syncs: the one between its phases, and
// either the one after the initialisation of its atomic accumulators or,
// for one that writes partials (--deterministic, and every argmax or
// argmin, whose (value, position) pairs a block per output merges), its
// finishing pass, a block reading the chunks' partials from L2 and
// merging them, which takes about as long.
func StageTime(g gpu.Model, s *schedule.Schedule, p *Price, dram int64, own, grid int) float64 {
	if s.EpilogueOf != nil {
		return 0 // part of its producer's tiles
	}
	peak := g.FP32Peak
	if s.TensorCores {
		peak = TensorPeak(g, s.TensorIn)
	}
	w := max(float64(p.FLOPs)/(peak*Efficiency(s)), float64(dram)/g.DRAMBandwidth)
	if g.L2Bandwidth > 0 {
		w = max(w, float64(p.Bytes)/g.L2Bandwidth)
	}
	sat := g.SMs * max(own, 1)
	conc := min(s.Tiles, grid, sat)
	if conc <= 0 {
		return math.Inf(1)
	}
	t := w * float64(min(s.Tiles, sat)) / float64(conc)
	if conc < g.SMs {
		t *= float64(g.SMs) / float64(conc)
	}
	switch {
	case s.Kind == schedule.SplitReduce:
		t += 2 * g.GridSyncCost
	case s.KSplit > 1:
		t += SplitKTime(g, s)
	}
	return max(t, stageFloor)
}

// Alone is StageTime for a stage at its own occupancy on the whole of g,
// moving dram bytes from DRAM.
func Alone(g gpu.Model, s *schedule.Schedule, p *Price, dram int64) float64 {
	own, _ := g.BlocksPerSM(s.Resources().Block())
	return StageTime(g, s, p, dram, own, g.SMs*max(own, 1))
}

// Solo is the time of a stage alone on g, at its own occupancy over the
// whole grid, its requests all from DRAM; +Inf if a block of it does not
// fit on an SM.
func Solo(g gpu.Model, s *schedule.Schedule, p *Price) float64 {
	own, _ := g.BlocksPerSM(s.Resources().Block())
	if own == 0 {
		return math.Inf(1)
	}
	return StageTime(g, s, p, p.Bytes, own, g.SMs*own)
}

// Ideal is the time of contraction stage s on g with the whole GPU to
// itself, as StageTime prices it with every block resident: its FLOPs at
// the fraction of the peak its tiles reach, or its tiles' loads through
// L2, whichever is longer, stretched where it has fewer tiles than g has
// SMs.
func Ideal(g gpu.Model, s *schedule.Schedule, p *Price) float64 {
	peak := g.FP32Peak
	if s.TensorCores {
		peak = TensorPeak(g, s.TensorIn)
	}
	t := float64(p.FLOPs) / (peak * Efficiency(s))
	if g.L2Bandwidth > 0 {
		t = max(t, float64(p.Bytes)/g.L2Bandwidth)
	}
	if s.Tiles < g.SMs {
		t *= float64(g.SMs) / float64(max(s.Tiles, 1))
	}
	return t + SplitKTime(g, s)
}

// SplitKTime is the time of the finishing pass of a tensor-core
// contraction whose K is split over blocks: the grid sync after the
// partials, and the partials read back through L2 (their KSplit f32 sums
// per output, written and read while L2 holds them).
func SplitKTime(g gpu.Model, s *schedule.Schedule) float64 {
	if s.KSplit <= 1 {
		return 0
	}
	bw := g.L2Bandwidth
	if bw <= 0 {
		bw = g.DRAMBandwidth
	}
	return g.GridSyncCost + 2*float64(s.PartialBytes())/bw
}

// TensorPeak returns g's dense tensor-core rate for operands of type in
// (te.F16 or te.BF16; te.F32 meaning TF32), FLOP per second.
func TensorPeak(g gpu.Model, in te.DType) float64 {
	if in != te.F32 {
		return g.FP16Peak
	}
	return g.TF32Rate()
}

// Efficiency returns the fraction of the FP32 peak that a contraction's
// inner loop can reach: each step loads RegM + RegN factor elements from
// shared memory for RegM × RegN fused multiply-adds, and an SM's shared
// memory delivers 32 words per clock against 64 FP32 FMAs per clock (A100,
// H100), so one output per thread runs at a quarter of the peak and 4×4
// at all of it. A tensor-core schedule returns the fraction of the tensor
// cores' peak that its tiles reach (tensorCoreEfficiency). Other kinds of
// stage return 1.
func Efficiency(s *schedule.Schedule) float64 {
	if s.Kind != schedule.Contraction {
		return 1
	}
	if s.TensorCores {
		return tensorCoreEfficiency(s)
	}
	rm, rn := max(s.RegM, 1), max(s.RegN, 1)
	return min(1, float64(rm*rn)/float64(rm+rn)/2)
}

// tensorCoreEfficiency is the fraction of the tensor cores' peak that a
// tensor-core schedule's tiles reach, a model: the share of the MMAs that
// compute outputs (not a tile's tail past M or N), times the warp tile's
// ratio of MMAs to fragment loads (mt·nt MMA tiles for mt+nt fragment
// loads per k step, taken as saturating at 3, CUTLASS's 64×64 warp tiles),
// times tensorCoreSync.
func tensorCoreEfficiency(s *schedule.Schedule) float64 {
	mt, nt := te.CeilDiv(s.M, s.TileM), te.CeilDiv(s.N, s.TileN)
	used := float64(s.M*s.N) / float64(mt*s.TileM*nt*s.TileN)
	wm, wn := s.TCBlock().WarpTile()
	ratio := min(1, float64(wm*wn)/float64(wm+wn)/3)
	return used * ratio * tensorCoreSync
}

// SplitPays reports whether a row reduction of n outputs, requesting bytes
// bytes, is predicted faster on g split into chunks partial reductions per
// output on more SMs, plus the split's two grid syncs, than a block per
// output (an RMSNorm's 2048 elements of one row take less than the syncs
// would).
func SplitPays(g gpu.Model, bytes int64, n, chunks int) bool {
	w := float64(bytes) / g.DRAMBandwidth
	whole := w * float64(g.SMs) / float64(min(n, g.SMs))
	parts := w*float64(g.SMs)/float64(min(n*chunks, g.SMs)) + 2*g.GridSyncCost
	return parts < whole
}

// FewRowsPay reports whether an element-wise stage requesting bytes bytes
// costs less on g as a stage of r rows, fewer than g has SMs, on r blocks
// (as StageTime prices it), than the grid sync it saves: the
// normalisation of an RMSNorm over the one row of a decode step.
func FewRowsPay(g gpu.Model, bytes int64, r int) bool {
	return float64(bytes)/g.DRAMBandwidth*float64(g.SMs)/float64(r) < g.GridSyncCost
}

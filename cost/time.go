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

// StageTime predicts the time of a stage (schedule s, price p) on a grid
// of grid blocks of g, own of them resident per SM, moving dram bytes from
// DRAM: its work at full rate (the largest of FLOPs over the attainable
// rate, the DRAM bytes over DRAM bandwidth, and the bytes its tiles load,
// all through L2, over L2 bandwidth) scaled by the share of the blocks it
// needs to saturate the GPU (SMs × its own occupancy) that run
// concurrently, and when fewer blocks than SMs run, by the share of the
// SMs they keep busy; or, where it is longer, the round trips of its
// loads at the bytes its running threads keep in flight (LatencyTime:
// what a stage of narrow loads, few in flight, takes whatever the
// bandwidth); plus the grid syncs of its own phases. A split
// reduction is charged two grid syncs: the one between its phases, and
// either the one after the initialisation of its atomic accumulators or,
// for one that writes partials (--deterministic, and every argmax or
// argmin, whose (value, position) pairs a block per output merges), its
// finishing pass, a block reading the chunks' partials from L2 and
// merging them, which takes about as long. StageBound says which term
// won.
func StageTime(g gpu.Model, s *schedule.Schedule, p *Price, dram int64, own, grid int) float64 {
	t, _ := StageBound(g, s, p, dram, own, grid)
	return t
}

// StageBound is StageTime and the term that bounds it: the one that won
// the maximum, or the grid syncs where they take longer than the stage's
// work, or latency where the stage takes no longer than the least time of
// a stage.
func StageBound(g gpu.Model, s *schedule.Schedule, p *Price, dram int64, own, grid int) (float64, Bound) {
	if s.EpilogueOf != nil {
		return 0, BoundNone // part of its producer's tiles
	}
	sat := g.SMs * max(own, 1)
	conc := min(s.Tiles, grid, sat)
	if conc <= 0 {
		return math.Inf(1), BoundLatency
	}
	w, bound := computeTime(g, s, p)
	if d := float64(dram) / g.DRAMBandwidth; d > w {
		w, bound = d, BoundDRAM
	}
	if g.L2Bandwidth > 0 {
		if l := float64(p.Bytes) / g.L2Bandwidth; l > w {
			w, bound = l, BoundL2
		}
	}
	if l := L1Time(g, s, p); l > w {
		w, bound = l, BoundL1
	}
	t := w
	if !streams(s, bound) {
		t *= float64(min(s.Tiles, sat)) / float64(conc)
	}
	if conc < g.SMs {
		t *= float64(g.SMs) / float64(conc)
	}
	if l := LatencyTime(g, s, p, dram, conc*s.Threads); l > t {
		t, bound = l, BoundLatency
	}
	var syncs float64
	switch {
	case s.Kind == schedule.SplitReduce:
		syncs = 2 * g.GridSyncCost
	case s.KSplit > 1:
		syncs = SplitKTime(g, s)
	}
	if syncs > t {
		bound = BoundGridSync
	}
	if t += syncs; t < stageFloor {
		return stageFloor, BoundLatency
	}
	return t, bound
}

// streams reports whether stage s, bound by b, is a stream of loads that
// reaches DRAM's or L2's rate with however many of its blocks run, as
// long as they keep enough bytes in flight (LatencyTime prices it where
// they do not): bound by bytes, not on tensor cores (whose tiles are
// bound by their k steps at fewer warps: Swin's tensor-core stages ran
// twice as long at one block per SM; see RowTilesTime), and prefetching,
// so that its bytes stay in flight between its loads' uses (a weight
// ring, schedule.MatVec.Ring). Other stages need every block of their
// own occupancy to reach the rate their bound names: the decode step's
// weight streams into registers, a round of loads at a time, reached 57 %
// of the H200's bandwidth at 2 blocks per SM (docs/benchmarks.md, "The
// fourth H200 run").
func streams(s *schedule.Schedule, b Bound) bool {
	return (b == BoundDRAM || b == BoundL2) && s.Load.Prefetch && !s.TensorCores
}

// L1Time is the time the L1s of g take to serve the loads of a stage
// (schedule s, price p) at s.Load.Lines wavefronts per 128 bytes, one an
// SM a clock; 0 where g gives no clock or s's loads are not described.
// The decode step's attention scores at B = 8 were tiled a thread per
// key, 32 lines a warp's load: 174 µs on an H200 where the model, blind
// to it, predicted 9 (docs/benchmarks.md, "The third H200 run").
func L1Time(g gpu.Model, s *schedule.Schedule, p *Price) float64 {
	if g.Clock <= 0 || s.Load.Lines <= 0 {
		return 0
	}
	return float64(p.Bytes) / wavefrontBytes * s.Load.Lines / (float64(g.SMs) * g.Clock)
}

// RowTilesTime is the least time of a stage computed a block per output
// (schedule.RowReduce) on g with conc blocks running at once: each wave
// of tiles waits for its loads, then combines its threads' partial
// results in a tree of shuffles, through shared memory and two block
// barriers, before the next tile starts; about one round trip to DRAM
// (g.Latency) a wave. ResNeXt's grouped convolutions, blocks of 72-term
// outputs, took 1.14 µs a wave on an H200 (docs/benchmarks.md, "The stage
// clock"), whose loaded DRAM latency is about 1 µs. 0 for other kinds.
//
// The planner weighs it where it chooses between a block and a thread per
// output (partition's serialReduces); StageTime leaves it out. With it in
// StageTime, the search split Swin's layer norms' statistics into
// kernels of their own, and the tensor-core stages left in the others,
// at one block per SM, ran twice as long: Swin took 3.063 ms on an H200
// where the same code without it took 2.233 (docs/benchmarks.md): the
// model does not yet see what a block per SM costs a tensor-core tile.
func RowTilesTime(g gpu.Model, s *schedule.Schedule, conc int) float64 {
	if s.Kind != schedule.RowReduce || conc <= 0 {
		return 0
	}
	dram, _ := g.Latency()
	return float64((s.Tiles+conc-1)/conc) * dram
}

// computeTime is the time of p's FLOPs at the rate stage s reaches on g
// (Efficiency), and the bound it names: the tensor cores or the CUDA
// cores.
func computeTime(g gpu.Model, s *schedule.Schedule, p *Price) (float64, Bound) {
	if s.TensorCores {
		return float64(p.FLOPs) / (TensorPeak(g, s.TensorIn) * Efficiency(s)), BoundTensor
	}
	if mv := s.MatVec; mv != nil && mv.MMA {
		// The rows padded to an MMA's 16.
		padded := float64(p.FLOPs) * mmaRows / float64(max(s.RegM, 1))
		return padded / (g.FP16Peak * mmaMatVecEfficiency), BoundTensor
	}
	return float64(p.FLOPs) / (g.FP32Peak * Efficiency(s)), BoundFP32
}

// A tensor-core matrix-vector tile (schedule.MatVec.MMA) computes 16
// rows, an MMA's M, whatever its rows, with mma.sync, which reaches about
// half of the dense peak that the H100's wgmma does: a bound that the
// weights' DRAM traffic always passes first, kept for honesty.
const (
	mmaRows             = 16
	mmaMatVecEfficiency = 0.5
)

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
// SMs; or the round trips of those loads from L2 (LatencyTime) at its own
// occupancy, where they take longer.
func Ideal(g gpu.Model, s *schedule.Schedule, p *Price) float64 {
	t, _ := computeTime(g, s, p)
	if g.L2Bandwidth > 0 {
		t = max(t, float64(p.Bytes)/g.L2Bandwidth)
	}
	if s.Tiles < g.SMs {
		t *= float64(g.SMs) / float64(max(s.Tiles, 1))
	}
	own, _ := g.BlocksPerSM(s.Resources().Block())
	t = max(t, LatencyTime(g, s, p, 0, min(s.Tiles, g.SMs*max(own, 1))*s.Threads))
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
// at all of it; a matrix-vector tile's RegM row words cost the
// wavefronts of their bank conflicts (matVecRowConflicts). A tensor-core schedule returns the fraction of the tensor
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
	return min(1, float64(rm*rn)/float64(rm*matVecRowConflicts(s.MatVec)+rn)/2)
}

// matVecRowConflicts returns the shared-memory wavefronts of a warp's read
// of a word of a staged row in a CUDA-core matrix-vector tile (1 for other
// stages): lane l takes the k vector l / TileF of Vec elements (its column
// l mod TileF), so that a warp's 32/TileF vectors lie Vec words apart and
// Vec/TileF of them share each bank (the decode step's projections at
// B = 8, 4 columns a tile and bf16 vectors of 8, two: what the simulator
// counts). The lanes' layout (KLanes), scalar loads (Vec 0) and tensor
// cores (MMA) read them without conflicts.
func matVecRowConflicts(mv *schedule.MatVec) int {
	if mv == nil || mv.MMA || mv.KLanes || mv.Vec == 0 || mv.TileF >= 32 {
		return 1
	}
	return max(1, mv.Vec/mv.TileF)
}

// The shared memory of an SM (A100, H100) serves one wavefront a clock:
// 32 banks of 4 bytes, 128 bytes.
const wavefrontBytes = 128

// tensorFLOPsPerClock is the dense MMA rate of an SM, FLOP per clock, for
// f16 and bf16 operands (TF32 at half of it): the A100's (312 TFLOP/s
// over 108 SMs at 1.41 GHz). The rates of tensorCoreEfficiency are in
// the A100's ratio of MMAs to shared-memory wavefronts on every GPU: the
// H100's tensor cores are twice as fast a clock through wgmma, which the
// emitted mma.sync does not use.
const tensorFLOPsPerClock = 2048

// barrierCycles is what a block barrier of a tensor-core tile's k step
// costs, in SM clocks: the warps drain their shared-memory loads and MMAs
// before it and refill the pipes after it (about an ldmatrix's latency
// plus an MMA's, 30 clocks each): a model parameter, to be measured.
const barrierCycles = 60

// tensorCoreEfficiency is the fraction of the tensor cores' peak that a
// tensor-core schedule's tiles reach, a model of one k step of a block on
// an SM: its MMAs' clocks at the SM's MMA rate against the wavefronts of
// shared memory that feed them, one a clock, whichever takes longer, plus
// the step's block barriers (two where the tile stages element by
// element, one with the next step's transfers in flight: LoadPath's
// Barriers); times the share of the MMAs that compute outputs (not a
// tile's tail past M or N). The wavefronts are each warp's fragment loads
// (an ldmatrix.x4 of a 16×16 A fragment, 4 wavefronts, and an
// ldmatrix.x2 of a 16×8 B fragment, 2; TF32's element loads of the same
// fragments take as many) and the stores that stage the step's operands
// (16-byte chunks, 8 to a wavefront; elements, a warp's 32 to one), all
// free of bank conflicts: backend/lower rotates the 16-byte chunks of
// every staged tile's rows ("Shared tiles"), as its TestTensorCoreBanks
// checks on the simulator.
func tensorCoreEfficiency(s *schedule.Schedule) float64 {
	mt, nt := te.CeilDiv(s.M, s.TileM), te.CeilDiv(s.N, s.TileN)
	used := float64(s.M*s.N) / float64(mt*s.TileM*nt*s.TileN)
	mmaK, rate, size := 16, tensorFLOPsPerClock, 2
	if s.TensorIn == te.F32 {
		mmaK, rate, size = 8, tensorFLOPsPerClock/2, 4
	}
	steps := max(s.TileK, mmaK) / mmaK // MMA k steps of a staged k step
	mmas := (s.TileM / 16) * (s.TileN / 8) * steps
	mmaClocks := float64(mmas*2*16*8*mmaK) / float64(rate)
	wm, wn := s.TCBlock().WarpTile()
	frags := max(s.WarpsM, 1) * max(s.WarpsN, 1) * steps * (4*wm + 2*wn)
	elems := (s.TileM + s.TileN) * max(s.TileK, mmaK)
	stores := te.CeilDiv(elems, 32)
	if s.Load.Width == 16 {
		stores = te.CeilDiv(elems*size, wavefrontBytes)
	}
	step := max(mmaClocks, float64(frags+stores)) + float64(s.Load.Barriers*barrierCycles)
	return used * mmaClocks / step
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

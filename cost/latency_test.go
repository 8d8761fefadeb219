package cost

import (
	"math"
	"testing"

	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// tcTile returns a tensor-core schedule of BERT's FFN matmul shape
// (384×3072 outputs, K 768) in 64×128 tiles of eight warps (1×4 warps in
// two k slices), 144 tiles, its operands moved as load says.
func tcTile(load schedule.LoadPath) *schedule.Schedule {
	return &schedule.Schedule{Kind: schedule.Contraction, Threads: 256, Tiles: 144, M: 384, N: 3072, K: 768, Batch: 1,
		TileM: 64, TileN: 128, TileK: 32, RegM: 1, RegN: 1, TensorCores: true, TensorIn: te.F16,
		WarpsM: 1, WarpsN: 4, KSlices: 2, Load: load}
}

// The load paths of tcTile's operands (partition.tensorCorePath): both by
// 16-byte cp.async, one round trip of its 24 elements a step, the next
// step in flight; or element by element, 24 round trips of 2 bytes and
// two barriers a step.
var (
	asyncPath    = schedule.LoadPath{Width: 16, InFlight: 3, Prefetch: true, Barriers: 1}
	elementsPath = schedule.LoadPath{Width: 2, InFlight: 1, Barriers: 2}
)

// TestLatencyTime checks Little's law on a stage: its loads' round trips
// at the latency of DRAM for what it moves from DRAM and of L2 for the
// rest, at the bytes its threads have in flight, its stores left out; a
// stage whose loads are not described has none.
func TestLatencyTime(t *testing.T) {
	p := &Price{Bytes: 3 << 20, Out: 1 << 20}
	a100, _ := gpu.Builtin("a100")
	h200, _ := gpu.Builtin("h200")
	slow := a100
	slow.DRAMLatency, slow.L2Latency = 2e-6, 1e-6
	const dram, l2 = gpu.DefaultDRAMLatency, gpu.DefaultL2Latency
	for _, tt := range []struct {
		name    string
		g       gpu.Model
		load    schedule.LoadPath
		dram    int64
		threads int
		want    float64
	}{
		{"all from L2", a100, schedule.LoadPath{Width: 2, InFlight: 1}, 0, 1 << 16, (2 << 20) * l2 / (2 << 16)},
		{"half from DRAM", a100, schedule.LoadPath{Width: 16, InFlight: 4}, 2 << 20, 1 << 16, ((1<<20)*dram + (1<<20)*l2) / (64 << 16)},
		{"half from DRAM, the H200's measured DRAM latency", h200, schedule.LoadPath{Width: 16, InFlight: 4}, 2 << 20, 1 << 16, ((1<<20)*1e-6 + (1<<20)*l2) / (64 << 16)},
		{"half from DRAM, a description's latencies", slow, schedule.LoadPath{Width: 16, InFlight: 4}, 2 << 20, 1 << 16, ((1<<20)*2e-6 + (1<<20)*1e-6) / (64 << 16)},
		{"stores only from DRAM", a100, schedule.LoadPath{Width: 4, InFlight: 2}, 1 << 20, 1 << 10, (2 << 20) * l2 / (8 << 10)},
		{"not described", a100, schedule.LoadPath{}, 2 << 20, 1 << 16, 0},
	} {
		s := &schedule.Schedule{Load: tt.load}
		if got := LatencyTime(tt.g, s, p, tt.dram, tt.threads); math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("%s: %.4g s, want %.4g", tt.name, got, tt.want)
		}
	}
}

// TestStageBoundLoads checks that the load path prices a stage: at two
// blocks per SM, a tensor-core tile staged element by element (24 round trips of one
// 2-byte load a step, two barriers) slower than the same tile copied by
// cp.async, and bound by latency where the other is bound by its tensor
// cores; and a matrix-vector stage streaming 64 MB of weights from DRAM
// at one block of 256 threads per SM, with one 16-byte load in flight
// per thread bound by latency (442 KB in flight where Little's law wants
// 933 KB: about twice as slow), with eight at DRAM bandwidth.
func TestStageBoundLoads(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	mv := func(inFlight int) *schedule.Schedule {
		return &schedule.Schedule{Kind: schedule.Contraction, Threads: 256, Tiles: 1024, M: 1, N: 16384, K: 2048, Batch: 1,
			TileM: 1, TileN: 16, TileK: 2048, RegM: 1, RegN: 1,
			MatVec: &schedule.MatVec{Wide: 1, TileF: 16, NT: 1024, Split: 16, Vec: 8, InFlight: inFlight},
			Load:   schedule.LoadPath{Width: 16, InFlight: inFlight}}
	}
	weights := int64(2 * 2048 * 16384)
	mvPrice := &Price{FLOPs: 2 * 2048 * 16384, Bytes: weights + 32<<10, Out: 32 << 10}
	tcPrice := &Price{FLOPs: 2 * 384 * 3072 * 768, Bytes: 2*(384*768*24+768*3072*6) + 2*384*3072, Out: 2 * 384 * 3072}
	for _, tt := range []struct {
		name  string
		s     *schedule.Schedule
		p     *Price
		dram  int64
		own   int
		bound Bound
	}{
		{"cp.async tile", tcTile(asyncPath), tcPrice, 7 << 20, 2, BoundTensor},
		{"element-staged tile", tcTile(elementsPath), tcPrice, 7 << 20, 2, BoundLatency},
		{"matvec, 8 in flight", mv(8), mvPrice, weights, 1, BoundDRAM},
		{"matvec, 1 in flight", mv(1), mvPrice, weights, 1, BoundLatency},
	} {
		_, bound := StageBound(g, tt.s, tt.p, tt.dram, tt.own, tt.own*g.SMs)
		if bound != tt.bound {
			t.Errorf("%s: bound by %s, want %s", tt.name, bound, tt.bound)
		}
	}
	async := StageTime(g, tcTile(asyncPath), tcPrice, 7<<20, 2, 2*g.SMs)
	elements := StageTime(g, tcTile(elementsPath), tcPrice, 7<<20, 2, 2*g.SMs)
	if !(elements > 2*async) {
		t.Errorf("element-staged tile %.3g s, cp.async %.3g s: want the element staging's round trips to cost more than twice", elements, async)
	}
	one, eight := StageTime(g, mv(1), mvPrice, weights, 1, g.SMs), StageTime(g, mv(8), mvPrice, weights, 1, g.SMs)
	if want := float64(weights) / g.DRAMBandwidth; math.Abs(eight-want) > 1e-9*want {
		t.Errorf("matvec, 8 in flight: %.3g s, want the weights at DRAM bandwidth, %.3g s", eight, want)
	}
	if !(one > 1.8*eight) {
		t.Errorf("matvec: 1 load in flight %.3g s, 8 in flight %.3g s: want about twice as slow", one, eight)
	}
}

// TestStageBound checks the bound StageBound names for stages at each
// extreme, on the A100 model with its blocks all resident.
func TestStageBound(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	wide := schedule.LoadPath{Width: 16, InFlight: 8}
	ew := func(load schedule.LoadPath) *schedule.Schedule {
		return &schedule.Schedule{Kind: schedule.Elementwise, Threads: 256, Tiles: 1 << 16, Load: load}
	}
	for _, tt := range []struct {
		name  string
		s     *schedule.Schedule
		p     *Price
		dram  int64
		bound Bound
	}{
		{"streaming from DRAM", ew(wide), &Price{FLOPs: 1 << 20, Bytes: 64 << 20, Out: 32 << 20}, 64 << 20, BoundDRAM},
		{"re-reads in L2", ew(wide), &Price{FLOPs: 1 << 20, Bytes: 512 << 20, Out: 1 << 20}, 2 << 20, BoundL2},
		{"arithmetic", ew(wide), &Price{FLOPs: 1 << 32, Bytes: 1 << 20, Out: 1 << 19}, 1 << 20, BoundFP32},
		{"one 2-byte load in flight", ew(schedule.LoadPath{Width: 2, InFlight: 1}), &Price{FLOPs: 1 << 20, Bytes: 64 << 20, Out: 32 << 20}, 64 << 20, BoundLatency},
		{"tiny", ew(wide), &Price{FLOPs: 1, Bytes: 8, Out: 4}, 8, BoundLatency},
		{"split reduction", &schedule.Schedule{Kind: schedule.SplitReduce, Threads: 256, Tiles: 216, Chunks: 216, Load: wide}, &Price{FLOPs: 1 << 16, Bytes: 1 << 18, Out: 4}, 1 << 18, BoundGridSync},
		{"epilogue", &schedule.Schedule{Kind: schedule.Elementwise, EpilogueOf: &te.Tensor{Name: "y"}}, &Price{Bytes: 1 << 20}, 1 << 20, BoundNone},
	} {
		if _, bound := StageBound(g, tt.s, tt.p, tt.dram, 8, 8*g.SMs); bound != tt.bound {
			t.Errorf("%s: bound by %s, want %s", tt.name, bound, tt.bound)
		}
	}
}

// TestTensorCoreEfficiency checks the wavefront model of a tensor-core
// tile's k step: a 64×64 warp tile (4 warps over 128×128) near the
// tensor cores' peak, small warp tiles held back by their fragments'
// wavefronts, and the element staging's two barriers and narrower stores
// below the one barrier of cp.async; never above 1.
func TestTensorCoreEfficiency(t *testing.T) {
	big := &schedule.Schedule{Kind: schedule.Contraction, M: 4096, N: 4096, K: 4096, TileM: 128, TileN: 128, TileK: 32,
		TensorCores: true, TensorIn: te.F16, WarpsM: 2, WarpsN: 2, Load: asyncPath}
	small := &schedule.Schedule{Kind: schedule.Contraction, M: 4096, N: 4096, K: 4096, TileM: 32, TileN: 32, TileK: 32,
		TensorCores: true, TensorIn: te.F16, WarpsM: 2, WarpsN: 4, Load: asyncPath}
	for _, tt := range []struct {
		name     string
		s        *schedule.Schedule
		low, top float64
	}{
		{"64×64 warp tiles", big, 0.85, 1},
		{"16×8 warp tiles", small, 0.1, 0.3},
		{"BERT's FFN tile, cp.async", tcTile(asyncPath), 0.55, 0.85},
		{"BERT's FFN tile, elements", tcTile(elementsPath), 0.4, 0.6},
	} {
		if e := Efficiency(tt.s); e < tt.low || e > tt.top {
			t.Errorf("%s: efficiency %.3f, want %.2f to %.2f", tt.name, e, tt.low, tt.top)
		}
	}
	if a, e := Efficiency(tcTile(asyncPath)), Efficiency(tcTile(elementsPath)); !(a > e) {
		t.Errorf("cp.async %.3f, elements %.3f: want the one barrier a step faster", a, e)
	}
}

// TestRowTilesTime checks the least time of a block per output: a round
// trip to DRAM for every wave of tiles, at the GPU's latency; nothing for
// other kinds.
func TestRowTilesTime(t *testing.T) {
	a100, _ := gpu.Builtin("a100")
	h200, _ := gpu.Builtin("h200")
	rows := func(tiles int) *schedule.Schedule {
		return &schedule.Schedule{Kind: schedule.RowReduce, Threads: 256, Tiles: tiles}
	}
	for _, tt := range []struct {
		name string
		g    gpu.Model
		s    *schedule.Schedule
		conc int
		want float64
	}{
		{"ResNeXt's grouped convolution on the H200", h200, rows(200704), 1056, 191 * 1e-6},
		{"one wave", a100, rows(384), 864, gpu.DefaultDRAMLatency},
		{"a wave and one tile", a100, rows(865), 864, 2 * gpu.DefaultDRAMLatency},
		{"a thread per output", a100, &schedule.Schedule{Kind: schedule.Elementwise, Threads: 256, Tiles: 784}, 784, 0},
		{"no blocks", a100, rows(10), 0, 0},
	} {
		if got := RowTilesTime(tt.g, tt.s, tt.conc); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: %.4g s, want %.4g", tt.name, got, tt.want)
		}
	}
}

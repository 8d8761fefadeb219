// Package gpu describes the GPUs tec builds for, in one place: each
// model's resources and rates (what the partitioner plans with and the
// cost model divides work by), the architecture its code is compiled for,
// the built-in models and the JSON files that describe others, and the
// limits every stage of the compiler checks a kernel against (occupancy,
// shared memory per block).
package gpu

import (
	"fmt"
	"sort"
	"strings"

	"tec/internal/safefile"
)

// Model describes a GPU: the resources that bound how many blocks of a
// kernel can be resident at once, the rates that the cost model divides
// work by, and the architecture the build's code is compiled for. Sizes
// are in bytes, rates per second, costs in seconds.
// docs/gpu.md documents the JSON form for users (TestGPUDoc keeps it whole).
type Model struct {
	Name string `json:"name"`
	// CC is the compute capability, e.g. "8.0".
	CC string `json:"cc"`

	SMs                int `json:"sms"`
	SharedPerSM        int `json:"shared_per_sm"`    // bytes of shared memory per SM usable by blocks
	SharedPerBlock     int `json:"shared_per_block"` // largest shared memory of one block (opt-in)
	RegsPerSM          int `json:"regs_per_sm"`      // 32-bit registers per SM
	MaxRegsPerThread   int `json:"max_regs_per_thread"`
	MaxThreadsPerSM    int `json:"max_threads_per_sm"`
	MaxBlocksPerSM     int `json:"max_blocks_per_sm"`
	MaxThreadsPerBlock int `json:"max_threads_per_block"`
	L2Bytes            int `json:"l2_bytes"`

	DRAMBandwidth float64 `json:"dram_bandwidth"` // bytes per second
	// L2Bandwidth is the rate at which the SMs together read from L2, in
	// bytes per second; 0 leaves L2 traffic out of the cost model.
	L2Bandwidth float64 `json:"l2_bandwidth,omitempty"`
	FP32Peak    float64 `json:"fp32_peak"` // FLOP per second, CUDA cores
	FP16Peak    float64 `json:"fp16_peak"` // FLOP per second, dense tensor cores (f16 and bf16)
	// TF32Peak is the dense TF32 rate of the tensor cores, FLOP per
	// second; 0 means half of FP16Peak, as on the A100 and H100.
	TF32Peak float64 `json:"tf32_peak,omitempty"`

	// Clock is the SMs' clock under load, in cycles per second: each SM's
	// L1 serves one wavefront (a 128-byte line of a warp's load) a clock,
	// which the cost model prices a stage's scattered loads by; 0 leaves
	// the L1 out of the cost model.
	Clock float64 `json:"clock,omitempty"`

	LaunchCost   float64 `json:"launch_cost"`    // seconds per kernel launch
	GridSyncCost float64 `json:"grid_sync_cost"` // seconds per grid-wide barrier

	// DRAMLatency and L2Latency are the time from a load's issue to its
	// data under load, in seconds: from DRAM, and from an L2 hit. The cost
	// model sizes the loads a stage must have in flight by them (Little's
	// law) and prices a stage bound by its round trips. 0 means
	// DefaultDRAMLatency and DefaultL2Latency (Latency).
	DRAMLatency float64 `json:"dram_latency,omitempty"`
	L2Latency   float64 `json:"l2_latency,omitempty"`

	// MaxParamBytes bounds a kernel's parameters (each global buffer a
	// kernel touches is an 8-byte pointer parameter); 0 means 4096.
	MaxParamBytes int `json:"max_param_bytes,omitempty"`

	// Arch is the architecture the build's code is compiled for: the
	// model's native one (NativeArch) as Builtin, Lookup and Parse return
	// it, or the one Resolve and WithArch set. Zero where the model gives
	// no compute capability and none has been set. A GPU file does not
	// give it (--target does).
	Arch Arch `json:"-"`

	// MinRegsPerThread, when not 0, is the fewest registers per thread
	// that occupancy (BlocksPerSM) counts for any block, where a block's
	// own estimate is fewer: what the compiled kernels were found to take
	// (ptxas), set by the build that plans with it. A GPU file does not
	// give it.
	MinRegsPerThread int `json:"-"`
}

// The load latencies of a description that gives none: assumptions from
// published microbenchmarks, not measurements of ours. DRAM's is about
// 600 ns under load (Jia et al., "Dissecting the Ampere GPU architecture
// through microbenchmarking", and Luo et al.'s Hopper counterpart:
// 400-500 ns unloaded, more under load); an L2 hit's about 250 ns (200
// cycles to the near L2 partition unloaded at 1.4 GHz, about twice that
// to the far one and under load).
const (
	DefaultDRAMLatency = 600e-9
	DefaultL2Latency   = 250e-9
)

// Latency returns g's load latencies from DRAM and from L2, in seconds:
// DRAMLatency and L2Latency, or the defaults where they are 0.
func (g Model) Latency() (dram, l2 float64) {
	dram, l2 = g.DRAMLatency, g.L2Latency
	if dram == 0 {
		dram = DefaultDRAMLatency
	}
	if l2 == 0 {
		l2 = DefaultL2Latency
	}
	return dram, l2
}

// ParamLimit returns how many buffer parameters one kernel may take.
func (g Model) ParamLimit() int {
	n := g.MaxParamBytes
	if n <= 0 {
		n = 4096
	}
	return n / 8
}

// TF32Rate returns the dense TF32 rate of the tensor cores, FLOP per
// second: TF32Peak, or half of FP16Peak where that is 0.
func (g Model) TF32Rate() float64 {
	if g.TF32Peak > 0 {
		return g.TF32Peak
	}
	return g.FP16Peak / 2
}

// Sources of the built-in figures:
//
//   - A100: "NVIDIA A100 Tensor Core GPU Architecture" whitepaper (2020),
//     Tables 1 and 3 (108 SMs, 40 MB L2, 1555 GB/s HBM2, 19.5 TFLOP/s FP32,
//     312 TFLOP/s dense FP16 and BF16 tensor, 156 TFLOP/s dense TF32
//     tensor); CUDA C++ Programming Guide, "Technical
//     Specifications per Compute Capability", CC 8.0 (164 KB shared memory
//     per SM, 163 KB per block, 64 K registers per SM, 255 per thread, 2048
//     threads and 32 blocks per SM, 1024 threads per block).
//   - H100 SXM5: "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (2022)
//     and the H100 datasheet (132 SMs, 50 MB L2, 3.35 TB/s HBM3, 67 TFLOP/s
//     FP32, 989.5 TFLOP/s dense FP16 and BF16 tensor, 494.7 TFLOP/s dense
//     TF32 tensor; the datasheet's 1979 and 989 are with sparsity);
//     Programming Guide CC 9.0 (228 KB
//     shared memory per SM, 227 KB per block, 64 K registers, 2048 threads
//     and 32 blocks per SM).
//   - H200 SXM: NVIDIA H200 datasheet (2024): the H100's GH100 die and SM
//     configuration (132 SMs, CC 9.0) with 141 GB of HBM3e at 4.8 TB/s.
//   - H100 PCIe: the H100 datasheet's PCIe column (114 SMs, 2.0 TB/s HBM2e,
//     51 TFLOP/s FP32, 756 TFLOP/s dense FP16 and BF16 tensor, 378 dense
//     TF32; 1.755 GHz boost).
//   - H100 NVL: the H100 datasheet's NVL column (132 SMs, 3.9 TB/s HBM3,
//     60 TFLOP/s FP32, 835 TFLOP/s dense FP16 and BF16 tensor, 418 dense
//     TF32; the datasheet's 1,671 and 835 are with sparsity), a clock of
//     1.785 GHz (60 TFLOP/s over 132 SMs of 128 FMA lanes).
//   - T4 (TU104, CC 7.5): the NVIDIA T4 datasheet (2019): 40 SMs (2,560
//     CUDA cores), 320 GB/s GDDR6, 8.1 TFLOP/s FP32, 65 TFLOP/s FP16
//     tensor with FP32 accumulate, no TF32 or BF16; 1,590 MHz boost; 4 MB
//     of L2 (the "NVIDIA Turing GPU Architecture" whitepaper, Appendix
//     A, TU104). Programming Guide CC 7.5: 64 KB of shared memory per SM
//     and per block, 1,024 threads and 16 blocks per SM, 64 K registers.
//   - A100 80GB SXM: the A100 datasheet (2021): the 40 GB part's SMs and
//     L2 with 2,039 GB/s of HBM2e.
//   - A10 and GeForce RTX 3090 (GA102, CC 8.6): the NVIDIA A10 datasheet
//     (72 SMs, 600 GB/s GDDR6, 31.2 TFLOP/s FP32, 125 dense FP16/BF16
//     tensor, 62.5 dense TF32) and the "NVIDIA Ampere GA102 GPU
//     Architecture" whitepaper (2020), Table 2 (RTX 3090: 82 SMs, 936
//     GB/s GDDR6X, 35.6 TFLOP/s FP32, 71 FP16 tensor with FP32
//     accumulate, 35.6 TF32; 6 MB L2; 1,695 MHz boost, also A10's).
//   - L4, L40S and GeForce RTX 4090 (AD10x, CC 8.9): the NVIDIA L4 (58
//     SMs, 300 GB/s GDDR6, 30.3 TFLOP/s FP32, 121 dense FP16/BF16
//     tensor, 60 dense TF32; 2,040 MHz) and L40S (142 SMs, 864 GB/s, 91.6
//     TFLOP/s FP32, 362 dense FP16/BF16, 183 dense TF32; 2,520 MHz)
//     datasheets (2023) and the "NVIDIA Ada GPU Architecture" whitepaper
//     (2022), Appendix A (RTX 4090: 128 SMs, 1,008 GB/s GDDR6X, 82.6
//     TFLOP/s FP32, 165.2 FP16 tensor with FP32 accumulate, 82.6 TF32; 72
//     MB L2; 2,520 MHz; L4's AD104 48 MB of L2, L40S's AD102 96 MB).
//   - SM limits by compute capability: Programming Guide, "Technical
//     Specifications per Compute Capability": CC 8.6 and 8.9 have 100 KB
//     of shared memory per SM (99 KB per block), 1,536 threads per SM,
//     and 16 (8.6) or 24 (8.9) blocks per SM. NVIDIA publishes no L2
//     bandwidth for GA10x or AD10x: their descriptions leave it 0 (out of
//     the cost model) until bench/gpu/calibrate.cu measures one.
//   - L2 bandwidth: the A100 whitepaper gives 5120 bytes per clock of L2
//     read bandwidth (2.3× V100's); at its 1410 MHz boost clock that is
//     7.2 TB/s. NVIDIA publishes no figure for Hopper; an H200 measured
//     8.3 TB/s (bench/gpu/calibrate.cu: a 32 MiB buffer read through
//     ld.global.cg, 2026-11-28), which the H100 SXM5 shares (the same
//     GH100 die, L2 and clocks). The estimate it replaced, A100's 5120
//     bytes a clock at 1755 MHz (9.0 TB/s), gave H200 plans that ran
//     2–9 % slower (docs/benchmarks.md, "The H200's L2 rate").
//   - Clock: the boost clock at which the FP32 peaks are given (A100:
//     19.5 TFLOP/s over 108 SMs of 64 FMA lanes is 1.41 GHz; H100 and
//     H200: 67 TFLOP/s over 132 SMs of 128 is 1.98 GHz, the H200's clock
//     under load, measured: docs/benchmarks.md, "The third H200 run").
//   - Kernel parameters: 4 KB per kernel, CUDA C++ Programming Guide,
//     "Function Parameters" (raised to 32,764 bytes by CUDA 12.1 on Volta
//     and later; the CUDA 11.8 toolchain we compile with keeps 4 KB).
//   - Load latency under load: DefaultDRAMLatency and DefaultL2Latency,
//     but the H200's from DRAM, measured (h200DRAMLatency).
//   - Launch cost: about 2 µs per kernel on an A100 (Souffle, §8.3); we use
//     the same for Hopper. Grid-sync cost: an estimate of 1 µs for
//     cooperative groups' grid.sync() with a full grid (the order measured by
//     Zhang et al., "A Study of Single and Multi-device Synchronization
//     Methods in NVIDIA GPUs", IPDPS 2020), which an H200 measured: 0.99
//     µs at one or two blocks of 256 threads per SM, 1.23 at four, 2.21
//     at eight (bench/gpu/calibrate.cu, 2026-11-28; docs/benchmarks.md,
//     "The third H200 run").
func builtins() map[string]Model {
	h100 := Model{
		Name: "H100-SXM5-80GB", CC: "9.0",
		SMs: 132, SharedPerSM: 228 << 10, SharedPerBlock: 227 << 10,
		RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
		MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32, MaxThreadsPerBlock: 1024,
		L2Bytes:       50 << 20,
		DRAMBandwidth: 3.35e12, L2Bandwidth: hopperL2Bandwidth, FP32Peak: 67e12, FP16Peak: 989.5e12, TF32Peak: 494.7e12,
		Clock:      1.98e9,
		LaunchCost: 2e-6, GridSyncCost: 1e-6,
	}
	// The H200 is the H100's die and SMs with faster, larger HBM3e.
	h200 := h100
	h200.Name, h200.DRAMBandwidth = "H200-SXM-141GB", 4.8e12
	h200.DRAMLatency = h200DRAMLatency
	// The H100 PCIe has fewer SMs at a lower clock; its L2 is taken to
	// read at the SXM part's measured rate scaled by the clock.
	h100PCIe := h100
	h100PCIe.Name, h100PCIe.SMs, h100PCIe.DRAMBandwidth = "H100-PCIe-80GB", 114, 2.0e12
	h100PCIe.FP32Peak, h100PCIe.FP16Peak, h100PCIe.TF32Peak = 51.2e12, 756e12, 378e12
	h100PCIe.Clock, h100PCIe.L2Bandwidth = 1.755e9, hopperL2Bandwidth*1.755/1.98
	// The H100 NVL has the SXM part's 132 SMs at a lower clock, with more
	// HBM3; its L2 is scaled likewise.
	h100NVL := h100
	h100NVL.Name, h100NVL.DRAMBandwidth = "H100-NVL-94GB", 3.9e12
	h100NVL.FP32Peak, h100NVL.FP16Peak, h100NVL.TF32Peak = 60e12, 835e12, 418e12
	h100NVL.Clock, h100NVL.L2Bandwidth = 1.785e9, hopperL2Bandwidth*1.785/1.98
	// Turing's SMs hold half of Ampere's threads and 64 KB of shared
	// memory; NVIDIA publishes no L2 rate for TU104 (0: out of the model).
	// TF32Peak stays 0: the architecture has no TF32 (gpu.Arch.TF32).
	t4 := Model{
		Name: "T4-16GB", CC: "7.5",
		SMs: 40, SharedPerSM: 64 << 10, SharedPerBlock: 64 << 10,
		RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
		MaxThreadsPerSM: 1024, MaxBlocksPerSM: 16, MaxThreadsPerBlock: 1024,
		L2Bytes:       4 << 20,
		DRAMBandwidth: 320e9, FP32Peak: 8.1e12, FP16Peak: 65e12,
		Clock:      1.59e9,
		LaunchCost: 2e-6, GridSyncCost: 1e-6,
	}
	a100 := Model{
		Name: "A100-SXM4-40GB", CC: "8.0",
		SMs: 108, SharedPerSM: 164 << 10, SharedPerBlock: 163 << 10,
		RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
		MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32, MaxThreadsPerBlock: 1024,
		L2Bytes:       40 << 20,
		DRAMBandwidth: 1555e9, L2Bandwidth: 5120 * 1410e6, FP32Peak: 19.5e12, FP16Peak: 312e12, TF32Peak: 156e12,
		Clock:      1.41e9,
		LaunchCost: 2e-6, GridSyncCost: 1e-6,
	}
	a100x80 := a100
	a100x80.Name, a100x80.DRAMBandwidth = "A100-SXM4-80GB", 2039e9
	// GA10x and AD10x SMs (CC 8.6 and 8.9): 100 KB of shared memory, 1,536
	// threads; their L2 rate is unpublished (0: out of the model).
	ga10x := func(name string, sms, l2 int, dram, fp32, fp16, tf32, clock float64) Model {
		return Model{
			Name: name, CC: "8.6",
			SMs: sms, SharedPerSM: 100 << 10, SharedPerBlock: 99 << 10,
			RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
			MaxThreadsPerSM: 1536, MaxBlocksPerSM: 16, MaxThreadsPerBlock: 1024,
			L2Bytes: l2, DRAMBandwidth: dram, FP32Peak: fp32, FP16Peak: fp16, TF32Peak: tf32,
			Clock: clock, LaunchCost: 2e-6, GridSyncCost: 1e-6,
		}
	}
	ad10x := func(name string, sms, l2 int, dram, fp32, fp16, tf32, clock float64) Model {
		g := ga10x(name, sms, l2, dram, fp32, fp16, tf32, clock)
		g.CC, g.MaxBlocksPerSM = "8.9", 24
		return g
	}
	return map[string]Model{
		"a100":      a100,
		"a100-80gb": a100x80,
		"h100":      h100,
		"h100-pcie": h100PCIe,
		"h100-nvl":  h100NVL,
		"t4":        t4,
		"h200":      h200,
		"a10":       ga10x("A10-24GB", 72, 6<<20, 600e9, 31.2e12, 125e12, 62.5e12, 1.695e9),
		"rtx3090":   ga10x("GeForce-RTX-3090", 82, 6<<20, 936e9, 35.6e12, 71e12, 35.6e12, 1.695e9),
		"l4":        ad10x("L4-24GB", 58, 48<<20, 300e9, 30.3e12, 121e12, 60e12, 2.04e9),
		"l40s":      ad10x("L40S-48GB", 142, 96<<20, 864e9, 91.6e12, 362e12, 183e12, 2.52e9),
		"rtx4090":   ad10x("GeForce-RTX-4090", 128, 72<<20, 1008e9, 82.6e12, 165.2e12, 82.6e12, 2.52e9),
		// small is a toy GPU for tests: 4 SMs that hold one block of 256
		// threads each, so an all-resident grid has 4 blocks and every stage of
		// a tiny model has more tiles than the grid has blocks.
		"small": {
			Name: "small-4sm", CC: "8.0",
			SMs: 4, SharedPerSM: 48 << 10, SharedPerBlock: 48 << 10,
			RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
			MaxThreadsPerSM: 256, MaxBlocksPerSM: 1, MaxThreadsPerBlock: 256,
			L2Bytes:       1 << 20,
			DRAMBandwidth: 100e9, FP32Peak: 1e12, FP16Peak: 4e12, TF32Peak: 2e12,
			LaunchCost: 2e-6, GridSyncCost: 1e-6,
		},
	}
}

// h200DRAMLatency is the H200's DRAM latency under load, measured: the
// Llama decode step's largest weight streams (gate/up, 67 MB, and the
// logits, 526 MB) ran at 2.06 and 2.42 TB/s with 16 KB in flight per SM
// (2 blocks of 256 threads, each with two 16-byte loads; ptxas's 115
// registers), 2.16 MB in all: by Little's law a round trip of 1.05 and
// 0.89 µs (the stage clock, H200, 2026-11-28; docs/benchmarks.md, "The
// stage clock"). The figure is what the model's in-flight count needs to
// predict those times, not an unloaded pointer chase.
const h200DRAMLatency = 1.0e-6

// hopperL2Bandwidth is the rate at which GH100's SMs together read from
// L2, measured on an H200 (see builtins).
const hopperL2Bandwidth = 8.3e12

// Default is the name of the GPU a build targets when none is given.
const Default = "a100"

// Names returns the names of the built-in GPU models, sorted.
func Names() []string {
	names := make([]string, 0, len(builtins()))
	for n := range builtins() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Builtin returns the built-in GPU model named name (one of Names; case
// does not matter).
func Builtin(name string) (Model, bool) {
	g, ok := builtins()[strings.ToLower(name)]
	g.Arch, _ = g.NativeArch()
	return g, ok
}

// maxFileBytes bounds a GPU description file; real ones are under 1 KiB.
const maxFileBytes = 1 << 20

// Lookup returns the GPU that spec names: a built-in model's name, or the
// path of a JSON file holding one (the field names of Model's JSON tags),
// of at most 1 MiB.
func Lookup(spec string) (Model, error) {
	if g, ok := Builtin(spec); ok {
		return g, nil
	}
	if !strings.HasSuffix(spec, ".json") {
		return Model{}, fmt.Errorf("unknown GPU %q: want one of %s or a .json file", spec, strings.Join(Names(), ", "))
	}
	data, err := safefile.ReadFile(spec, maxFileBytes)
	if err != nil {
		return Model{}, fmt.Errorf("reading GPU model: %w", err)
	}
	g, err := Parse(data)
	if err != nil {
		return Model{}, fmt.Errorf("%s: %w", spec, err)
	}
	return g, nil
}

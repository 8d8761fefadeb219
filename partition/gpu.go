package partition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"unicode"

	"tec/internal/safefile"
)

// GPU describes a target GPU: the resources that bound how many blocks of a
// kernel can be resident at once, and the rates that the cost model divides
// work by. Sizes are in bytes, rates per second, costs in seconds.
// docs/gpu.md documents the JSON form for users (TestGPUDoc keeps it whole).
type GPU struct {
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

	LaunchCost   float64 `json:"launch_cost"`    // seconds per kernel launch
	GridSyncCost float64 `json:"grid_sync_cost"` // seconds per grid-wide barrier

	// MaxParamBytes bounds a kernel's parameters (each global buffer a
	// kernel touches is an 8-byte pointer parameter); 0 means 4096.
	MaxParamBytes int `json:"max_param_bytes,omitempty"`
}

// ParamLimit returns how many buffer parameters one kernel may take.
func (g GPU) ParamLimit() int {
	n := g.MaxParamBytes
	if n <= 0 {
		n = 4096
	}
	return n / 8
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
//   - L2 bandwidth: the A100 whitepaper gives 5120 bytes per clock of L2
//     read bandwidth (2.3× V100's); at its 1410 MHz boost clock that is
//     7.2 TB/s. NVIDIA publishes no per-clock figure for Hopper; we assume
//     the same 5120 bytes per clock at H100 SXM's 1755 MHz boost clock
//     (9.0 TB/s), an estimate to be checked against a measurement.
//   - Kernel parameters: 4 KB per kernel, CUDA C++ Programming Guide,
//     "Function Parameters" (raised to 32,764 bytes by CUDA 12.1 on Volta
//     and later; the CUDA 11.8 toolchain we compile with keeps 4 KB).
//   - Launch cost: about 2 µs per kernel on an A100 (Souffle, §8.3); we use
//     the same for Hopper. Grid-sync cost: an estimate of 1 µs for
//     cooperative groups' grid.sync() with a full grid (the order measured by
//     Zhang et al., "A Study of Single and Multi-device Synchronization
//     Methods in NVIDIA GPUs", IPDPS 2020); it is a model parameter, not a
//     measurement of ours.
func builtins() map[string]GPU {
	h100 := GPU{
		Name: "H100-SXM5-80GB", CC: "9.0",
		SMs: 132, SharedPerSM: 228 << 10, SharedPerBlock: 227 << 10,
		RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
		MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32, MaxThreadsPerBlock: 1024,
		L2Bytes:       50 << 20,
		DRAMBandwidth: 3.35e12, L2Bandwidth: 5120 * 1755e6, FP32Peak: 67e12, FP16Peak: 989.5e12, TF32Peak: 494.7e12,
		LaunchCost: 2e-6, GridSyncCost: 1e-6,
	}
	// The H200 is the H100's die and SMs with faster, larger HBM3e.
	h200 := h100
	h200.Name, h200.DRAMBandwidth = "H200-SXM-141GB", 4.8e12
	return map[string]GPU{
		"a100": {
			Name: "A100-SXM4-40GB", CC: "8.0",
			SMs: 108, SharedPerSM: 164 << 10, SharedPerBlock: 163 << 10,
			RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
			MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32, MaxThreadsPerBlock: 1024,
			L2Bytes:       40 << 20,
			DRAMBandwidth: 1555e9, L2Bandwidth: 5120 * 1410e6, FP32Peak: 19.5e12, FP16Peak: 312e12, TF32Peak: 156e12,
			LaunchCost: 2e-6, GridSyncCost: 1e-6,
		},
		"h100": h100,
		"h200": h200,
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

// DefaultGPU is the name of the GPU a build targets when none is given.
const DefaultGPU = "a100"

// GPUNames returns the names of the built-in GPU models, sorted.
func GPUNames() []string {
	names := make([]string, 0, len(builtins()))
	for n := range builtins() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BuiltinGPU returns the built-in GPU model named name ("a100", "h100",
// "h200", "small"; case does not matter).
func BuiltinGPU(name string) (GPU, bool) {
	g, ok := builtins()[strings.ToLower(name)]
	return g, ok
}

// maxGPUFileBytes bounds a GPU description file; real ones are under 1 KiB.
const maxGPUFileBytes = 1 << 20

// LoadGPU returns the GPU that spec names: a built-in model's name, or the
// path of a JSON file holding a GPU (the field names of GPU's JSON tags), of
// at most 1 MiB.
func LoadGPU(spec string) (GPU, error) {
	if g, ok := BuiltinGPU(spec); ok {
		return g, nil
	}
	if !strings.HasSuffix(spec, ".json") {
		return GPU{}, fmt.Errorf("unknown GPU %q: want one of %s or a .json file", spec, strings.Join(GPUNames(), ", "))
	}
	data, err := safefile.ReadFile(spec, maxGPUFileBytes)
	if err != nil {
		return GPU{}, fmt.Errorf("reading GPU model: %w", err)
	}
	g, err := ParseGPU(data)
	if err != nil {
		return GPU{}, fmt.Errorf("%s: %w", spec, err)
	}
	return g, nil
}

// ParseGPU decodes a GPU from one JSON object and validates it. The
// reader is strict, so that no mistake silently leaves a zero or another
// value than the file's: a field's name must be exactly one of GPU's JSON
// names (encoding/json alone would take "Sms" for sms, and an unknown
// name is an error), each field may be given once (encoding/json keeps the
// last), none may be null, and every field without a default
// (docs/gpu.md; those whose JSON tag has no omitempty) must be given.
// Errors name the field, with the line and column where the file says
// where, in the words of the file, not of Go.
func ParseGPU(data []byte) (GPU, error) {
	var g GPU
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return GPU{}, jsonError(data, err)
	}
	if dec.More() {
		line, col := position(data, int(dec.InputOffset()))
		return GPU{}, fmt.Errorf("%d:%d: data after the GPU's object", line, col)
	}
	if err := checkFields(data); err != nil {
		return GPU{}, err
	}
	if err := g.Validate(); err != nil {
		return GPU{}, err
	}
	return g, nil
}

// checkFields reports, for the object in data that encoding/json has
// decoded into a GPU, every key that is not a field's exact JSON name, is
// given twice or is null, and every required field that is missing (see
// ParseGPU).
func checkFields(data []byte) error {
	t := reflect.TypeFor[GPU]()
	want := map[string]reflect.StructField{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		want[name] = t.Field(i)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the object's {, which Decode read
		return jsonError(data, err)
	}
	var errs []error
	seen := map[string]string{} // field -> where it was first given
	for dec.More() {
		// The key starts at its quote, after the comma and spaces that
		// follow the previous value.
		off := int(dec.InputOffset())
		for off < len(data) && data[off] != '"' {
			off++
		}
		line, col := position(data, off)
		tok, err := dec.Token()
		if err != nil {
			return jsonError(data, err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return jsonError(data, err)
		}
		f, exact := want[key]
		if !exact {
			for name := range want {
				if strings.EqualFold(name, key) {
					errs = append(errs, fmt.Errorf("%d:%d: unknown field %q: field names are lower case, as in %q", line, col, key, name))
					break
				}
			}
			continue
		}
		if at, twice := seen[key]; twice {
			errs = append(errs, fmt.Errorf("%d:%d: field %s is given twice (first at %s)", line, col, key, at))
			continue
		}
		seen[key] = fmt.Sprintf("%d:%d", line, col)
		if string(bytes.TrimSpace(value)) == "null" {
			errs = append(errs, fmt.Errorf("%d:%d: field %s: want %s, got null", line, col, key, kindName(f.Type.Kind())))
		}
	}
	for _, name := range gpuFields() {
		if _, given := seen[name]; !given && !strings.Contains(want[name].Tag.Get("json"), ",omitempty") {
			errs = append(errs, fmt.Errorf("field %s is missing: every field without a default is required (docs/gpu.md)", name))
		}
	}
	return errors.Join(errs...)
}

// kindName names a GPU field's JSON type for people: "a string", "an
// integer" or "a number".
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	}
	return "a number"
}

// jsonError translates an error of encoding/json into the file's terms.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, int(syn.Offset)-1) // the offending character
		return fmt.Errorf("%d:%d: %s", line, col, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		line, col := position(data, int(typ.Offset)-1) // the value's last character
		if typ.Field == "" {
			return fmt.Errorf("%d:%d: want a JSON object describing a GPU, got %s", line, col, typ.Value)
		}
		want := kindName(typ.Type.Kind())
		got := typ.Value
		if strings.HasPrefix(got, "number ") {
			got = "the number " + strings.TrimPrefix(got, "number ") // a fraction or an out-of-range integer
		}
		return fmt.Errorf("%d:%d: field %s: want %s, got %s", line, col, typ.Field, want, got)
	case errors.Is(err, io.EOF):
		return errors.New("empty file: want a JSON object describing a GPU")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("unexpected end of file")
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s (the fields are %s)", field, strings.Join(gpuFields(), ", "))
	}
	return err
}

// position returns the 1-based line and column of byte offset off of data.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}

// gpuFields returns the JSON names of GPU's fields.
func gpuFields() []string {
	t := reflect.TypeFor[GPU]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return names
}

// The ranges Validate accepts. They hold every GPU NVIDIA has made with
// room to spare, and keep the products the partitioner forms (SMs × blocks
// per SM × threads, shared bytes × blocks) far from overflowing an int.
const (
	maxSMs         = 4096
	maxSharedPerSM = 16 << 20
	// minShared is the least shared memory per SM and per block: every
	// CUDA GPU has had at least 16 KiB (compute capability 1.x), and the
	// kernels' smallest tiles with their reduction scratch need a few KiB
	// at the largest blocks, so a smaller description is not a GPU the
	// schedules are made for.
	minShared       = 16 << 10
	maxRegsPerSM    = 1 << 20
	maxRegsPerThr   = 255 // the ISA's limit
	maxThreadsPerSM = 1 << 16
	maxBlocksPerSM  = 1024
	maxThreadsBlock = 1024 // CUDA's limit, which kernel IR verifies
	maxL2Bytes      = 1 << 40
	maxParamBytes   = 1 << 20
	maxRate         = 1e18 // bytes or FLOP per second
	maxCost         = 1.0  // seconds
)

// Validate reports every field of g that is missing or out of range, each
// with the field's JSON name, its value and the range it must lie in:
//
//	name                   1 to 100 printable characters
//	cc                     empty, or MAJOR.MINOR such as "8.0"
//	sms                    1 to 4096
//	shared_per_sm          16 KiB to 16 MiB
//	shared_per_block       16 KiB to shared_per_sm
//	regs_per_sm            1 to 2^20
//	max_regs_per_thread    1 to 255
//	max_threads_per_sm     1 to 65536
//	max_blocks_per_sm      1 to 1024
//	max_threads_per_block  1 to 1024, and at most max_threads_per_sm
//	l2_bytes               0 to 2^40
//	max_param_bytes        0 (4096), or 64 to 1 MiB
//	dram_bandwidth, fp32_peak              above 0, at most 1e18
//	l2_bandwidth, fp16_peak                0 to 1e18
//	launch_cost, grid_sync_cost (seconds)  0 to 1
func (g GPU) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("GPU %q: field %s: %s", g.Name, field, fmt.Sprintf(format, args...)))
	}
	if g.Name == "" || len(g.Name) > 100 || strings.IndexFunc(g.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		bad("name", "want 1 to 100 printable characters, got %q", g.Name)
	}
	if g.CC != "" && !validCC(g.CC) {
		bad("cc", `want a compute capability MAJOR.MINOR such as "8.0", got %q`, g.CC)
	}
	for _, f := range []struct {
		field     string
		v, lo, hi int
	}{
		{"sms", g.SMs, 1, maxSMs},
		{"shared_per_sm", g.SharedPerSM, minShared, maxSharedPerSM},
		{"shared_per_block", g.SharedPerBlock, minShared, max(minShared, min(g.SharedPerSM, maxSharedPerSM))},
		{"regs_per_sm", g.RegsPerSM, 1, maxRegsPerSM},
		{"max_regs_per_thread", g.MaxRegsPerThread, 1, maxRegsPerThr},
		{"max_threads_per_sm", g.MaxThreadsPerSM, 1, maxThreadsPerSM},
		{"max_blocks_per_sm", g.MaxBlocksPerSM, 1, maxBlocksPerSM},
		{"max_threads_per_block", g.MaxThreadsPerBlock, 1, max(1, min(g.MaxThreadsPerSM, maxThreadsBlock))},
		{"l2_bytes", g.L2Bytes, 0, maxL2Bytes},
	} {
		if f.v < f.lo || f.v > f.hi {
			bad(f.field, "want an integer from %d to %d, got %d", f.lo, f.hi, f.v)
		}
	}
	if g.MaxParamBytes != 0 && (g.MaxParamBytes < 64 || g.MaxParamBytes > maxParamBytes) {
		bad("max_param_bytes", "want 0 (4096) or an integer from 64 to %d, got %d", maxParamBytes, g.MaxParamBytes)
	}
	for _, f := range []struct {
		field     string
		v, lo, hi float64
		positive  bool
	}{
		{"dram_bandwidth", g.DRAMBandwidth, 0, maxRate, true},
		{"fp32_peak", g.FP32Peak, 0, maxRate, true},
		{"l2_bandwidth", g.L2Bandwidth, 0, maxRate, false},
		{"fp16_peak", g.FP16Peak, 0, maxRate, false},
		{"tf32_peak", g.TF32Peak, 0, maxRate, false},
		{"launch_cost", g.LaunchCost, 0, maxCost, false},
		{"grid_sync_cost", g.GridSyncCost, 0, maxCost, false},
	} {
		switch {
		case f.positive && !(f.v > f.lo && f.v <= f.hi):
			bad(f.field, "want a number above %g and at most %g, got %g", f.lo, f.hi, f.v)
		case !f.positive && !(f.v >= f.lo && f.v <= f.hi):
			bad(f.field, "want a number from %g to %g, got %g", f.lo, f.hi, f.v)
		}
	}
	return errors.Join(errs...)
}

// validCC reports whether cc is a compute capability such as "8.0" or "10.3".
func validCC(cc string) bool {
	major, minor, ok := strings.Cut(cc, ".")
	digits := func(s string, n int) bool {
		return len(s) >= 1 && len(s) <= n && strings.Trim(s, "0123456789") == "" && (len(s) == 1 || s[0] != '0')
	}
	return ok && digits(major, 2) && major != "0" && digits(minor, 1)
}

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

// BlocksPerSM returns how many blocks with resources r fit on one SM at
// once (occupancy), and 0 with the limiting resource when not one does.
// Registers are allocated per warp in units of 256, shared memory in units
// of 128 bytes, as on Ampere and Hopper.
func (g GPU) BlocksPerSM(r Resources) (int, string) {
	if r.Threads > g.MaxThreadsPerBlock {
		return 0, fmt.Sprintf("%d threads per block > %d", r.Threads, g.MaxThreadsPerBlock)
	}
	if r.SharedBytes > g.SharedPerBlock {
		return 0, fmt.Sprintf("%d B shared memory per block > %d", r.SharedBytes, g.SharedPerBlock)
	}
	if r.RegsPerThread > g.MaxRegsPerThread {
		return 0, fmt.Sprintf("%d registers per thread > %d", r.RegsPerThread, g.MaxRegsPerThread)
	}
	n := g.MaxBlocksPerSM
	if r.Threads > 0 {
		n = min(n, g.MaxThreadsPerSM/r.Threads)
	}
	if r.SharedBytes > 0 {
		n = min(n, g.SharedPerSM/roundUp(r.SharedBytes, 128))
	}
	if r.RegsPerThread > 0 {
		warps := (r.Threads + 31) / 32
		perWarp := roundUp(r.RegsPerThread*32, 256)
		n = min(n, g.RegsPerSM/(perWarp*warps))
	}
	if n == 0 {
		return 0, fmt.Sprintf("%d threads × %d registers and %d B shared memory exceed one SM", r.Threads, r.RegsPerThread, r.SharedBytes)
	}
	return n, ""
}

// ResidentBlocks returns the size of an all-resident grid of blocks with
// resources r: SM count × blocks per SM (0 if a block does not fit).
func (g GPU) ResidentBlocks(r Resources) int {
	n, _ := g.BlocksPerSM(r)
	return g.SMs * n
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

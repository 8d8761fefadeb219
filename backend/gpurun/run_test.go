package gpurun_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"tec/backend/gpurun"
	"tec/backend/gpurun/fakegpu"
	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/backend/sim"
	"tec/te"
)

// modules returns the emitters' test modules, by name, sorted.
func modules(t *testing.T) ([]string, map[string]*kir.Module) {
	t.Helper()
	ms, err := kirtest.Modules()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range ms {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, ms
}

// setup returns the PTX-symbol plan of m, random feeds (as te arrays by
// name, and encoded by buffer index), and a fake GPU that runs m.
func setup(t *testing.T, m *kir.Module) (*gpurun.Plan, map[string]*te.Array, map[int][]byte, *fakegpu.GPU) {
	t.Helper()
	image := []byte("// PTX of " + m.Name)
	symbols := llvm.KernelNames(m)
	p, err := gpurun.NewPlan(m, m.Layout(), symbols, gpurun.PTX)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(m.Name))))
	arrays := map[string]*te.Array{}
	feeds := map[int][]byte{}
	for i, b := range m.Buffers {
		if !b.Role.ReadOnly() {
			continue
		}
		a := te.NewArray(b.DType, b.Shape)
		for j := range a.Data {
			switch b.DType {
			case te.I32:
				// Small and non-negative: i32 inputs may be gather
				// indexes, which must lie in their tables.
				a.Data[j] = float64(rng.IntN(7))
			case te.Bool:
				a.Data[j] = float64(rng.IntN(2))
			default:
				a.Data[j] = te.Round(b.DType, rng.Float64()*2-1)
			}
		}
		arrays[b.Name] = a
		if feeds[i], err = gpurun.Encode(a, p.Buffers[i]); err != nil {
			t.Fatal(err)
		}
	}
	return p, arrays, feeds, fakegpu.New(m, image, symbols)
}

// TestRunMatchesSimulator runs every test module through the runtime on a
// fake GPU, which checks each call (sizes, alignment, the arguments of
// every launch against the kernel IR) and computes with the simulator: the
// outputs read back must be the simulator's, bit for bit.
func TestRunMatchesSimulator(t *testing.T) {
	names, ms := modules(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			m := ms[name]
			p, arrays, feeds, gpu := setup(t, m)
			res, err := gpurun.Run(gpu, p, []byte("// PTX of "+m.Name), feeds, gpurun.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := gpu.Close(); err != nil {
				t.Fatal(err)
			}
			if got := len(gpu.Launches()); got != len(m.Kernels) {
				t.Errorf("%d launches, want %d", got, len(m.Kernels))
			}
			want, err := sim.Run(m, arrays, sim.Options{ResidentBlocks: gpu.Dev.SMs * gpu.PerSM})
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range p.Outputs {
				b := p.Buffers[o]
				got, err := gpurun.Decode(res.Outputs[i], b)
				if err != nil {
					t.Fatal(err)
				}
				w := want.Outputs[b.Name]
				if !slices.EqualFunc(got.Data, w.Data, func(x, y float64) bool { return x == y || x != x && y != y }) {
					t.Errorf("output %s = %v, want %v", b.Name, head(got.Data), head(w.Data))
				}
			}
			for i, l := range res.Launches {
				k := m.Kernels[i]
				if l.Cooperative != k.Grid.Resident || l.Grid != k.Grid.Size(gpu.Dev.SMs*gpu.PerSM) {
					t.Errorf("launch %d: %+v for %s", i, l, k.Grid)
				}
			}
		})
	}
}

func head(v []float64) []float64 { return v[:min(len(v), 6)] }

// TestRunArgumentOrder checks that the fake GPU, which the other tests
// trust, rejects a plan whose arguments are out of order.
func TestRunArgumentOrder(t *testing.T) {
	_, ms := modules(t)
	m := ms["softmax"]
	p, _, feeds, gpu := setup(t, m)
	k := &p.Kernels[0]
	if len(k.Args) < 2 {
		t.Fatalf("kernel %s has %d arguments", k.Name, len(k.Args))
	}
	k.Args[0], k.Args[1] = k.Args[1], k.Args[0]
	_, err := gpurun.Run(gpu, p, []byte("// PTX of "+m.Name), feeds, gpurun.Options{})
	if err == nil || !strings.Contains(err.Error(), "argument 0") {
		t.Fatalf("got %v, want an error about argument 0", err)
	}
	if err := gpu.Close(); err != nil {
		t.Errorf("after a failed run: %v", err)
	}
}

// TestRunDynamicShared: a kernel whose shared arrays exceed 48 KiB opts in
// to them and is launched with them as dynamic shared memory; on a device
// that cannot give as much, the run fails before any launch.
func TestRunDynamicShared(t *testing.T) {
	m, _ := kirtest.WorkspaceTemp()
	k := m.Kernels[0]
	k.Shared = []*kir.Buffer{
		{Name: "a", Space: kir.Shared, DType: te.F16, Shape: []int{3}},
		{Name: "b", Space: kir.Shared, DType: te.F32, Shape: []int{16 << 10}},
	}
	p, _, feeds, gpu := setup(t, m)
	if want := 16 + 64<<10; p.Kernels[0].Shared != want {
		t.Fatalf("plan's shared memory %d, want %d (16-byte aligned arrays)", p.Kernels[0].Shared, want)
	}
	if _, err := gpurun.Run(gpu, p, []byte("// PTX of ws"), feeds, gpurun.Options{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(gpu.Calls, fmt.Sprintf("SetMaxDynamicShared(%s, %d)", p.Kernels[0].Symbol, 16+64<<10)) {
		t.Errorf("no opt-in among %q", gpu.Calls)
	}
	_, _, _, small := setup(t, m)
	small.Dev.SharedPerBlockOptin = 48 << 10
	_, err := gpurun.Run(small, p, []byte("// PTX of ws"), feeds, gpurun.Options{})
	if err == nil || !strings.Contains(err.Error(), "more than the 49152 B a block may use") {
		t.Fatalf("got %v", err)
	}
	if len(small.Launches()) != 0 {
		t.Errorf("launched %q", small.Launches())
	}
}

// TestRunBench times the runs with events: each kernel's time is the span
// between the events around it, the total the span of the run.
func TestRunBench(t *testing.T) {
	_, ms := modules(t)
	m := ms["features"] // two kernels
	p, _, feeds, gpu := setup(t, m)
	// Kernel i's nth launch takes (i+1) * (n+1) ms.
	index := map[string]int{}
	for i, k := range m.Kernels {
		index[k.Name] = i
	}
	gpu.KernelTime = func(kernel string, n int) float64 { return float64((index[kernel] + 1) * (n + 1)) }
	res, err := gpurun.Run(gpu, p, []byte("// PTX of "+m.Name), feeds, gpurun.Options{Bench: 4, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := gpu.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := len(gpu.Launches()), 7*len(m.Kernels); got != want {
		t.Errorf("%d launches, want %d (1 + 2 warm-up + 4 timed runs)", got, want)
	}
	// The timed runs are launches n = 3..6: kernel 0 takes 4..7 ms, kernel
	// 1 takes 8..14 ms, the whole run 12..21 ms.
	want := &gpurun.Bench{Runs: 4, Warmup: 2, Total: gpurun.Stats{Median: 16.5, Min: 12, Max: 21},
		Kernels: []gpurun.Stats{{Median: 5.5, Min: 4, Max: 7}, {Median: 11, Min: 8, Max: 14}}}
	if fmt.Sprint(res.Bench) != fmt.Sprint(want) {
		t.Errorf("bench %+v, want %+v", res.Bench, want)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		ms   []float64
		want gpurun.Stats
	}{
		{[]float64{3}, gpurun.Stats{Median: 3, Min: 3, Max: 3}},
		{[]float64{5, 1, 3}, gpurun.Stats{Median: 3, Min: 1, Max: 5}},
		{[]float64{4, 1, 3, 2}, gpurun.Stats{Median: 2.5, Min: 1, Max: 4}},
	} {
		if got := gpurun.Summarize(tc.ms); got != tc.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", tc.ms, got, tc.want)
		}
	}
}

// TestResidentGrid: a grid-synced kernel gets every block that fits, at
// most its cap, and a device that cannot hold one is an error with the
// numbers and a fix.
func TestResidentGrid(t *testing.T) {
	dev := gpurun.Device{Name: "A100", SMs: 108, Cooperative: true}
	for _, tc := range []struct {
		blocks, perSM int
		coop          bool
		want          int
		err           string
	}{
		{blocks: 0, perSM: 2, coop: true, want: 216},
		{blocks: 100, perSM: 2, coop: true, want: 100},
		{blocks: 500, perSM: 2, coop: true, want: 216},
		{blocks: 0, perSM: 0, coop: true, err: "108 SMs × 0 blocks of 1024 threads with 50000 B of dynamic shared memory per SM = 0 blocks fit on A100"},
		{blocks: 0, perSM: 2, coop: false, err: "A100 does not support cooperative launches"},
	} {
		d := dev
		d.Cooperative = tc.coop
		k := gpurun.Kernel{Name: "k", Blocks: tc.blocks, Resident: true, Block: 1024, Shared: 50000}
		got, err := gpurun.ResidentGrid(k, d, tc.perSM)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%+v: got %d, %v; want %d", tc, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "hint: ")):
			t.Errorf("%+v: got %v, want %q and a hint", tc, err, tc.err)
		}
	}
}

// TestRunCooperativeTooLarge: when not a block of a grid-synced kernel
// fits, the run fails before launching anything, and frees its memory.
func TestRunCooperativeTooLarge(t *testing.T) {
	_, ms := modules(t)
	m := ms["features"]
	p, _, feeds, gpu := setup(t, m)
	gpu.PerSM = 0
	_, err := gpurun.Run(gpu, p, []byte("// PTX of "+m.Name), feeds, gpurun.Options{})
	if err == nil || !strings.Contains(err.Error(), "= 0 blocks fit on fake GPU") {
		t.Fatalf("got %v", err)
	}
	if len(gpu.Launches()) != 0 {
		t.Errorf("launched %q", gpu.Launches())
	}
	if err := gpu.Close(); err != nil {
		t.Error(err)
	}
}

// TestRunDriverErrors: an error of any driver call fails the run with the
// call's error and what the runtime was doing, and frees what it
// allocated.
func TestRunDriverErrors(t *testing.T) {
	_, ms := modules(t)
	m := ms["features"]
	for _, tc := range []struct{ call, want string }{
		{"Device", "querying the device"},
		{"Alloc", "allocating 256 bytes for the workspace"},
		{"CopyToDevice", "copying input x to the device"},
		{"LoadModule", "loading the ptx of model features"},
		{"Function", "looking up k_"},
		{"Occupancy", "occupancy"},
		{"Launch", "launching kernel"},
		{"Synchronize", "running model features"},
		{"CopyFromDevice", "copying output"},
		{"NewEvent", "creating an event"},
		{"Record", "recording an event"},
		{"Elapsed", "timing kernel"},
		{"Free", "freeing device memory"},
	} {
		t.Run(tc.call, func(t *testing.T) {
			p, _, feeds, gpu := setup(t, m)
			injected := errors.New("CUDA_ERROR_INJECTED")
			gpu.Fail = func(call string) error {
				if call == tc.call {
					return injected
				}
				return nil
			}
			_, err := gpurun.Run(gpu, p, []byte("// PTX of "+m.Name), feeds, gpurun.Options{Bench: 1})
			if !errors.Is(err, injected) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q and the driver's error", err, tc.want)
			}
			gpu.Fail = nil
			if err := gpu.Close(); err != nil && tc.call != "Free" {
				t.Errorf("after the failure: %v", err)
			}
		})
	}
}

// TestRunWrongArch: code that the driver cannot load for the GPU's
// architecture fails with a hint that names both.
func TestRunWrongArch(t *testing.T) {
	_, ms := modules(t)
	m := ms["softmax"]
	p, _, feeds, gpu := setup(t, m)
	p.Format, p.Target = gpurun.Cubin, "sm_80"
	gpu.Dev.Major = 9
	gpu.Fail = func(call string) error {
		if call == "LoadModule" {
			return errors.New("CUDA_ERROR_NO_BINARY_FOR_GPU")
		}
		return nil
	}
	_, err := gpurun.Run(gpu, p, nil, feeds, gpurun.Options{})
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NO_BINARY_FOR_GPU\n  hint: it was compiled for sm_80 and fake GPU is sm_90") {
		t.Fatalf("got %v", err)
	}
}

func TestRunFeedErrors(t *testing.T) {
	_, ms := modules(t)
	m := ms["features"]
	for _, tc := range []struct {
		name string
		edit func(map[int][]byte)
		want string
	}{
		{"missing", func(f map[int][]byte) { delete(f, 0) }, "no data for input x f16[64]"},
		{"short", func(f map[int][]byte) { f[0] = f[0][1:] }, "input x f16[64]: 127 bytes of data, want 128"},
		{"not fed", func(f map[int][]byte) { f[2] = make([]byte, 12) }, "data given for temp acc"},
		{"no buffer", func(f map[int][]byte) { f[99] = nil }, "buffer 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, feeds, gpu := setup(t, m)
			tc.edit(feeds)
			_, err := gpurun.Run(gpu, p, nil, feeds, gpurun.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if len(gpu.Calls) != 0 {
				t.Errorf("the driver was called: %q", gpu.Calls)
			}
		})
	}
}

func TestEncodeDecode(t *testing.T) {
	for _, tc := range []struct {
		dt   te.DType
		data []float64
		raw  []byte
	}{
		{te.F32, []float64{1, -2.5}, []byte{0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0}},
		{te.F16, []float64{1, -2.5}, []byte{0, 0x3c, 0x00, 0xc1}},
		{te.BF16, []float64{1, -2.5}, []byte{0x80, 0x3f, 0x20, 0xc0}},
		{te.I32, []float64{7, -1}, []byte{7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}},
		{te.Bool, []float64{1, 0}, []byte{1, 0}},
	} {
		b := gpurun.Buffer{Name: "x", Role: "input", DType: tc.dt.String(), Shape: []int{2}, Bytes: int64(2 * tc.dt.Size())}
		a := te.NewArray(tc.dt, []int{2})
		copy(a.Data, tc.data)
		raw, err := gpurun.Encode(a, b)
		if err != nil || !bytes.Equal(raw, tc.raw) {
			t.Errorf("Encode(%s %v) = % x, %v; want % x", tc.dt, tc.data, raw, err, tc.raw)
		}
		back, err := gpurun.Decode(tc.raw, b)
		if err != nil || !slices.Equal(back.Data, tc.data) {
			t.Errorf("Decode(%s % x) = %v, %v; want %v", tc.dt, tc.raw, back, err, tc.data)
		}
	}
	b := gpurun.Buffer{Name: "x", DType: "f32", Shape: []int{2, 3}, Bytes: 24}
	if _, err := gpurun.Encode(te.NewArray(te.F32, []int{3, 2}), b); err == nil || !strings.Contains(err.Error(), "x: got f32[3, 2], want f32[2, 3]") {
		t.Errorf("Encode of the wrong shape: %v", err)
	}
	if _, err := gpurun.Decode(make([]byte, 20), b); err == nil || !strings.Contains(err.Error(), "20 bytes, want 24") {
		t.Errorf("Decode of too few bytes: %v", err)
	}
}

// TestRunBadIndex runs the gather with an id past its table: the kernels
// record it, and Run reads the record back and reports it.
func TestRunBadIndex(t *testing.T) {
	_, ms := modules(t)
	for _, name := range []string{"gather", "gather_ws"} {
		m := ms[name]
		p, arrays, feeds, gpu := setup(t, m)
		if p.ErrorRecord == 0 || len(p.Gathers) != 1 {
			t.Fatalf("%s: plan's error record %d, gathers %v", name, p.ErrorRecord, p.Gathers)
		}
		ids := slices.IndexFunc(p.Buffers, func(b gpurun.Buffer) bool { return b.Name == "ids" })
		bad := te.NewArray(te.I32, arrays["ids"].Shape)
		copy(bad.Data, arrays["ids"].Data)
		bad.Data[2] = 30 // ids[2] + 1 = 31 is past wte's 12 rows
		var err error
		if feeds[ids], err = gpurun.Encode(bad, p.Buffers[ids]); err != nil {
			t.Fatal(err)
		}
		_, err = gpurun.Run(gpu, p, []byte("// PTX of "+m.Name), feeds, gpurun.Options{})
		const want = "gather index from ids[2] = 31 is outside wte's dimension 0 [0, 12)"
		var bi *kir.BadIndexError
		if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &bi) {
			t.Errorf("%s: run with a bad id: %v, want a *kir.BadIndexError %q", name, err, want)
		}
	}
}

package cuda

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/gpu"
	"tec/internal/testkit/golden"
	"tec/internal/testkit/tooltest"
	"tec/te"
)

// modules returns the modules of the golden tests, by name.
func modules(t *testing.T) map[string]*kir.Module {
	t.Helper()
	ms, err := kirtest.Modules()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func sortedNames(ms map[string]*kir.Module) []string {
	var names []string
	for n := range ms {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func sm80(t testing.TB) gpu.Arch {
	tg, err := gpu.LookupArch("sm_80")
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestGolden keeps the emitted code readable and stable: the sources of
// small programs (softmax, a matmul, a convolution, and a module with every
// construct of kir) and one header and runner are compared with
// testdata/*.golden. Run with -update to rewrite them.
func TestGolden(t *testing.T) {
	ms := modules(t)
	for _, name := range sortedNames(ms) {
		t.Run(name, func(t *testing.T) {
			files, err := Emit(ms[name], sm80(t))
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", name+".cu.golden"), files.Source.Data)
			if name == "softmax" {
				golden.Check(t, filepath.Join("testdata", "softmax.h.golden"), files.Header.Data)
				golden.Check(t, filepath.Join("testdata", "main.cu.golden"), files.Runner.Data)
			}
		})
	}
}

// TestShape checks properties of the emitted code that matter to users and
// to the next stages: comments naming stages and source lines, grid syncs,
// cooperative launches, storage conversions, and floor division only where
// it is needed.
func TestShape(t *testing.T) {
	files, err := Emit(kirtest.Features(), sm80(t))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files.Source.Data)
	for _, want := range []string{
		"// Stage acc, defined at features.te:4:3.",
		"cg::grid_group grid = cg::this_grid();",
		"grid.sync();",
		"__shared__ float red[16];",
		"atomicAdd(&acc[0], s);",
		"tec_atomic_max(&acc[1], s);",
		"tec_atomic_min(&lo[0], red[tid]);",
		"__half2float(x[",
		"__bfloat162float(w[",
		"= __float2half_rn(",
		"= __float2bfloat16_rn(",
		"tec_floordiv(e - 32, 5)",
		"cudaLaunchCooperativeKernel",
		"cudaOccupancyMaxActiveBlocksPerMultiprocessor",
		"#pragma unroll",
		"float loc[4];",
		"d < 0 ? 0.0f : __half2float(x[d * 7])",
		"TEC_CHECK(cudaMemcpyAsync(outputs[5], bufs[0], 128, cudaMemcpyDeviceToDevice, stream)",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("the source lacks %q", want)
		}
	}
	hdr := string(files.Header.Data)
	for _, want := range []string{
		"cudaError_t features_run(const void *const *inputs, const void *const *params, void *const *outputs,",
		"size_t features_workspace_size(void);",
		"FEATURES_OUTPUT_B_F = 4,",
		"[5] x f16[64]",
	} {
		if !strings.Contains(hdr, want) {
			t.Errorf("the header lacks %q", want)
		}
	}
}

// TestSharedKernels checks that kernels with the same code share a
// function.
func TestSharedKernels(t *testing.T) {
	m := kirtest.Features()
	misc := m.Kernels[1]
	twin := *misc
	twin.Name = "misc.2"
	m.Kernels = append(m.Kernels, &twin)
	files, err := Emit(m, sm80(t))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files.Source.Data)
	if n := strings.Count(src, "static __global__"); n != 2 {
		t.Errorf("%d kernels emitted, want 2", n)
	}
	for _, want := range []string{"// The same code computes misc.2, on other buffers.", `{(const void*)k_misc, "misc.2",`} {
		if !strings.Contains(src, want) {
			t.Errorf("the source lacks %q", want)
		}
	}
}

func TestEmitErrors(t *testing.T) {
	tg := sm80(t)
	big := kirtest.Features()
	a100, _ := gpu.Builtin("a100") // sm_80's model
	big.Kernels[0].Shared[0].Shape = []int{a100.SharedPerBlock/4 + 1}
	orphan := kirtest.Features()
	orphan.Outputs = orphan.Outputs[1:]
	bad := kirtest.Features()
	bad.Kernels[1].Block = 0
	for _, tc := range []struct {
		name string
		m    *kir.Module
		want string
	}{
		{"too much shared memory", big, "needs 166920 B of shared memory per block, more than the 166912 B a block may use on sm_80"},
		{"output not among outputs", orphan, "buffer y has role output but is not among the module's outputs"},
		{"ill-formed", bad, "kernel misc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Emit(tc.m, tg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Emit: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDynamicShared(t *testing.T) {
	m := kirtest.Features()
	m.Kernels[0].Shared[0].Shape = []int{16000} // 64000 B: beyond the static limit
	files, err := Emit(m, sm80(t))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files.Source.Data)
	for _, want := range []string{"extern __shared__ __align__(16) unsigned char tec_dynamic_smem[];",
		"float* red = reinterpret_cast<float*>(tec_dynamic_smem + 0);",
		`{(const void*)k_persistent, "persistent", 8, 16, true, true, 64004,`} {
		if !strings.Contains(src, want) {
			t.Errorf("the source lacks %q", want)
		}
	}
}

// nvccJobs bounds the nvcc processes TestNVCC runs at once, so that the
// test suite's memory stays under a laptop's (docs/testing.md).
const nvccJobs = 4

// nvccArchs are the architectures every emitted file is compiled for.
var nvccArchs = []string{"-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90"}

// TestNVCC compiles the emitted code of every golden module with nvcc for
// sm_80 and sm_90, links the softmax runner, and checks the runner's
// handling of bad input, which needs no GPU.
func TestNVCC(t *testing.T) {
	nvcc := tooltest.NVCC(t)
	ms := modules(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	// At most one nvcc per CPU, and no more than nvccJobs: each holds
	// about 200 MB at its peak, and more at once than CPUs only adds
	// memory, not speed.
	jobs := make(chan struct{}, min(runtime.NumCPU(), nvccJobs))
	for i, name := range sortedNames(ms) {
		files, err := Emit(ms[name], sm80(t))
		if err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files.All() {
			if err := os.WriteFile(filepath.Join(sub, f.Name), f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs <- struct{}{}
			defer func() { <-jobs }()
			args := append([]string{"-c", "-Werror", "all-warnings", "-o", name + ".o", name + ".cu"}, nvccArchs...)
			switch name {
			case "softmax":
				args = append([]string{"-o", "run", "-Werror", "all-warnings", "main.cu", name + ".cu"}, nvccArchs...)
			case "features":
				// With the stage clock (clock.go): two kernels, one grid-synced.
				args = append([]string{"-o", "run", "-DTEC_STAGE_CLOCK", "-Werror", "all-warnings", "main.cu", name + ".cu"}, nvccArchs...)
			}
			errs[i] = runIn(sub, nvcc, args...)
		}()
	}
	wg.Wait()
	for i, name := range sortedNames(ms) {
		if errs[i] != nil {
			t.Errorf("%s: %v", name, errs[i])
		}
	}
	if t.Failed() {
		return
	}

	// The runner, without a GPU: usage and data errors come first.
	run := filepath.Join(dir, "softmax", "run")
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	// A float32 array of the wrong shape, as numpy.save writes it.
	hdr := "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 7), }"
	hdr += strings.Repeat(" ", 64-(10+len(hdr)+1)%64) + "\n"
	npy := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), 0)
	npy = append(append(npy, hdr...), make([]byte, 4*28)...)
	if err := os.WriteFile(filepath.Join(data, "x.npy"), npy, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "usage:"},
		{[]string{"--bogus"}, 1, "run: unknown argument --bogus"},
		{[]string{"--inputs", dir}, 1, "no file " + dir + "/x.npy for the input x f32[4, 8] (or pass --fill)"},
		{[]string{"--inputs", data}, 1, "x.npy: shape [4, 7], want f32[4, 8] for x"},
		{[]string{"--stage-clock", "clock.json"}, 1, "run: --stage-clock: this runner has no stage clock; build it with nvcc -DTEC_STAGE_CLOCK"},
		{[]string{"--stage-clock", "clock.json", "--bogus"}, 1, "run: unknown argument --bogus"},
	} {
		out, err := exec.Command(run, tc.args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("run %v: status %d, output %q; want status %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}
}

func runIn(dir, name string, args ...string) error {
	cmd := exec.CommandContext(context.Background(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return nil
}

// TestConstants checks the C spelling of constants.
func TestConstants(t *testing.T) {
	for _, tc := range []struct {
		c    *kir.Const
		want string
	}{
		{kir.F(1), "1.0f"},
		{kir.F(0.1), "0.1f"},
		{kir.F(1e-12), "1e-12f"},
		{kir.F(-2.5), "-2.5f"},
		{kir.F(posInf()), "INFINITY"},
		{kir.F(-posInf()), "-INFINITY"},
		{kir.I(-3), "-3"},
		{kir.I(-2147483648), "(-2147483647 - 1)"},
		{kir.B(true), "true"},
		{&kir.Const{Value: 0, T: te.Bool}, "false"},
	} {
		if got := constant(tc.c); got != tc.want {
			t.Errorf("constant(%v) = %q, want %q", tc.c.Value, got, tc.want)
		}
	}
}

func posInf() float64 { return math.Inf(1) }

// TestAliasedTemporaries checks that temporaries that share workspace bytes
// within one kernel (live in different grid epochs) are declared without
// __restrict__ and const, and the others keep them.
func TestAliasedTemporaries(t *testing.T) {
	tmp := func(name string) *kir.Buffer {
		return &kir.Buffer{Name: name, Role: kir.Temp, DType: te.F32, Shape: []int{64}}
	}
	a, b, c := tmp("a"), tmp("b"), tmp("c")
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{64}}
	copyTo := func(dst, src *kir.Buffer) kir.Stmt {
		i := kir.NewVar("i", te.I32)
		var v kir.Expr = kir.F(1)
		if src != nil {
			v = kir.Add(kir.Ld(src, i), kir.F(1))
		}
		return &kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(64), Body: []kir.Stmt{&kir.Store{Buf: dst, Index: i, Value: v}}}
	}
	m := &kir.Module{Name: "alias", TempsInWorkspace: true, Buffers: []*kir.Buffer{a, b, c, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{Name: "k", Grid: kir.Grid{Resident: true}, Block: 32, Params: []*kir.Buffer{a, b, c, y},
			Body: []kir.Stmt{copyTo(a, nil), &kir.GridSync{}, copyTo(b, a), &kir.GridSync{}, copyTo(c, b), &kir.GridSync{}, copyTo(y, c)}}}}
	offsets, _ := m.WorkspaceLayout()
	if offsets[a] != offsets[c] {
		t.Fatalf("a at %d and c at %d do not share bytes", offsets[a], offsets[c])
	}
	files, err := Emit(m, sm80(t))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files.Source.Data)
	for _, want := range []string{
		"  float* a = reinterpret_cast<float*>(ws + ",
		"  float* c = reinterpret_cast<float*>(ws + ",
		"  float* __restrict__ b = reinterpret_cast<float*>(ws + ",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("the kernel lacks %q:\n%s", want, src)
		}
	}
}

// TestEmitWith checks that EmitWith emits what Emit does given the layout
// Emit would compute, and places the temporaries where a layout it is
// given says.
func TestEmitWith(t *testing.T) {
	ms := modules(t)
	for _, name := range sortedNames(ms) {
		m := ms[name]
		want, err := Emit(m, sm80(t))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := EmitWith(m, sm80(t), Options{Layout: m.Layout(), Verified: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, f := range got.All() {
			if !bytes.Equal(f.Data, want.All()[i].Data) {
				t.Errorf("%s: EmitWith's %s differs from Emit's (-Emit +EmitWith), %s", name, f.Name, golden.Diff(string(want.All()[i].Data), string(f.Data)))
			}
		}
	}
	m, tmp := kirtest.WorkspaceTemp()
	files, err := EmitWith(m, sm80(t), Options{Layout: &kir.Layout{Offsets: map[*kir.Buffer]int64{tmp: 512}, Bytes: 768}})
	if err != nil {
		t.Fatal(err)
	}
	src := string(files.Source.Data)
	for _, want := range []string{"reinterpret_cast<float*>(ws + 512)", "_workspace_size(void) { return 768; }"} {
		if !strings.Contains(src, want) {
			t.Errorf("the source lacks %q:\n%s", want, src)
		}
	}
}

// TestDeadGatherReports: a definition whose value is dead but gathers
// with a reported index is still emitted, since it may write the error
// record (the simulator's device path evaluates it, as the LLVM path does).
func TestDeadGatherReports(t *testing.T) {
	m := modules(t)["gather"]
	var bounded *kir.Bounded
	kir.WalkStmts(m.Kernels[0].Body, func(s kir.Stmt) bool {
		kir.Exprs(s, func(e kir.Expr) {
			kir.WalkExpr(e, func(x kir.Expr) bool {
				if b, ok := x.(*kir.Bounded); ok && bounded == nil {
					bounded = b
				}
				return true
			})
		})
		return true
	})
	if bounded == nil {
		t.Fatal("no gather in the gather module")
	}
	stage := m.Kernels[0].Body[0].(*kir.Stage)
	dead := kir.NewVar("unused", te.I32)
	stage.Body = append([]kir.Stmt{&kir.Let{Var: dead, Value: &kir.Bounded{X: kir.I(99), N: bounded.N, Buf: bounded.Buf,
		Record: bounded.Record, Site: bounded.Site}}}, stage.Body...)
	files, err := Emit(m, sm80(t))
	if err != nil {
		t.Fatal(err)
	}
	if src := string(files.Source.Data); !strings.Contains(src, "tec_bounded(99, ") {
		t.Errorf("the dead definition that reports is left out:\n%s", src)
	}
}

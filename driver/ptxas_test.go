package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tec/backend/cuda"
	"tec/examples"
	"tec/gpu"
	"tec/internal/testkit/tooltest"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// nvccOutput is what nvcc -Xptxas -v printed of two kernels of BERT, the
// second calling a stage function, with the spills changed.
const nvccOutput = `ptxas info    : 16 bytes gmem
ptxas info    : Compiling entry function '_Z13k_k26_x_mu_24PK6__halfS1_S1_PfS2_PiS3_Ph' for 'sm_80'
ptxas info    : Function properties for _Z13k_k26_x_mu_24PK6__halfS1_S1_PfS2_PiS3_Ph
    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 17 registers, 5120 bytes smem, 416 bytes cmem[0]
ptxas info    : Compiling entry function '_Z14k_k25_a_ctx_11PK6__halfS1_S1_S1_S1_S1_S1_S1_Ph' for 'sm_80'
ptxas info    : Function properties for _Z14k_k25_a_ctx_11PK6__halfS1_S1_S1_S1_S1_S1_S1_Ph
    16 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 118 registers, 424 bytes cmem[0], 16 bytes cmem[2]
ptxas info    : Function properties for _ZN37_INTERNAL_b15c8f48_7_bert_cu_c580bdab5s_x_1EP6__halfPKS0_PKfS5_S3_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
`

// ptxasOutput is what ptxas -v prints of an entry function of the LLVM
// path, and of a function compiled on its own.
const ptxasOutput = `ptxas info    : 0 bytes gmem
ptxas info    : Compiling function 's_x_1' for 'sm_90'
ptxas info    : Function properties for s_x_1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 20 registers
ptxas info    : Compiling entry function 'k_k0_h' for 'sm_90'
ptxas info    : Function properties for k_k0_h
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, 400 bytes cmem[0]
`

func TestParsePTXAS(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want map[string]*PTXASFunction
	}{
		{"nvcc", nvccOutput, map[string]*PTXASFunction{
			"k_k26_x_mu_24":  {Registers: 17, SpillStores: 8, SpillLoads: 4},
			"k_k25_a_ctx_11": {Registers: 118, StackFrame: 16, SpillStores: 12, SpillLoads: 12, Calls: true},
		}},
		{"ptxas", ptxasOutput, map[string]*PTXASFunction{"k_k0_h": {Registers: 40}}},
		{"empty", "", map[string]*PTXASFunction{}},
	}
	for _, tt := range tests {
		if got := ParsePTXAS([]byte(tt.out)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDemangle(t *testing.T) {
	for sym, want := range map[string]string{
		"_Z13k_k26_x_mu_24PK6__half": "k_k26_x_mu_24",
		"_ZL4k_k0Pf":                 "k_k0",
		"k_k0_h":                     "k_k0_h",
		"_Z99short":                  "_Z99short",
		"_Zx":                        "_Zx",
	} {
		if got := demangle(sym); got != want {
			t.Errorf("demangle(%q) = %q, want %q", sym, got, want)
		}
	}
}

// tinyExample checks example name in its tiny configuration.
func tinyExample(t *testing.T, ex examples.Example) *te.Program {
	t.Helper()
	p, err := Check(ex.File(), ex.Source(), lang.Config{Model: ex.Model, Defines: ex.Tiny})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompileChecked runs the register check with an nvcc that claims
// regs registers for every kernel: more than the plan's blocks per SM
// leave plans again with them, fewer keeps the plan.
func TestCompileChecked(t *testing.T) {
	// The full-size softmax's kernel counts on 2 blocks per SM of an A100.
	ex, _ := examples.Lookup("softmax")
	prog, err := Check(ex.File(), ex.Source(), lang.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := gpu.LookupArch("sm_80")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Compile(prog, pipeline.Options{Level: 4}); err != nil || c.Module.Kernels[0].BlocksPerSM < 2 {
		t.Fatalf("the softmax's kernel counts on fewer than 2 blocks per SM (%v): the test needs another", err)
	}
	tests := []struct {
		name        string
		tool        Toolchain
		regs, spill int
		level       int
		replanned   bool
		source      string
		warnings    int
		bounded     bool // the kernels carry a blocks-per-SM launch bound
	}{
		{"more registers", NVCC, 200, 8, 4, true, "ptxas", 1, true},
		{"fewer registers", NVCC, 16, 0, 4, false, "estimate", 0, true},
		{"no toolchain", NoToolchain, 200, 0, 4, false, "estimate", 0, false},
		{"-O2", NVCC, 200, 0, 2, false, "estimate", 0, false},
		{"no llc", LLCPTXAS, 200, 0, 4, false, "estimate", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tooltest.FakeNVCC(t, tt.regs, tt.spill))
			plans := 0
			dump := func(pass, _ string) {
				if pass == "plan" {
					plans++
				}
			}
			c, err := CompileChecked(context.Background(), prog, pipeline.Options{Level: tt.level, Dump: dump}, tg, tt.tool)
			if err != nil {
				t.Fatal(err)
			}
			if plans != 1 {
				t.Errorf("the plan was dumped %d times, want once", plans)
			}
			check := c.Registers
			if check.Replanned != tt.replanned || len(check.Warnings) != tt.warnings {
				t.Fatalf("replanned %v, warnings %q; want %v and %d per kernel", check.Replanned, check.Warnings, tt.replanned, tt.warnings)
			}
			for i, k := range check.Kernels {
				if k.Source() != tt.source {
					t.Errorf("kernel %s: source %s, want %s", k.Kernel, k.Source(), tt.source)
				}
				if want := tt.regs + RegisterMargin; tt.replanned && k.Planned != want {
					t.Errorf("kernel %s: planned with %d registers, want %d", k.Kernel, k.Planned, want)
				}
				mk := c.Module.Kernels[i]
				if bounded := mk.BlocksPerSM > 0; bounded != tt.bounded {
					t.Errorf("kernel %s: launch bound of %d blocks per SM; want one: %v (only a checked plan bounds ptxas)", k.Kernel, mk.BlocksPerSM, tt.bounded)
				}
				if tt.replanned && mk.BlocksPerSM > 0 {
					n, _ := c.Plan.GPU.BlocksPerSM(gpu.Block{Threads: mk.Block, RegsPerThread: tt.regs})
					if mk.BlocksPerSM > n {
						t.Errorf("kernel %s: launch bounds count on %d blocks per SM; %d registers leave %d", k.Kernel, mk.BlocksPerSM, tt.regs, n)
					}
				}
			}
			if !tt.bounded && len(check.Floors) > 0 {
				t.Errorf("floors %v where no check ran", check.Floors)
			}
			for _, pk := range c.Plan.Kernels {
				for _, st := range pk.Stages {
					if got, want := check.Floors[st.Name], tt.regs+RegisterMargin; tt.bounded && got != want {
						t.Errorf("stage %s: floor %d, want ptxas's %d plus the margin", st.Name, got, tt.regs)
					}
				}
			}
			if tt.spill > 0 && !strings.Contains(check.Warnings[0], "spills 8 B") {
				t.Errorf("warning %q does not give the spill", check.Warnings[0])
			}
		})
	}
}

// fakeNVCC writes to a new directory an nvcc that compiles nothing, as
// tooltest.FakeNVCC does, and claims regs[name] registers per thread for
// the kernel of that name in the CUDA C++ it is given, others for the
// rest, with no spills. It returns the directory, to put on PATH.
func fakeNVCC(t *testing.T, regs map[string]int, others int) string {
	t.Helper()
	var cases strings.Builder
	for name, n := range regs {
		fmt.Fprintf(&cases, "    %s) r=%d ;;\n", name, n)
	}
	script := fmt.Sprintf(`#!/bin/sh
PATH="$PATH:/usr/bin:/bin"
out= src=
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
    *.cu) src="$1" ;;
  esac
  shift
done
: > "$out"
grep -A1 '__launch_bounds__' "$src" | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' | while read k; do
  case "$k" in
%s    *) r=%d ;;
  esac
  echo "ptxas info    : Compiling entry function '$k' for 'sm_80'"
  echo "ptxas info    : Function properties for $k"
  echo "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
  echo "ptxas info    : Used $r registers, 384 bytes cmem[0]"
done
`, cases.String(), others)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvcc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// heavyLight is a program whose plan (-O4, an A100) is a light kernel, a
// softmax of 8 blocks per SM, and a heavy one, a matrix product.
const heavyLight = `model heavy_light {
  input x: f32[4096, 1024]
  input w: f32[1024, 1024]
  s = softmax(x)
  output y = matmul(s, w)
}`

// TestCompileCheckedStageFloors runs the register check with an nvcc that
// claims many registers for the heavy kernel of a program and few for the
// light one: the heavy kernel's launch bounds do not leave its registers,
// so the program is planned again, with each kernel's figure the floor of
// its own stages. The light kernel keeps its blocks per SM, which one
// floor for the whole program (the heavy kernel's) took from it, and every
// kernel's launch bounds hold the registers of its stages.
func TestCompileCheckedStageFloors(t *testing.T) {
	const heavyRegs, lightRegs = 200, 16
	prog, err := Check("heavy_light.te", []byte(heavyLight), lang.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := gpu.LookupArch("sm_80")
	if err != nil {
		t.Fatal(err)
	}
	opts := pipeline.Options{Level: 4}
	first, err := Compile(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Plan.Kernels) != 2 || first.Module.Kernels[0].BlocksPerSM < 2 {
		t.Fatalf("the plan is not a light kernel of 2 or more blocks per SM and a heavy one:\n%s", first.Plan)
	}
	light, heavy := first.Module.Kernels[0], first.Module.Kernels[1]
	t.Setenv("PATH", fakeNVCC(t, map[string]int{cuda.KernelNames(first.Module)[heavy]: heavyRegs}, lightRegs))
	c, err := CompileChecked(context.Background(), prog, opts, tg, NVCC)
	if err != nil {
		t.Fatal(err)
	}
	check := c.Registers
	if !check.Replanned {
		t.Fatalf("not planned again with ptxas's %d registers for %s", heavyRegs, heavy.Name)
	}
	want := map[string]int{}
	for i, regs := range []int{lightRegs, heavyRegs} {
		for _, st := range first.Plan.Kernels[i].Stages {
			want[st.Name] = regs + RegisterMargin
		}
	}
	if !reflect.DeepEqual(check.Floors, want) {
		t.Errorf("floors %v, want %v", check.Floors, want)
	}
	lightStage := first.Plan.Kernels[0].Stages[0].Name
	for i, pk := range c.Plan.Kernels {
		mk, regs, hasLight := c.Module.Kernels[i], 0, false
		for _, st := range pk.Stages {
			regs = max(regs, want[st.Name])
			hasLight = hasLight || st.Name == lightStage
		}
		if n, _ := c.Plan.GPU.BlocksPerSM(gpu.Block{Threads: mk.Block, SharedBytes: int(mk.SharedBytes()), RegsPerThread: regs}); mk.BlocksPerSM > n {
			t.Errorf("kernel %s: launch bounds count on %d blocks per SM; its stages' %d registers leave %d", mk.Name, mk.BlocksPerSM, regs, n)
		}
		if hasLight && mk.BlocksPerSM < light.BlocksPerSM {
			t.Errorf("kernel %s, computing %s: planned again at %d blocks per SM, want the light kernel's %d", mk.Name, lightStage, mk.BlocksPerSM, light.BlocksPerSM)
		}
	}
}

// TestRegisterEstimates calibrates the planner's register estimates
// against ptxas (through nvcc) on the tiny examples at -O4: it states the
// largest ratio of ptxas's registers to the estimate, and checks that
// after the check every kernel's launch bounds hold what ptxas allocated.
func TestRegisterEstimates(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every example with nvcc")
	}
	tooltest.NVCC(t)
	tg, err := gpu.LookupArch("sm_80")
	if err != nil {
		t.Fatal(err)
	}
	worst, where := 0.0, ""
	for _, ex := range examples.All() {
		c, err := CompileChecked(context.Background(), tinyExample(t, ex), pipeline.Options{Level: pipeline.MaxLevel}, tg, NVCC)
		if err != nil {
			t.Fatalf("%s: %v", ex.Name, err)
		}
		for i, k := range c.Registers.Kernels {
			if k.PTXAS == 0 || k.Estimate == 0 {
				continue
			}
			if r := float64(k.PTXAS) / float64(k.Estimate); r > worst {
				worst, where = r, ex.Name+" "+k.Kernel
			}
			mk := c.Module.Kernels[i]
			n, _ := c.Plan.GPU.BlocksPerSM(gpu.Block{Threads: mk.Block, SharedBytes: int(mk.SharedBytes()), RegsPerThread: k.PTXAS})
			if mk.BlocksPerSM > n {
				t.Errorf("%s kernel %s: launch bounds count on %d blocks per SM; ptxas's %d registers leave %d", ex.Name, k.Kernel, mk.BlocksPerSM, k.PTXAS, n)
			}
		}
	}
	t.Logf("largest ratio of ptxas's registers to the estimate: %.2f (%s)", worst, where)
}

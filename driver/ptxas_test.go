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
	"tec/backend/kir"
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
    0 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Function properties for _ZN37_INTERNAL_b15c8f48_7_bert_cu_c580bdab5s_x_2EP6__halfPKS0_PKfS5_S3_
    0 bytes stack frame, 0 bytes spill stores, 4 bytes spill loads
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
			"k_k26_x_mu_24": {Registers: 17, SpillStores: 8, SpillLoads: 4},
			"k_k25_a_ctx_11": {Registers: 118, StackFrame: 16, SpillStores: 12, SpillLoads: 12, Calls: true,
				Callees: []Spill{{Stores: 4, Loads: 8}, {Loads: 4}}},
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

// TestMeets checks which spills cost a kernel its launch bounds: its own
// where it calls no function, its functions' where it calls some (its own
// are then what the calls save), each against the same kernel compiled
// with its threads alone.
func TestMeets(t *testing.T) {
	g, err := gpu.Lookup("h100")
	if err != nil {
		t.Fatal(err)
	}
	k := &kir.Kernel{Name: "k", Block: 256, BlocksPerSM: 2}
	tests := []struct {
		name    string
		f, base *PTXASFunction
		want    bool
	}{
		{"fits", &PTXASFunction{Registers: 128}, nil, true},
		{"too many registers", &PTXASFunction{Registers: 129}, nil, false},
		{"spills", &PTXASFunction{Registers: 128, SpillStores: 8, SpillLoads: 8}, nil, false},
		{"spills as much unbounded", &PTXASFunction{Registers: 128, SpillStores: 8, SpillLoads: 8},
			&PTXASFunction{Registers: 140, SpillStores: 8, SpillLoads: 8}, true},
		{"saves around its calls", &PTXASFunction{Registers: 128, SpillStores: 188, SpillLoads: 2216, Calls: true},
			&PTXASFunction{Registers: 172, Calls: true}, true},
		{"its functions spill a register", &PTXASFunction{Registers: 128, Calls: true, Callees: []Spill{{4, 12}, {4, 4}}},
			&PTXASFunction{Registers: 172, Calls: true}, true},
		{"its functions spill", &PTXASFunction{Registers: 128, Calls: true, Callees: []Spill{{4, 12}, {64, 256}}},
			&PTXASFunction{Registers: 172, Calls: true}, false},
		{"its functions spill as much unbounded", &PTXASFunction{Registers: 128, Calls: true, Callees: []Spill{{64, 256}}},
			&PTXASFunction{Registers: 172, Calls: true, Callees: []Spill{{64, 256}}}, true},
	}
	for _, tt := range tests {
		if got := meets(g, k, tt.f, tt.base); got != tt.want {
			t.Errorf("%s: meets %v, want %v", tt.name, got, tt.want)
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
// regs registers for every kernel, under any bound: fewer than the plan's
// blocks per SM leave keep the plan; more plan again with them, and a
// spill that the kernel makes unbounded too is a warning.
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
		checked     bool // ptxas's figures are the floors
		bounded     bool // the kernels carry a blocks-per-SM launch bound
	}{
		{"more registers", NVCC, 200, 8, 4, true, "ptxas", 1, true, true},
		{"fewer registers", NVCC, 16, 0, 4, false, "estimate", 0, true, true},
		{"no toolchain", NoToolchain, 200, 0, 4, false, "estimate", 0, false, false},
		{"-O2", NVCC, 200, 0, 2, false, "estimate", 0, false, false},
		{"no llc", LLCPTXAS, 200, 0, 4, false, "estimate", 1, false, false},
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
				if tt.replanned && k.Planned != tt.regs {
					t.Errorf("kernel %s: planned with %d registers, want ptxas's %d", k.Kernel, k.Planned, tt.regs)
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
			if !tt.checked && len(check.Floors) > 0 {
				t.Errorf("floors %v where no check ran", check.Floors)
			}
			for _, pk := range c.Plan.Kernels {
				for _, st := range pk.Stages {
					if got := check.Floors[st.Name]; tt.checked && got != tt.regs {
						t.Errorf("stage %s: floor %d, want ptxas's %d", st.Name, got, tt.regs)
					}
				}
			}
			if tt.spill > 0 && !strings.Contains(check.Warnings[0], "spills 8 B") {
				t.Errorf("warning %q does not give the spill", check.Warnings[0])
			}
		})
	}
}

// fakeRule is what a fake nvcc (fakeNVCC) reports of each kernel whose
// name and launch bound, "NAME:BLOCKS" (BLOCKS the bound's blocks per SM,
// empty where the kernel is bounded by its threads alone), match the
// shell pattern.
type fakeRule struct {
	pattern     string
	regs, spill int
}

// fakeNVCC writes to a new directory an nvcc that compiles nothing, as
// tooltest.FakeNVCC does, and reports of each kernel of the CUDA C++ it is
// given the figures of the first of rules that matches it, else others
// registers per thread and no spill. Each run appends to the file log a
// line of the "NAME:BLOCKS" of the kernels it compiled. It returns the
// directory, to put on PATH, and log.
func fakeNVCC(t *testing.T, rules []fakeRule, others int) (dir, log string) {
	t.Helper()
	var cases strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&cases, "    %s) r=%d s=%d ;;\n", r.pattern, r.regs, r.spill)
	}
	dir = t.TempDir()
	log = filepath.Join(dir, "runs.log")
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
grep -A1 '__launch_bounds__' "$src" | grep -v '^--$' | while read -r bounds && read -r name; do
  k="${name%%%%(*}"
  b=$(echo "$bounds" | sed -n 's/.*__launch_bounds__([0-9]*, *\([0-9]*\)).*/\1/p')
  case "$k:$b" in
%s    *) r=%d s=0 ;;
  esac
  printf '%%s ' "$k:$b" >> %q
  echo "ptxas info    : Compiling entry function '$k' for 'sm_80'"
  echo "ptxas info    : Function properties for $k"
  echo "    0 bytes stack frame, $s bytes spill stores, $s bytes spill loads"
  echo "ptxas info    : Used $r registers, 384 bytes cmem[0]"
done
echo >> %q
`, cases.String(), others, log, log)
	if err := os.WriteFile(filepath.Join(dir, "nvcc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, log
}

// fakeRuns returns the runs that a fake nvcc logged to log (fakeNVCC):
// for each, the "NAME:BLOCKS" of the kernels it compiled.
func fakeRuns(t *testing.T, log string) [][]string {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var runs [][]string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		runs = append(runs, strings.Fields(line))
	}
	return runs
}

// heavyLight is a program whose plan (-O4, an A100) is a light kernel, a
// softmax of 8 blocks per SM, and a heavy one, a matrix product.
const heavyLight = `model heavy_light {
  input x: f32[4096, 1024]
  input w: f32[1024, 1024]
  s = softmax(x)
  output y = matmul(s, w)
}`

// mostRegisters returns the most registers per thread that leave g room
// for blocks blocks of kernel k per SM, or 0.
func mostRegisters(g gpu.Model, k *kir.Kernel, blocks int) int {
	for r := g.MaxRegsPerThread; r > 0; r-- {
		if n, _ := g.BlocksPerSM(gpu.Block{Threads: k.Block, SharedBytes: int(k.SharedBytes()), RegsPerThread: r}); n >= blocks {
			return r
		}
	}
	return 0
}

// TestCompileCheckedBounds runs the register check on heavyLight with an
// nvcc that claims few registers for the light kernel, and for the heavy
// one figures that depend on its launch bound. A heavy kernel that ptxas
// compiles under its bound without spilling keeps its plan, though its
// figure plus the margin the check used to add does not leave its blocks
// per SM, and so does one that spills as much unbounded (as a kernel's
// calls do), with a warning; one that spills under its bound alone is
// planned again, with the registers ptxas gives it unbounded as the floor
// of its stage, or those it needs under a tighter bound (one block per SM
// less) where it meets that, while the light kernel keeps its blocks per
// SM and is not compiled again; and one that still spills under its new
// bound is bounded by its threads alone, with a warning. The check runs
// nvcc once where ptxas meets the bounds; a second time on the spilling
// kernel alone, unbounded; once more for each bound between its own and
// the one its unbounded registers leave, down to the first ptxas meets;
// and last on the re-plan's new kernels (unless compiled already).
func TestCompileCheckedBounds(t *testing.T) {
	const lightRegs, spill = 16, 12
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
	if len(first.Plan.Kernels) != 2 || first.Module.Kernels[0].BlocksPerSM < 2 || first.Module.Kernels[1].BlocksPerSM < 2 {
		t.Fatalf("the plan is not a light kernel and a heavy one, each of 2 or more blocks per SM:\n%s", first.Plan)
	}
	g := first.Plan.GPU
	light, heavy := first.Module.Kernels[0], first.Module.Kernels[1]
	names := cuda.KernelNames(first.Module)
	ln, hn := names[light], names[heavy]
	// full is the most registers that the heavy kernel's bound leaves;
	// unbounded, what the fake gives it unbounded, leaves fewer blocks.
	full := mostRegisters(g, heavy, heavy.BlocksPerSM)
	unbounded := full + 32
	if n, _ := g.BlocksPerSM(gpu.Block{Threads: heavy.Block, SharedBytes: int(heavy.SharedBytes()), RegsPerThread: full + 8}); n >= heavy.BlocksPerSM {
		t.Fatalf("%d registers (the heavy kernel's bound's %d plus 8) leave its %d blocks per SM: the test needs another", full+8, full, heavy.BlocksPerSM)
	}
	// free is the blocks per SM that the heavy kernel's unbounded
	// registers leave; tight the most registers that one block less than
	// its bound leaves, which the check tries before it.
	free, _ := g.BlocksPerSM(gpu.Block{Threads: heavy.Block, SharedBytes: int(heavy.SharedBytes()), RegsPerThread: unbounded})
	if heavy.BlocksPerSM-1 <= free {
		t.Fatalf("the heavy kernel's %d blocks per SM leave no bound to try between them and the %d its %d registers unbounded leave: the test needs another", heavy.BlocksPerSM, free, unbounded)
	}
	tighter := heavy.BlocksPerSM - 1
	tight := mostRegisters(g, heavy, tighter)
	tests := []struct {
		name      string
		rules     []fakeRule
		runs      int
		replanned bool
		dropped   bool
		ptxas     int    // the heavy kernel's registers as shipped
		floor     int    // the heavy kernel's stages' floor
		met       int    // the tighter bound ptxas met (0: none)
		warning   string // the one warning, if any
	}{
		{"meets its bound", []fakeRule{{hn + ":*", full, 0}}, 1, false, false, full, full, 0, ""},
		{"spills as much unbounded", []fakeRule{{hn + ":*", full, spill}}, 2, false, false, full, full, 0, fmt.Sprintf("spills %d B of registers (stores) and reloads %d B with %d registers per thread under __launch_bounds__(%d, %d), as much as", spill, spill, full, heavy.Block, heavy.BlocksPerSM)},
		{"spills under its bound", []fakeRule{{fmt.Sprintf("%s:%d", hn, heavy.BlocksPerSM), full, spill}, {hn + ":*", unbounded, 0}}, 3, true, false, unbounded, unbounded, 0, ""},
		{"meets a tighter bound", []fakeRule{{fmt.Sprintf("%s:%d", hn, heavy.BlocksPerSM), full, spill}, {fmt.Sprintf("%s:%d", hn, tighter), tight, 0}, {hn + ":*", unbounded, 0}}, 3, true, false, tight, tight, tighter, ""},
		{"still spills", []fakeRule{{hn + ":", unbounded, 0}, {hn + ":*", full, spill}}, 3, true, true, unbounded, unbounded, 0, fmt.Sprintf("still spills %d B", spill)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, log := fakeNVCC(t, tt.rules, lightRegs)
			t.Setenv("PATH", dir)
			c, err := CompileChecked(context.Background(), prog, opts, tg, NVCC)
			if err != nil {
				t.Fatal(err)
			}
			check := c.Registers
			if check.Replanned != tt.replanned {
				t.Fatalf("planned again: %v, want %v", check.Replanned, tt.replanned)
			}
			if len(c.Module.Kernels) != 2 {
				t.Fatalf("planned again as %d kernels, want the light one and the heavy one:\n%s", len(c.Module.Kernels), c.Plan)
			}
			cl, ch := c.Module.Kernels[0], c.Module.Kernels[1]
			runs := fakeRuns(t, log)
			want := [][]string{{fmt.Sprintf("%s:%d", ln, light.BlocksPerSM), fmt.Sprintf("%s:%d", hn, heavy.BlocksPerSM)}}
			if tt.runs > 1 {
				want = append(want, []string{hn + ":"})
			}
			if tt.replanned {
				// The bounds between, one a run, down to the first met.
				for b := heavy.BlocksPerSM - 1; b > free && b >= tt.met; b-- {
					want = append(want, []string{fmt.Sprintf("%s:%d", hn, b)})
				}
			}
			// The re-plan's heavy kernel, unless it is the code compiled
			// under the tighter bound it met.
			if recheck := []string{fmt.Sprintf("%s:%d", hn, ch.BlocksPerSM+check.Kernels[1].BoundDropped)}; tt.runs > 2 && (tt.met == 0 || len(runs) > len(want)) {
				want = append(want, recheck)
			}
			if !reflect.DeepEqual(runs, want) {
				t.Errorf("nvcc compiled %q, want %q", runs, want)
			}
			if tt.met > 0 && ch.BlocksPerSM != tt.met {
				t.Errorf("the heavy kernel %s: %d blocks per SM, want the tighter bound ptxas met, %d", ch.Name, ch.BlocksPerSM, tt.met)
			}
			wantFloor := map[string]int{}
			for i, regs := range []int{lightRegs, tt.floor} {
				for _, st := range first.Plan.Kernels[i].Stages {
					wantFloor[st.Name] = regs
				}
			}
			if !reflect.DeepEqual(check.Floors, wantFloor) {
				t.Errorf("floors %v, want %v", check.Floors, wantFloor)
			}
			if cl.BlocksPerSM != light.BlocksPerSM {
				t.Errorf("the light kernel %s: %d blocks per SM, want its own %d", cl.Name, cl.BlocksPerSM, light.BlocksPerSM)
			}
			hr := check.Kernels[1]
			switch {
			case !tt.replanned && ch.BlocksPerSM != heavy.BlocksPerSM:
				t.Errorf("the heavy kernel %s: %d blocks per SM, want its plan's %d", ch.Name, ch.BlocksPerSM, heavy.BlocksPerSM)
			case tt.replanned && !tt.dropped:
				if n, _ := g.BlocksPerSM(gpu.Block{Threads: ch.Block, SharedBytes: int(ch.SharedBytes()), RegsPerThread: tt.floor}); ch.BlocksPerSM < 1 || ch.BlocksPerSM > n {
					t.Errorf("the heavy kernel %s, planned again: a bound of %d blocks per SM; its floor of %d registers leaves %d", ch.Name, ch.BlocksPerSM, tt.floor, n)
				}
			case tt.dropped && (ch.BlocksPerSM != 0 || hr.BoundDropped == 0):
				t.Errorf("the heavy kernel %s, still spilling: a bound of %d blocks per SM, %d dropped; want its threads alone", ch.Name, ch.BlocksPerSM, hr.BoundDropped)
			}
			if hr.PTXAS != tt.ptxas || hr.Source() != map[bool]string{false: "estimate", true: "ptxas"}[tt.replanned] {
				t.Errorf("the heavy kernel's figures %+v: want ptxas's %d as shipped", hr, tt.ptxas)
			}
			if (tt.warning != "") != (len(check.Warnings) == 1) || tt.warning != "" && !strings.Contains(check.Warnings[0], tt.warning) {
				t.Errorf("warnings %q; want one saying %q", check.Warnings, tt.warning)
			}
		})
	}
}

// TestRegisterEstimates calibrates the planner's register estimates
// against ptxas (through nvcc) on the tiny examples at -O4: it states the
// largest ratio of ptxas's registers as built (under the launch bounds) to
// the estimate, and checks that after the check every kernel's launch
// bounds hold what ptxas allocated, without spilling.
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
	var replanned, dropped []string
	for _, ex := range examples.All() {
		c, err := CompileChecked(context.Background(), tinyExample(t, ex), pipeline.Options{Level: pipeline.MaxLevel}, tg, NVCC)
		if err != nil {
			t.Fatalf("%s: %v", ex.Name, err)
		}
		if c.Registers.Replanned {
			replanned = append(replanned, ex.Name)
		}
		for i, k := range c.Registers.Kernels {
			if k.BoundDropped > 0 {
				dropped = append(dropped, ex.Name+" "+k.Kernel)
			}
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
			if f := k.Function; mk.BlocksPerSM > 0 && f.spills() {
				t.Errorf("%s kernel %s: spills %d B under its launch bounds of %d blocks per SM", ex.Name, k.Kernel, f.SpillStores, mk.BlocksPerSM)
			}
		}
	}
	t.Logf("largest ratio of ptxas's registers to the estimate: %.2f (%s); planned again: %v; bounded by their threads alone: %v", worst, where, replanned, dropped)
}

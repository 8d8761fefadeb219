package llvm

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/llir/llvm/asm"

	"tec/backend/internal/kirtest"
	"tec/backend/kir"
	"tec/gpu"
	"tec/internal/testkit/tooltest"
	"tec/te"
)

func modules(t *testing.T) map[string]*kir.Module {
	t.Helper()
	ms, err := kirtest.Modules()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestStageFunctions checks that stages with the same code are one
// function, called with rebased pointers to global and shared memory.
func TestStageFunctions(t *testing.T) {
	mod, err := Emit(kirtest.RepeatedStages(), lookup(t, "sm_80"))
	if err != nil {
		t.Fatal(err)
	}
	ir := mod.String()
	for _, want := range []string{
		"define internal void @s_t0(float addrspace(1)* %w, float addrspace(1)* %x, float addrspace(1)* %t0, float addrspace(3)* %row) noinline",
		"getelementptr float, float addrspace(1)* %w, i64 96",
	} {
		if !strings.Contains(ir, want) {
			t.Errorf("the IR lacks %q", want)
		}
	}
	if n := strings.Count(ir, "call void @s_t0("); n != 3 {
		t.Errorf("%d calls of @s_t0, want 3:\n%s", n, ir)
	}
}

func names(ms map[string]*kir.Module) []string {
	var ns []string
	for n := range ms {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

func lookup(t testing.TB, name string) gpu.Arch {
	tg, err := gpu.LookupArch(name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestParsesBack checks that the IR text of every test module parses back
// with llir's own parser, which checks types as LLVM's does.
func TestParsesBack(t *testing.T) {
	ms := modules(t)
	for _, name := range names(ms) {
		mod, err := Emit(ms[name], lookup(t, "sm_80"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := mod.String()
		back, err := asm.ParseString(name+".ll", text)
		if err != nil {
			t.Fatalf("%s: the IR does not parse back: %v", name, err)
		}
		if got, want := len(back.Funcs), len(mod.Funcs); got != want {
			t.Errorf("%s: %d functions parsed back, want %d", name, got, want)
		}
	}
}

// TestShape checks the NVPTX-specific parts of the IR.
func TestShape(t *testing.T) {
	mod, err := Emit(kirtest.Features(), lookup(t, "sm_80"))
	if err != nil {
		t.Fatal(err)
	}
	text := mod.String()
	for _, want := range []string{
		`target triple = "nvptx64-nvidia-cuda"`,
		"define ptx_kernel void @k_persistent(half addrspace(1)* %x, i16 addrspace(1)* %w, float addrspace(1)* %acc, float addrspace(1)* %y)",
		"@k_persistent_red = internal addrspace(3) global [16 x float] undef, align 16",
		"@tec_grid_barrier = internal addrspace(1) global [2 x i32] zeroinitializer, align 16",
		"call void @tec_grid_sync()",
		"call void @llvm.nvvm.barrier0()",
		"call void @llvm.nvvm.membar.gl()",
		"load volatile i32, i32 addrspace(1)*",
		"atomicrmw fadd float addrspace(1)*",
		"cmpxchg i32 addrspace(3)*",
		"call i32 @llvm.nvvm.read.ptx.sreg.tid.x()",
		"call i32 @tec_floordiv(",
		"fpext half",
		"fptrunc float",
		"call i16 @tec_to_bf16(",
		"alloca [4 x float]",
		"sel_then:",
		"stage_acc:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the IR lacks %q", want)
		}
	}
	if strings.Contains(text, "fence") {
		t.Error("the IR has a fence, which crashes llc's NVPTX back end")
	}
}

// TestSharedKernels checks that kernels with the same code share a
// function, and that KernelNames says so.
func TestSharedKernels(t *testing.T) {
	m := kirtest.Features()
	twin := *m.Kernels[1]
	twin.Name = "misc.2"
	m.Kernels = append(m.Kernels, &twin)
	mod, err := Emit(m, lookup(t, "sm_80"))
	if err != nil {
		t.Fatal(err)
	}
	kernels := 0
	for _, f := range mod.Funcs {
		if f.CallingConv.String() == "ptx_kernel" {
			kernels++
		}
	}
	if kernels != 2 {
		t.Errorf("%d kernel functions, want 2", kernels)
	}
	if n := KernelNames(m); n[&twin] != "k_misc" {
		t.Errorf("KernelNames[misc.2] = %q, want k_misc", n[&twin])
	}
}

// TestPTX turns every test module into PTX with llc and assembles it with
// ptxas, for sm_80 (LLVM 14's llc) and sm_90 (llc-16).
func TestPTX(t *testing.T) {
	tooltest.PTXAS(t)
	ms := modules(t)
	for _, tname := range gpu.ArchNames() {
		tg := lookup(t, tname)
		t.Run(tname, func(t *testing.T) {
			tooltest.Require(t, "LLVM ("+strings.Join(tg.LLC, " or ")+")", tg.LLC...)
			var wg sync.WaitGroup
			var mu sync.Mutex
			for _, name := range names(ms) {
				if kir.CheckArch(ms[name], tg) != nil {
					continue // sm_75 lacks what it uses (TestWarpPTX)
				}
				mod, err := Emit(ms[name], tg)
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					ptx, err := PTX(context.Background(), []byte(mod.String()), tg)
					if err == nil {
						_, err = Assemble(context.Background(), ptx, tg)
					}
					if err == nil && !strings.Contains(string(ptx), ".entry k_") {
						err = fmt.Errorf("the PTX has no .entry")
					}
					if err != nil {
						mu.Lock()
						t.Errorf("%s: %v", name, err)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestDynamicShared checks that a kernel needing more shared memory than
// the static limit carves its arrays from the extern dynamic shared array
// at 16-byte aligned offsets, and that the PTX assembles.
func TestDynamicShared(t *testing.T) {
	m := kirtest.Features()
	var k *kir.Kernel
	for _, x := range m.Kernels {
		if len(x.Shared) > 0 {
			k = x
			break
		}
	}
	if k == nil {
		t.Fatal("no kernel with shared memory in kirtest.Features")
	}
	big := &kir.Buffer{Name: "big", Space: kir.Shared, DType: te.F32, Shape: []int{4, 4096}}
	k.Shared = append(k.Shared, big)
	tg := lookup(t, "sm_80")
	mod, err := Emit(m, tg)
	if err != nil {
		t.Fatal(err)
	}
	text := mod.String()
	for _, want := range []string{
		"@tec_dynamic_smem = external addrspace(3) global [0 x i8], align 16",
		"getelementptr ([0 x i8], [0 x i8] addrspace(3)* @tec_dynamic_smem, i64 0, i64 0)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the IR lacks %q", want)
		}
	}
	if strings.Contains(text, "addrspace(3) global [16 x float]") {
		t.Error("a shared array of the kernel is still a static global")
	}
	tooltest.PTXAS(t)
	tooltest.Require(t, "LLVM ("+strings.Join(tg.LLC, " or ")+")", tg.LLC...)
	ptx, err := PTX(context.Background(), []byte(text), tg)
	if err == nil {
		_, err = Assemble(context.Background(), ptx, tg)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestEmitWith checks that EmitWith emits what Emit does given the layout
// Emit would compute, and places the temporaries where a layout it is
// given says.
func TestEmitWith(t *testing.T) {
	ms := modules(t)
	for _, name := range names(ms) {
		m := ms[name]
		want, err := Emit(m, lookup(t, "sm_80"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := EmitWith(m, lookup(t, "sm_80"), Options{Layout: m.Layout(), Verified: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: EmitWith's IR differs from Emit's", name)
		}
	}
	m, tmp := kirtest.WorkspaceTemp()
	at := func(off int64) string {
		mod, err := EmitWith(m, lookup(t, "sm_80"), Options{Layout: &kir.Layout{Offsets: map[*kir.Buffer]int64{tmp: off}, Bytes: off + 256}})
		if err != nil {
			t.Fatal(err)
		}
		return mod.String()
	}
	if a, b := at(0), at(4096); a == b || !strings.Contains(b, "%ws, i64 u0x1000") {
		t.Errorf("the IR does not place the temporary at the layout's offset 4096:\n%s", b)
	}
}

// TestCopiedHalves checks that a store of a bf16 element loaded from a
// bf16 buffer moves its 16 bits (kir.Store.Copied) rather than converting
// them to f32 and back, which llc does not fold, while a computed value is
// still rounded.
func TestCopiedHalves(t *testing.T) {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.BF16, Shape: []int{32}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.BF16, Shape: []int{32}}
	z := &kir.Buffer{Name: "z", Role: kir.Output, DType: te.BF16, Shape: []int{32}}
	i := kir.NewVar("i", te.I32)
	k := &kir.Kernel{Name: "k", Grid: kir.Grid{Blocks: 1}, Block: 32, Params: []*kir.Buffer{x, y, z}, Body: []kir.Stmt{
		&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(32), Body: []kir.Stmt{
			&kir.Store{Buf: y, Index: i, Value: kir.Ld(x, i)},
		}},
	}}
	m := &kir.Module{Name: "copy", Buffers: []*kir.Buffer{x, y, z}, Outputs: []*kir.Buffer{y, z}, Kernels: []*kir.Kernel{k}}
	mod, err := Emit(m, lookup(t, "sm_80"))
	if err != nil {
		t.Fatal(err)
	}
	ir := mod.String()
	if strings.Contains(ir, "@tec_to_bf16") || strings.Contains(ir, "@tec_from_bf16") {
		t.Errorf("the copy converts its element:\n%s", ir)
	}
	k.Body[0].(*kir.For).Body = append(k.Body[0].(*kir.For).Body, &kir.Store{Buf: z, Index: i, Value: kir.Mul(kir.Ld(x, i), kir.F(2))})
	if mod, err = Emit(m, lookup(t, "sm_80")); err != nil {
		t.Fatal(err)
	}
	if ir := mod.String(); !strings.Contains(ir, "call i16 @tec_to_bf16") {
		t.Errorf("the computed value is not rounded to bf16:\n%s", ir)
	}
}

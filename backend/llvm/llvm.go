// Package llvm emits the kernels of a kernel-IR module as LLVM IR for the
// NVPTX back end (target triple nvptx64-nvidia-cuda), through
// github.com/llir/llvm, and turns that IR into PTX with llc and checks the
// PTX with ptxas when those tools are installed.
//
// Each kernel becomes a function with the ptx_kernel calling convention
// whose parameters are pointers into global memory (addrspace(1)), in the
// order of kir.Kernel.Params, or, for a module with kir.Module.TempsInWorkspace,
// those of kir.Module.KernelArgs and then one i8 pointer to the workspace,
// from which the kernel computes its temporaries' addresses at the offsets
// of kir.Module.WorkspaceLayout. Shared arrays are module globals in
// addrspace(3), per-thread arrays are allocas, special registers are read
// with llvm.nvvm.read.ptx.sreg.*, SyncThreads is llvm.nvvm.barrier0, and
// atomics are atomicrmw (fadd) or compare-and-swap loops (max, min). Scalar
// variables are SSA values, with phis where loops and branches join, so llc
// keeps them in registers without help from opt.
//
// A GridSync calls tec_grid_sync, a grid barrier written out in IR: an
// arrival counter and a generation number in a module global of global
// memory, zero when the module is loaded and back to a zero count after every
// barrier. Thread 0 of each block reads the generation, publishes its block's
// writes (llvm.nvvm.membar.gl), arrives with an atomic add; the last block
// to arrive resets the counter and then bumps the generation, and the others
// spin on volatile loads of the generation until it changes. (LLVM's fence
// instruction crashes llc's NVPTX back end, so fences are membar.gl calls.)
// The barrier is correct only when every block of the grid is resident at
// once, which the launcher guarantees for kernels with an all-resident grid,
// and only one grid-synchronised kernel of a loaded module may run at a time.
//
// Counter signals and waits (kir.Signal, kir.Wait) are inline PTX at GPU
// scope, red.release and ld.acquire (counter.go), which llc-16's NVPTX
// back end cannot select from atomic instructions with those orderings.
//
// Math follows kir's semantics with the NVPTX approximations that CUDA's
// --use_fast_math uses for exp and log (ex2.approx, lg2.approx) and
// rsqrt.approx; sqrt and division are IEEE. tanh, erf and pow are computed
// by helper functions in the module.
package llvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"tec/backend/internal/dedup"
	"tec/backend/internal/ident"
	"tec/backend/kir"
	"tec/gpu"
	"tec/te"
)

// Triple and DataLayout are those of 64-bit NVPTX.
const (
	Triple     = "nvptx64-nvidia-cuda"
	DataLayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
)

// Address spaces of NVPTX.
const (
	globalSpace types.AddrSpace = 1
	sharedSpace types.AddrSpace = 3
)

// KernelNames returns the name of the function that Emit writes for each
// kernel of m, the name a driver looks the kernel up by. Kernels that are
// the same code up to their buffers share one function.
func KernelNames(m *kir.Module) map[*kir.Kernel]string {
	return kernelNames(m, dedup.Groups(m))
}

// kernelNames is KernelNames given m's kernel groups.
func kernelNames(m *kir.Module, groups map[*kir.Kernel]*kir.Kernel) map[*kir.Kernel]string {
	scope := ident.NewScope()
	names := map[*kir.Kernel]string{}
	for _, k := range m.Kernels {
		if f := groups[k]; f != k {
			names[k] = names[f]
			continue
		}
		names[k] = scope.Name("k_" + k.Name)
	}
	return names
}

// Emit returns module m, which must verify, as LLVM IR for target tg.
func Emit(m *kir.Module, tg gpu.Arch) (*ir.Module, error) {
	return EmitWith(m, tg, Options{})
}

// Options tells EmitWith what the caller already knows of a module.
type Options struct {
	// Layout is the module's workspace layout (kir.Module.Layout), or nil
	// for EmitWith to compute it.
	Layout *kir.Layout
	// Verified reports that the module passed kir.Verify and has not
	// changed since (as a module fresh from the pipeline, whose lowering
	// verifies it), so that EmitWith need not verify it again.
	Verified bool
}

// EmitWith is Emit for a module of which opts says what is known.
func EmitWith(m *kir.Module, tg gpu.Arch, opts Options) (*ir.Module, error) {
	if !opts.Verified {
		if err := kir.Verify(m); err != nil {
			return nil, fmt.Errorf("llvm: %w", err)
		}
	}
	if err := kir.CheckArch(m, tg); err != nil {
		return nil, fmt.Errorf("llvm: %w", err)
	}
	if opts.Layout == nil {
		opts.Layout = m.Layout()
	}
	g := &gen{
		mod:    ir.NewModule(),
		tg:     tg,
		decls:  map[string]*ir.Func{},
		scope:  ident.NewScope(),
		shared: map[*kir.Buffer]sharedArray{},
		m:      m,
	}
	g.offsets = opts.Layout.Offsets
	g.mod.SourceFilename = m.Name
	g.mod.TargetTriple = Triple
	g.mod.DataLayout = DataLayout
	groups := dedup.GroupsLaidOut(m, g.offsets)
	names := kernelNames(m, groups)
	for _, k := range m.Kernels {
		g.scope.Reserve(names[k])
	}
	g.calls = dedup.Stages(m, groups)
	g.stageFuncs = map[*dedup.StageFunc]*ir.Func{}
	for _, f := range g.calls.Funcs {
		g.stageFunc(f)
	}
	for _, k := range m.Kernels {
		if groups[k] != k {
			continue
		}
		if err := g.kernel(k, names[k]); err != nil {
			return nil, fmt.Errorf("llvm: kernel %s: %w", k.Name, err)
		}
	}
	return g.mod, nil
}

// gen holds the state of one module's emission.
type gen struct {
	mod    *ir.Module
	tg     gpu.Arch
	decls  map[string]*ir.Func // intrinsics and helpers, by name
	scope  *ident.Scope        // module-level names
	shared map[*kir.Buffer]sharedArray
	// dynamic is the extern shared array that kernels needing more than
	// the static limit carve their shared arrays from; nil until needed.
	dynamic *ir.Global

	m       *kir.Module
	offsets map[*kir.Buffer]int64 // the temporaries' places in the workspace
	// calls are the stages written once as functions (dedup.Stages), and
	// stageFuncs those functions.
	calls      *dedup.StageCalls
	stageFuncs map[*dedup.StageFunc]*ir.Func
}

// storageType returns the LLVM type of an element of storage type dt.
func storageType(dt te.DType) types.Type {
	switch dt {
	case te.F16:
		return types.Half
	case te.BF16:
		return types.I16
	case te.I32:
		return types.I32
	case te.Bool:
		return types.I8
	}
	return types.Float
}

// valueType returns the LLVM type of a register of kir type dt.
func valueType(dt te.DType) types.Type {
	switch kir.ValueType(dt) {
	case te.I32:
		return types.I32
	case te.I64:
		return types.I64
	case te.Bool:
		return types.I1
	}
	return types.Float
}

// intConst returns the integer constant v of kir type dt, i32 or i64.
func intConst(dt te.DType, v int64) constant.Constant {
	if dt == te.I64 {
		return i64(v)
	}
	return i32(v)
}

// intrinsic returns the declaration of an external function.
func (g *gen) intrinsic(name string, ret types.Type, params ...types.Type) *ir.Func {
	if f, ok := g.decls[name]; ok {
		return f
	}
	ps := make([]*ir.Param, len(params))
	for i, p := range params {
		ps[i] = ir.NewParam("", p)
	}
	f := g.mod.NewFunc(name, ret, ps...)
	g.decls[name] = f
	return f
}

// helper returns the internal function name, building it with build the
// first time.
func (g *gen) helper(name string, ret types.Type, params []*ir.Param, build func(f *ir.Func)) *ir.Func {
	if f, ok := g.decls[name]; ok {
		return f
	}
	f := g.mod.NewFunc(name, ret, params...)
	f.Linkage = enum.LinkageInternal
	g.decls[name] = f
	build(f)
	return f
}

// global adds an internal global variable in address space sp.
func (g *gen) global(name string, init constant.Constant, sp types.AddrSpace) *ir.Global {
	gl := g.mod.NewGlobalDef(name, init)
	gl.Linkage = enum.LinkageInternal
	gl.AddrSpace = sp
	gl.Typ = nil // recomputed with the address space
	gl.Type()
	gl.Align = 16
	return gl
}

// sharedArray is a shared buffer's array: a pointer to it, and its type.
type sharedArray struct {
	ptr constant.Constant
	typ types.Type
}

// dynamicShared returns the module's extern shared array, the base of
// the dynamic shared memory a kernel is launched with.
func (g *gen) dynamicShared() *ir.Global {
	if g.dynamic == nil {
		gl := g.mod.NewGlobal(g.scope.Name("tec_dynamic_smem"), types.NewArray(0, types.I8))
		gl.Linkage = enum.LinkageExternal
		gl.AddrSpace = sharedSpace
		gl.Typ = nil
		gl.Type()
		gl.Align = 16
		g.dynamic = gl
	}
	return g.dynamic
}

func f32(v float64) constant.Constant { return constant.NewFloat(types.Float, v) }
func i32(v int64) constant.Constant   { return constant.NewInt(types.I32, v) }
func i64(v int64) constant.Constant   { return constant.NewInt(types.I64, v) }

// sreg reads a special register.
func (g *gen) sreg(b *ir.Block, name string) value.Value {
	return b.NewCall(g.intrinsic("llvm.nvvm.read.ptx.sreg."+name, types.I32))
}

func (g *gen) barrier(b *ir.Block) { b.NewCall(g.intrinsic("llvm.nvvm.barrier0", types.Void)) }
func (g *gen) membar(b *ir.Block)  { b.NewCall(g.intrinsic("llvm.nvvm.membar.gl", types.Void)) }

// gridSync returns tec_grid_sync, the grid barrier.
func (g *gen) gridSync() *ir.Func {
	return g.helper("tec_grid_sync", types.Void, nil, func(f *ir.Func) {
		state := g.global("tec_grid_barrier", constant.NewZeroInitializer(types.NewArray(2, types.I32)), globalSpace)
		arr := types.NewArray(2, types.I32)
		entry := f.NewBlock("entry")
		arrive := f.NewBlock("arrive")
		release := f.NewBlock("release")
		wait := f.NewBlock("wait")
		passed := f.NewBlock("passed")
		done := f.NewBlock("done")

		count := entry.NewGetElementPtr(arr, state, i32(0), i32(0))
		gen := entry.NewGetElementPtr(arr, state, i32(0), i32(1))
		// Every thread of the block has finished the stage before.
		g.barrier(entry)
		tid := g.sreg(entry, "tid.x")
		entry.NewCondBr(entry.NewICmp(enum.IPredEQ, tid, i32(0)), arrive, done)

		// Read the generation before arriving: it cannot change until this
		// block has arrived.
		old := arrive.NewLoad(types.I32, gen)
		old.Volatile = true
		g.membar(arrive) // publish this block's writes
		n := arrive.NewAtomicRMW(enum.AtomicOpAdd, count, i32(1), enum.AtomicOrderingMonotonic)
		last := arrive.NewSub(g.sreg(arrive, "nctaid.x"), i32(1))
		arrive.NewCondBr(arrive.NewICmp(enum.IPredEQ, n, last), release, wait)

		// The last block resets the count before it releases the others,
		// who cannot arrive at the next barrier before they are released.
		release.NewAtomicRMW(enum.AtomicOpXChg, count, i32(0), enum.AtomicOrderingMonotonic)
		g.membar(release)
		release.NewAtomicRMW(enum.AtomicOpAdd, gen, i32(1), enum.AtomicOrderingMonotonic)
		release.NewBr(passed)

		cur := wait.NewLoad(types.I32, gen)
		cur.Volatile = true
		wait.NewCondBr(wait.NewICmp(enum.IPredEQ, cur, old), wait, passed)

		g.membar(passed) // see the other blocks' writes
		passed.NewBr(done)

		g.barrier(done)
		done.NewRet(nil)
	})
}

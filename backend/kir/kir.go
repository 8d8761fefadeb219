// Package kir defines the kernel IR: the form in which the back end describes
// GPU kernels before it emits CUDA C++ or LLVM IR for them, and which the
// simulator in package sim executes on the CPU.
//
// # Execution model
//
// A Module is a list of Kernels launched one after another on one stream, so a
// kernel sees every global-memory write of the kernels before it. Module-level
// Buffers live in global memory: the inputs and params the caller supplies,
// the outputs it reads back, and temporaries in a workspace the caller
// allocates (see Module.WorkspaceBytes).
//
// A kernel runs as a one-dimensional grid of blocks of Kernel.Block threads
// each, as CUDA does: every thread executes Body with its own registers (the
// Vars it defines and its Local arrays); the threads of a block share the
// kernel's Shared arrays; all threads share global memory. Special registers
// (ThreadIdx, BlockIdx, BlockDim, GridDim) tell a thread where it is.
//
// SyncThreads is CUDA's __syncthreads(): no thread of a block passes it until
// every thread of the block has reached it, and the memory accesses before it
// are visible to the block's threads after it. Every thread of the block must
// reach the same barrier, so it may appear only under control flow that is
// uniform across the block (the verifier checks this).
//
// GridSync is cooperative groups' grid.sync(): a barrier across every thread
// of every block, after which all global-memory writes before it are visible
// to the whole grid. It is only sound when every block of the grid is resident
// on the GPU at once, which is what an all-resident grid (Grid.Resident)
// means: the kernel is launched cooperatively with as many blocks as fit on
// the device at the same time (SM count × blocks per SM by occupancy, at most
// Grid.Blocks when that is set), and its loops over tiles are grid-stride
// loops, so the kernel is correct whatever number of blocks it is given. A
// GridSync must be reached by every thread of the grid, so it appears only
// under grid-uniform control flow, and only in kernels whose grid is
// all-resident. A kernel with a fixed grid (Grid.Blocks, not Resident) may
// have more blocks than fit, which run in any order.
//
// Signal and Wait (counter.go) are per-tile dependency counters in the
// workspace: a block signals after its stores of a tile (a block barrier,
// then one thread's release add at GPU scope), and a block that reads the
// tile waits until the counter reaches a target (one thread's acquire
// loads, then a block barrier). A satisfied wait orders after it the
// stores that the signalling blocks made before their signals, and no
// others; it replaces a GridSync where a stage's tiles read only some
// tiles of the stages before it. Waits need an all-resident grid.
//
// Atomic updates a global or shared f32 element indivisibly; atomics to the
// same element by different threads do not race with one another, but they do
// race with plain loads and stores not ordered by a barrier.
//
// Shuffle is PTX's shfl.sync (CUDA's __shfl_xor_sync, __shfl_down_sync):
// the threads of a warp (WarpSize consecutive threads of a block, lane =
// threadIdx.x % WarpSize) exchange a register. The threads named by its
// membermask must evaluate it together and only they may; a thread reading
// a lane outside the mask gets an undefined value. The simulator treats the
// threads that reach an expression together as the warp's active lanes and
// reports any of these as an error.
//
// The warp-level statements (warp.go) follow PTX too. MMA is mma.sync: the
// WarpSize lanes of a warp together multiply fragments held in their local
// arrays, laid out as the PTX ISA says (FragElem); LdMatrix is ldmatrix,
// which fills such fragments from shared memory. Both must be executed by
// every lane of the warp at once. VecCopy moves 16 aligned bytes at once
// (128-bit loads and stores); CopyAsync is cp.async, a 16-byte copy from
// global to shared memory that completes only when its thread's
// WaitGroup says so, and is visible to other threads only after a barrier
// that follows. The simulator reports a partial warp, a misaligned address
// and a read of a copy still in flight.
//
// A kernel's body is a tree of statements. Stage groups the statements that
// compute one tensor expression, so that reports (races, costs) and emitted
// code can name it; a multi-stage persistent kernel is a sequence of Stages
// separated by GridSyncs (or counter Waits) where a stage reads what another
// block wrote.
//
// Values are typed: f32, i32 and bool scalars (te.F32, te.I32, te.Bool),
// and i64 where Widen has made index arithmetic 64-bit (see "Index widths"
// below).
// Buffers have a storage dtype, which may also be f16 or bf16: a load of an f16
// element yields an f32 value and a store of an f32 value to an f16 element
// rounds it to nearest even. Arithmetic on f32 values is f32 arithmetic; i32
// division and modulo round towards negative infinity (as te's index
// arithmetic does), which the emitters implement with small helpers.
//
// # Index widths
//
// Index arithmetic is i32: the emitters write it as CUDA's int and LLVM's
// i32, and the simulator evaluates an i32 operation exactly and stops with
// an error where the exact value does not fit 32 bits, since there the
// emitted code would wrap (CUDA's signed overflow is undefined). Tensors
// have fewer than 2^31 elements, so every final index fits; the values on
// the way need not: x[(i * 3000000001) % 3] multiplies past 2^31 before
// the modulo brings it back.
//
// Widen finds those operations and rewrites them to i64 (te.I64): it bounds
// every i32 expression of a kernel by interval arithmetic over what is
// known of its leaves (constants, the loops' bounds, the special
// registers, the [0, N) of a gather's clamped index; an i32 element loaded
// from memory, or a variable assigned more than once, may be any i32), and
// where an operation's result or operand may leave the i32 range it
// computes the operation in 64 bits: the operands are converted to i64
// (Cast), and its result stays i64 for the operations above it that are
// wide too. Where an i64 value meets an i32 use (an index, a stored value,
// a loop bound, a cast to bool), a Cast to i32 narrows it, saturating at
// the i32 limits as te.Round does: an index is proven to fit, and a value
// stored to an i32 tensor saturates as the reference evaluator's store
// does; a cast to f32 converts the i64 value itself. A variable whose
// defining Let has an i64 value, and that is never reassigned, becomes i64.
// The lowering keeps te's i32 constants as they are, so that an element
// expression such as ids[i] * 3000000001 computes what the reference does
// (exact integers, saturated where stored).
//
// The bounds are sound for the values a kernel computes as long as its i32
// operations do not overflow, which the bounds themselves establish by
// induction over the expression; the result is exact arithmetic wherever
// it is proven to fit, 64-bit elsewhere, and never silently wrapped.
//
// # Text form
//
// Module.String (Fprint) writes a module in a stable text form meant for
// people and golden tests (tec build --dump-after); see Fprint. The IR is
// built in Go; there is no parser.
package kir

import (
	"fmt"

	"tec/gpu"
	"tec/te"
)

// Space is a memory space.
type Space int

// The memory spaces.
const (
	Global Space = iota // device memory, shared by the whole grid and later kernels
	Shared              // per-block on-chip memory
	Local               // per-thread arrays (registers, or local memory when indexed)
)

var spaceNames = [...]string{Global: "global", Shared: "shared", Local: "local"}

// String returns "global", "shared" or "local".
func (s Space) String() string {
	if s >= 0 && int(s) < len(spaceNames) {
		return spaceNames[s]
	}
	return fmt.Sprintf("space(%d)", int(s))
}

// Role says who supplies or reads a global buffer.
type Role int

// The roles of global buffers.
const (
	Temp   Role = iota // an intermediate in the caller-provided workspace
	Input              // an activation supplied by the caller; read-only
	Param              // a weight supplied by the caller; read-only
	Output             // a result the caller reads back
)

var roleNames = [...]string{Temp: "temp", Input: "input", Param: "param", Output: "output"}

// String returns "temp", "input", "param" or "output".
func (r Role) String() string {
	if r >= 0 && int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", int(r))
}

// ReadOnly reports whether kernels may not write buffers of role r.
func (r Role) ReadOnly() bool { return r == Input || r == Param }

// Buffer is an array of elements in one memory space, addressed by a flat
// row-major element index. Shape is for people and emitters; addressing is
// flat. Role matters only for global buffers.
type Buffer struct {
	Name  string
	Space Space
	Role  Role
	DType te.DType
	Shape []int
	// InPlace marks an input that the module updates in place (buffer
	// donation, te.Update): the caller supplies it and reads it back, and
	// kernels may store to it, unlike other inputs.
	InPlace bool
}

// Writable reports whether kernels may store to the buffer.
func (b *Buffer) Writable() bool { return !b.Role.ReadOnly() || b.InPlace }

// Len returns the number of elements.
func (b *Buffer) Len() int {
	n := 1
	for _, d := range b.Shape {
		n *= d
	}
	return n
}

// Bytes returns the buffer's size in memory.
func (b *Buffer) Bytes() int64 { return int64(b.Len()) * int64(b.DType.Size()) }

// ValueType returns the type of the values loaded from and stored to the
// buffer: f32 for every float storage type, otherwise the storage type.
func (b *Buffer) ValueType() te.DType { return ValueType(b.DType) }

// ValueType returns the register type that holds a value of storage type dt.
func ValueType(dt te.DType) te.DType {
	if dt.IsFloat() {
		return te.F32
	}
	return dt
}

// Grid is a kernel's launch grid.
type Grid struct {
	// Blocks is the number of blocks of a fixed grid. For an all-resident grid
	// it is an upper bound (0: none) on the number launched.
	Blocks int
	// Resident marks an all-resident grid: launched cooperatively with as many
	// blocks as the device holds at once (capped by Blocks), so that GridSync
	// is allowed.
	Resident bool
}

// Size returns the number of blocks launched when resident blocks fit on the
// device at once.
func (g Grid) Size(resident int) int {
	if !g.Resident {
		return g.Blocks
	}
	if g.Blocks > 0 && g.Blocks < resident {
		return g.Blocks
	}
	return resident
}

// String formats the grid as in the text form: "grid(64)" or
// "grid(resident)" or "grid(resident ≤ 8)".
func (g Grid) String() string {
	switch {
	case !g.Resident:
		return fmt.Sprintf("grid(%d)", g.Blocks)
	case g.Blocks > 0:
		return fmt.Sprintf("grid(resident<=%d)", g.Blocks)
	}
	return "grid(resident)"
}

// Kernel is one GPU kernel.
type Kernel struct {
	Name  string
	Grid  Grid
	Block int // threads per block
	// BlocksPerSM, when not 0, is how many blocks of the kernel the plan
	// counts on being resident on one SM at once: the emitters pass it to
	// the register allocator (__launch_bounds__'s second argument, PTX's
	// .minnctapersm), which keeps a thread's registers within what that
	// many blocks leave it.
	BlocksPerSM int

	// Params are the global buffers the kernel reads or writes, in the
	// order of the emitted kernel's parameters. They are buffers of the
	// module.
	Params []*Buffer
	// Shared are the kernel's shared-memory arrays, allocated per block.
	Shared []*Buffer
	// Locals are per-thread arrays.
	Locals []*Buffer

	Body []Stmt

	// Doc describes what the kernel computes, for comments in emitted code.
	Doc string
}

// SharedBytes returns the shared memory the kernel uses per block.
func (k *Kernel) SharedBytes() int64 {
	var n int64
	for _, b := range k.Shared {
		n += b.Bytes()
	}
	return n
}

// HasGridSync reports whether the kernel's body contains a GridSync.
func (k *Kernel) HasGridSync() bool {
	found := false
	WalkStmts(k.Body, func(s Stmt) bool {
		if _, ok := s.(*GridSync); ok {
			found = true
		}
		return !found
	})
	return found
}

// Module is a compiled program: global buffers and the kernels that compute
// the outputs from the inputs and params, in launch order.
type Module struct {
	Name    string
	Buffers []*Buffer // global buffers
	Kernels []*Kernel
	// Outputs are the buffers that hold the program's outputs, in the
	// program's order. Usually of role Output; an output that is an input
	// of the program is the input's buffer.
	Outputs []*Buffer
	// TempsInWorkspace says that the emitted kernels reach temporaries
	// through one workspace pointer, at the offsets of WorkspaceLayout,
	// rather than through a parameter each (see KernelArgs), so that a
	// kernel touching thousands of temporaries stays within the kernel
	// parameter limit.
	TempsInWorkspace bool
	// GPU, when set, is the GPU the module was lowered for: every launch
	// must fit its block limits (threads and shared memory per block, and
	// for a kernel that grid-syncs, its blocks resident at once), which the
	// simulator checks. Nil for modules built for no particular GPU.
	GPU *gpu.Model
	// ErrorRecord, when not nil, is the temporary (i32[ErrorRecordWords],
	// live through the whole run) in which kernels record the first gather
	// index out of range (see Bounded); the host zeroes it before the
	// launches and reads it after them (see GatherSite.Error).
	ErrorRecord *Buffer
	// Gathers describes the gathers whose indexes report to ErrorRecord,
	// by their Bounded.Site.
	Gathers []GatherSite
}

// Buffer returns the global buffer named name, or nil.
func (m *Module) Buffer(name string) *Buffer {
	for _, b := range m.Buffers {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// KernelArgs returns the global buffers that kernel k of m takes as
// parameters of their own, in the order of k.Params, and whether the
// emitted kernel takes the workspace pointer after them: with
// m.TempsInWorkspace, temporaries are not parameters but are reached
// through the workspace at their WorkspaceLayout offsets.
func (m *Module) KernelArgs(k *Kernel) (bufs []*Buffer, workspace bool) {
	if !m.TempsInWorkspace {
		return k.Params, false
	}
	for _, b := range k.Params {
		if b.Role == Temp {
			workspace = true
			continue
		}
		bufs = append(bufs, b)
	}
	return bufs, workspace
}

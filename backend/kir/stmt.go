package kir

import "tec/te"

// Stmt is a statement of a kernel body. The concrete types are *Let, *Assign,
// *Store, *Atomic, *If, *For, *SyncThreads, *GridSync and *Stage, and the
// warp-level and 16-byte statements of warp.go: *MMA, *LdMatrix, *VecCopy,
// *CopyAsync, *CommitGroup and *WaitGroup, and the counter statements of
// counter.go: *Signal and *Wait.
type Stmt interface {
	stmtNode()
}

// Let defines Var, with the initial value Value, for the rest of the
// enclosing block of statements.
type Let struct {
	Var   *Var
	Value Expr
}

// Assign gives the Let-defined Var a new value.
type Assign struct {
	Var   *Var
	Value Expr
}

// Store writes Value to element Index of Buf. A store of an f32 value to an
// f16 or bf16 buffer rounds it.
type Store struct {
	Buf   *Buffer
	Index Expr
	Value Expr
}

// Copied returns the load that s stores unchanged, when s copies an f16
// or bf16 element from a buffer of the same type: its f32 value rounds
// back to it, so that an emitter moves the 16 bits as they are instead
// of converting to f32 and back (conversions that ptxas and llc do not
// fold: the A fragments of a tensor-core matrix-vector tile, read from
// its staged rows).
func (s *Store) Copied() (*Load, bool) {
	ld, ok := s.Value.(*Load)
	dt := s.Buf.DType
	return ld, ok && ld.Buf.DType == dt && (dt == te.F16 || dt == te.BF16)
}

// AtomicOp is an atomic read-modify-write.
type AtomicOp int

// The atomic operations, on f32 elements of global or shared buffers.
const (
	AtomicAdd AtomicOp = iota
	AtomicMax
	AtomicMin
)

var atomicNames = [...]string{AtomicAdd: "add", AtomicMax: "max", AtomicMin: "min"}

// String returns "add", "max" or "min".
func (op AtomicOp) String() string { return atomicNames[op] }

// Atomic updates element Index of Buf to Op(old, Value) indivisibly.
type Atomic struct {
	Op    AtomicOp
	Buf   *Buffer
	Index Expr
	Value Expr
}

// If runs Then where Cond holds, Else elsewhere.
type If struct {
	Cond Expr
	Then []Stmt
	Else []Stmt
}

// LoopKind says how a For's iterations are spread over threads.
type LoopKind int

// The loop kinds. Every loop runs Var over [Lo, Hi) in steps; the kind fixes
// the first value and the step of each thread:
//
//	Serial       Lo                                   Step
//	Unrolled     Lo                                   Step (constant bounds; emitted with #pragma unroll)
//	GridStride   Lo + blockIdx.x                      gridDim.x              (tiles over blocks)
//	BlockStride  Lo + threadIdx.x                     blockDim.x             (elements over a block's threads)
//	ThreadStride Lo + blockIdx.x*blockDim.x + threadIdx.x  gridDim.x*blockDim.x (elements over every thread)
//
// Over the whole grid, a GridStride loop visits each value once per thread of
// a block (each block takes whole tiles), and a ThreadStride loop visits each
// value exactly once, whatever the grid's size.
const (
	Serial LoopKind = iota
	Unrolled
	GridStride
	BlockStride
	ThreadStride
)

var loopNames = [...]string{Serial: "serial", Unrolled: "unrolled", GridStride: "gridstride", BlockStride: "blockstride", ThreadStride: "threadstride"}

// String returns the kind's name in the text form.
func (k LoopKind) String() string { return loopNames[k] }

// For is a counted loop of an i32 Var over [Lo, Hi).
type For struct {
	Var    *Var
	Kind   LoopKind
	Lo, Hi Expr
	Step   int // for Serial and Unrolled; > 0
	// Unroll, for a Serial loop, is how many iterations the compiler
	// unrolls into one body (#pragma unroll Unroll): 2 or more, below
	// the trip count; 0 leaves it to the compiler. It changes the code,
	// not what the loop computes.
	Unroll int
	Body   []Stmt
}

// SyncThreads is a barrier across the threads of a block (__syncthreads).
type SyncThreads struct{}

// GridSync is a barrier across every thread of the grid (grid.sync()).
type GridSync struct{}

// Stage groups the statements that compute one tensor expression.
type Stage struct {
	Name string  // the tensor computed
	Span te.Span // where it is defined in the source
	Body []Stmt
}

// Prefetch asks the GPU to bring the cache line that holds element Index
// of the global buffer Buf into L2 (PTX prefetch.global.L2), for a later
// stage that reads it: a hint, which changes no value and orders nothing.
// The index must be in bounds.
type Prefetch struct {
	Buf   *Buffer
	Index Expr
}

func (*Let) stmtNode()         {}
func (*Prefetch) stmtNode()    {}
func (*Assign) stmtNode()      {}
func (*Store) stmtNode()       {}
func (*Atomic) stmtNode()      {}
func (*If) stmtNode()          {}
func (*For) stmtNode()         {}
func (*SyncThreads) stmtNode() {}
func (*GridSync) stmtNode()    {}
func (*Stage) stmtNode()       {}

// WalkStmts calls f for each statement of body and of the statements nested
// in them, parents first; if f returns false, the statement's children are
// skipped.
func WalkStmts(body []Stmt, f func(Stmt) bool) {
	for _, s := range body {
		if !f(s) {
			continue
		}
		switch s := s.(type) {
		case *If:
			WalkStmts(s.Then, f)
			WalkStmts(s.Else, f)
		case *For:
			WalkStmts(s.Body, f)
		case *Stage:
			WalkStmts(s.Body, f)
		}
	}
}

// Exprs calls f for each expression that s holds directly (not those of
// nested statements).
func Exprs(s Stmt, f func(Expr)) { EditExprs(s, func(e *Expr) { f(*e) }) }

// EditExprs calls f with the address of each expression that s holds
// directly (not those of nested statements), so that f may replace it.
func EditExprs(s Stmt, f func(*Expr)) {
	switch s := s.(type) {
	case *Let:
		f(&s.Value)
	case *Assign:
		f(&s.Value)
	case *Store:
		f(&s.Index)
		f(&s.Value)
	case *Atomic:
		f(&s.Index)
		f(&s.Value)
	case *If:
		f(&s.Cond)
	case *For:
		f(&s.Lo)
		f(&s.Hi)
	case *VecCopy:
		f(&s.DstIndex)
		f(&s.SrcIndex)
	case *CopyAsync:
		f(&s.DstIndex)
		f(&s.SrcIndex)
	case *LdMatrix:
		f(&s.Index)
	case *Signal:
		f(&s.Index)
	case *Wait:
		f(&s.Index)
		f(&s.Target)
	case *Prefetch:
		f(&s.Index)
	}
}

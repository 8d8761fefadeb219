package kir

import (
	"fmt"

	"tec/te"
)

// Var is a scalar register of one thread. It is defined once, by a Let or as
// the variable of a For, and may be reassigned by Assign when it was defined
// by a Let. Vars are compared by identity; Name is for printing.
type Var struct {
	Name string
	T    te.DType // te.F32, te.I32, te.Bool, or te.I64 (Widen)
}

// NewVar returns a fresh variable.
func NewVar(name string, t te.DType) *Var { return &Var{Name: name, T: t} }

// Expr is a typed scalar expression, evaluated by one thread. The concrete
// types are *Const, *Var, *Special, *Load, *Unary, *Binary, *Select, *Cast,
// *Shuffle and *Bounded.
type Expr interface {
	// Type returns the type of the expression's value, assuming it is well
	// typed (the verifier checks that).
	Type() te.DType
	exprNode()
}

// Const is a literal value.
type Const struct {
	Value float64
	T     te.DType
}

// SpecialReg names a special register.
type SpecialReg int

// The special registers, all i32.
const (
	ThreadIdx SpecialReg = iota // threadIdx.x
	BlockIdx                    // blockIdx.x
	BlockDim                    // blockDim.x
	GridDim                     // gridDim.x
)

var specialNames = [...]string{ThreadIdx: "threadIdx.x", BlockIdx: "blockIdx.x", BlockDim: "blockDim.x", GridDim: "gridDim.x"}

// String returns the register's CUDA name, e.g. "threadIdx.x".
func (r SpecialReg) String() string { return specialNames[r] }

// Special reads a special register.
type Special struct {
	Reg SpecialReg
}

// Load reads element Index of Buf, in Buf's memory space.
type Load struct {
	Buf   *Buffer
	Index Expr
}

// Unary applies one of te's element-wise functions of one argument. Neg and
// Abs apply to f32 and i32, Not to bool, the others to f32.
type Unary struct {
	Op te.UnaryOp
	X  Expr
}

// Binary applies one of te's element-wise functions of two arguments of the
// same type. Arithmetic (+ - * / % max min) applies to f32 and i32, pow to
// f32; comparisons to f32 and i32 and give bool; && and || apply to bool and
// evaluate both operands. On i32, / rounds towards negative infinity and % is
// never negative.
type Binary struct {
	Op   te.BinaryOp
	X, Y Expr

	// t is the result type, when typed: Bin sets it, so that the type of
	// a chain of thousands of operations (x + x + ... + x) is found
	// without walking down the chain at every level.
	t     te.DType
	typed bool
}

// Select is Then where Cond holds and Else elsewhere; only the chosen operand
// is evaluated (CUDA's c ? a : b), so an operand may load an element that is
// in bounds only where the condition says so.
type Select struct {
	Cond, Then, Else Expr
}

// Cast converts X to To. To may be a storage type: a cast to f16 or bf16
// rounds an f32 value to that precision and still gives an f32. Float to i32
// truncates towards zero; anything to bool tests for non-zero.
type Cast struct {
	To te.DType
	X  Expr
}

// Bounded is X, an i32 index computed at run time (a gather's index, read
// from a tensor), where it lies in [0, N), N being dimension Dim of Buf,
// the buffer gathered from. Elsewhere the simulator stops with an error
// that names the index and its value, and emitted code clamps the index
// into [0, N), so that no access is ever out of bounds (docs/language.md,
// "Gather").
//
// With Record set, emitted code also reports the index: where X is out of
// range, the thread claims the module's error record (Module.ErrorRecord)
// with an atomic compare-and-swap of its flag word from 0 to 1, so that
// the first offending thread of the run wins, and the winner writes Site,
// At and X's value to it (see ErrorRecordWords); the host reads the record
// after the launches. The simulator runs this path when asked to
// (sim.Options.DeviceGathers).
type Bounded struct {
	X   Expr
	N   int
	Buf *Buffer
	Dim int

	// Record is the module's error record, or nil for a bare clamp.
	Record *Buffer
	// Site is the gather's position in Module.Gathers.
	Site int
	// At is the flat position of the index element read in the site's
	// index tensor, or nil when there is none (the record gets -1).
	At Expr
	// Update marks the index of a store into an input updated in place
	// (te.Update), which messages call an update index.
	Update bool
}

// Type implements Expr.
func (*Bounded) Type() te.DType { return te.I32 }

func (*Bounded) exprNode() {}

// Type implements Expr.
func (c *Const) Type() te.DType { return c.T }

// Type implements Expr.
func (v *Var) Type() te.DType { return v.T }

// Type implements Expr.
func (*Special) Type() te.DType { return te.I32 }

// Type implements Expr.
func (l *Load) Type() te.DType { return l.Buf.ValueType() }

// Type implements Expr.
func (u *Unary) Type() te.DType {
	if u.Op == te.Not {
		return te.Bool
	}
	if u.Op == te.Neg || u.Op == te.Abs {
		return u.X.Type()
	}
	return te.F32
}

// Type implements Expr.
func (b *Binary) Type() te.DType {
	if b.typed {
		return b.t
	}
	return binaryType(b.Op, b.X)
}

func binaryType(op te.BinaryOp, x Expr) te.DType {
	if op.IsComparison() || op.IsLogical() {
		return te.Bool
	}
	return x.Type()
}

// Type implements Expr.
func (s *Select) Type() te.DType { return s.Then.Type() }

// Type implements Expr.
func (c *Cast) Type() te.DType { return ValueType(c.To) }

func (*Const) exprNode()   {}
func (*Var) exprNode()     {}
func (*Special) exprNode() {}
func (*Load) exprNode()    {}
func (*Unary) exprNode()   {}
func (*Binary) exprNode()  {}
func (*Select) exprNode()  {}
func (*Cast) exprNode()    {}

// F returns the f32 constant v.
func F(v float64) *Const { return &Const{Value: v, T: te.F32} }

// I returns the i32 constant v.
func I(v int) *Const { return &Const{Value: float64(v), T: te.I32} }

// B returns the bool constant v.
func B(v bool) *Const {
	if v {
		return &Const{Value: 1, T: te.Bool}
	}
	return &Const{Value: 0, T: te.Bool}
}

// Tid, Bid, Bdim and Gdim return the special registers.
func Tid() Expr  { return &Special{Reg: ThreadIdx} }
func Bid() Expr  { return &Special{Reg: BlockIdx} }
func Bdim() Expr { return &Special{Reg: BlockDim} }
func Gdim() Expr { return &Special{Reg: GridDim} }

// Bin returns the binary expression x op y.
func Bin(op te.BinaryOp, x, y Expr) Expr {
	b := &Binary{Op: op, X: x, Y: y}
	if x != nil {
		b.t, b.typed = binaryType(op, x), true
	}
	return b
}

// Add, Sub, Mul, Div, Mod, Lt, Le, Ge, Eq and And are shorthands for Bin.
func Add(x, y Expr) Expr { return Bin(te.Add, x, y) }
func Sub(x, y Expr) Expr { return Bin(te.Sub, x, y) }
func Mul(x, y Expr) Expr { return Bin(te.Mul, x, y) }
func Div(x, y Expr) Expr { return Bin(te.Div, x, y) }
func Mod(x, y Expr) Expr { return Bin(te.Mod, x, y) }
func Lt(x, y Expr) Expr  { return Bin(te.Lt, x, y) }
func Le(x, y Expr) Expr  { return Bin(te.Le, x, y) }
func Ge(x, y Expr) Expr  { return Bin(te.Ge, x, y) }
func Eq(x, y Expr) Expr  { return Bin(te.Eq, x, y) }
func And(x, y Expr) Expr { return Bin(te.And, x, y) }

// Ld returns the load buf[index].
func Ld(buf *Buffer, index Expr) Expr { return &Load{Buf: buf, Index: index} }

// WalkExpr calls f for e and each of its sub-expressions, parents first; if f
// returns false, e's children are skipped.
func WalkExpr(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch e := e.(type) {
	case *Load:
		WalkExpr(e.Index, f)
	case *Unary:
		WalkExpr(e.X, f)
	case *Binary:
		WalkExpr(e.X, f)
		WalkExpr(e.Y, f)
	case *Select:
		WalkExpr(e.Cond, f)
		WalkExpr(e.Then, f)
		WalkExpr(e.Else, f)
	case *Cast:
		WalkExpr(e.X, f)
	case *Shuffle:
		WalkExpr(e.X, f)
		WalkExpr(e.Mask, f)
	case *Bounded:
		WalkExpr(e.X, f)
		WalkExpr(e.At, f)
	}
}

// ShuffleMode says which lane a Shuffle reads.
type ShuffleMode int

// The shuffle modes of PTX's shfl.sync. Lanes are numbered within a warp of
// WarpSize threads: lane = threadIdx.x % WarpSize.
const (
	ShuffleXor  ShuffleMode = iota // read lane ^ Offset (shfl.sync.bfly, __shfl_xor_sync)
	ShuffleDown                    // read lane + Offset (shfl.sync.down, __shfl_down_sync)
)

var shuffleNames = [...]string{ShuffleXor: "xor", ShuffleDown: "down"}

// String returns "xor" or "down".
func (m ShuffleMode) String() string {
	if m >= 0 && int(m) < len(shuffleNames) {
		return shuffleNames[m]
	}
	return fmt.Sprintf("shuffle(%d)", int(m))
}

// WarpSize is the number of lanes of a warp.
const WarpSize = 32

// Shuffle is a warp shuffle (PTX shfl.sync): each thread gives X and gets
// the X of another lane of its warp, chosen by Mode and Offset within
// segments of Width lanes (a power of two, 1 to WarpSize). The lane read is
// src = lane ^ Offset (xor) or lane + Offset (down); where src lies past the
// end of the thread's segment, the thread gets its own X, as PTX defines.
//
// Mask is an i32 holding the 32-bit membermask: the lanes of the warp that
// execute this shuffle together. As in PTX, every thread that executes it
// must be in the mask and every lane of the mask must execute it, and a
// thread must not read a lane outside the mask (the value would be
// undefined); the simulator reports either as an error. X is f32 or i32
// (a reduction of f16 or bf16 values shuffles its f32 accumulator).
type Shuffle struct {
	Mode   ShuffleMode
	X      Expr
	Offset int // the lane mask of xor, the delta of down: 0 to WarpSize-1
	Width  int
	Mask   Expr
}

// Type implements Expr.
func (s *Shuffle) Type() te.DType { return s.X.Type() }

func (*Shuffle) exprNode() {}

// FullMask is the membermask of all the lanes of a warp, as an i32.
func FullMask() *Const { return I(-1) }

// LaneMask returns the membermask of lanes 0 to n-1 as an i32 constant.
func LaneMask(n int) *Const {
	return I(int(int32(uint32(uint64(1)<<n - 1))))
}

// ShuffleSource returns the lane that lane reads in a shuffle of the given
// mode, offset and width, and whether it reads another lane at all: a
// source past the end of lane's segment of width lanes yields lane's own
// value.
func ShuffleSource(mode ShuffleMode, lane, offset, width int) (int, bool) {
	src := lane + offset
	if mode == ShuffleXor {
		src = lane ^ offset
	}
	last := lane&^(width-1) | (width - 1)
	if src > last {
		return lane, false
	}
	return src, true
}

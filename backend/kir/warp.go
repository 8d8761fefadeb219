package kir

import (
	"fmt"

	"tec/te"
)

// This file holds the warp-level matrix statements (tensor-core MMA and
// ldmatrix) and the 16-byte memory statements (vector copies and
// asynchronous global-to-shared copies) that a tensor-core GEMM is built
// from. Their rules, which the simulator checks, are in the package doc of
// each type.

// MMAShape is the shape of a tensor-core matrix multiply-accumulate: an
// M×K matrix A times a K×N matrix B plus an M×N accumulator C.
type MMAShape int

// The MMA shapes of PTX's mma.sync.aligned that kir has.
const (
	M16N8K16 MMAShape = iota // f16 and bf16 operands (sm_80)
	M16N8K8                  // tf32 operands (sm_80), or f16 ones (sm_75)
)

// Dims returns the shape's M, N and K.
func (s MMAShape) Dims() (m, n, k int) {
	if s == M16N8K8 {
		return 16, 8, 8
	}
	return 16, 8, 16
}

// String returns the shape's PTX name, e.g. "m16n8k16".
func (s MMAShape) String() string {
	switch s {
	case M16N8K16:
		return "m16n8k16"
	case M16N8K8:
		return "m16n8k8"
	}
	return fmt.Sprintf("shape(%d)", int(s))
}

// MMAOperand names an operand of an MMA.
type MMAOperand int

// The operands: the multiplicands A (row-major) and B (column-major) and
// the accumulators C and D (same layout).
const (
	OperandA MMAOperand = iota
	OperandB
	OperandC
)

// Frag is a thread's fragment of an MMA operand: elements Off to
// Off+FragLen-1 of a local array, each thread's own registers.
type Frag struct {
	Buf *Buffer
	Off int
}

// MMA is PTX's mma.sync.aligned.<shape>.row.col.f32.<in>.<in>.f32: the
// warp computes D = A·B + C with f32 accumulators, every lane holding a
// fragment of each operand in its registers, laid out as FragElem says.
// In is the operands' type: te.F16 or te.BF16 with M16N8K16, te.F32 with
// M16N8K8 meaning TF32 (operands must already be TF32 values, which
// cvt.rna.tf32.f32 gives: PTX does not say what the low 13 bits of an f32
// operand do, and the simulator rounds them away as cvt.rna would), or
// te.F16 with M16N8K8, Turing's shape: two of them, over k 0-7 and 8-15,
// compute one M16N8K16 of f16 (an M16N8K16 A fragment's elements 0-3 and
// 4-7 are their A fragments, its B fragment's 0-1 and 2-3 their B).
//
// A and B are local arrays of type In, C and D local f32 arrays; D may be
// C. All WarpSize lanes of the warp must execute an MMA together (the
// .aligned and .sync qualifiers); the simulator reports one that a warp
// executes with some lanes missing, or in a block whose last warp is
// partial.
type MMA struct {
	Shape   MMAShape
	In      te.DType
	D, A, B Frag
	C       Frag
}

// FragLen returns the number of elements a lane holds of operand op of an
// MMA of the given shape (C and D alike).
func FragLen(shape MMAShape, op MMAOperand) int {
	m, n, k := shape.Dims()
	switch op {
	case OperandA:
		return m * k / WarpSize
	case OperandB:
		return k * n / WarpSize
	}
	return m * n / WarpSize
}

// FragElem returns the row and column of the element of operand op that
// register i of lane holds in an MMA of the shape and operand type in, as
// the PTX ISA's "Matrix Fragments for mma" sections define them, with
// groupID = lane>>2 and threadID_in_group = lane%4. A is M×K, B is K×N
// (row = k), C and D are M×N.
func FragElem(shape MMAShape, in te.DType, op MMAOperand, lane, i int) (row, col int) {
	g, t := lane>>2, lane%4
	switch {
	case op == OperandC:
		// c0, c1 in row g, c2, c3 in row g+8; columns 2t and 2t+1.
		return g + 8*(i/2), 2*t + i%2
	case shape == M16N8K8 && in == te.F16 && op == OperandA:
		// f16 m16n8k8: a0, a1 in row g, a2, a3 in row g+8; columns 2t
		// and 2t+1.
		return g + 8*(i/2), 2*t + i%2
	case shape == M16N8K8 && in == te.F16:
		// f16 m16n8k8 B: b0, b1 in rows 2t and 2t+1; column g.
		return 2*t + i%2, g
	case shape == M16N8K8 && op == OperandA:
		// tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4).
		return g + 8*(i%2), t + 4*(i/2)
	case shape == M16N8K8:
		// tf32 B: b0 (t, g), b1 (t+4, g).
		return t + 4*i, g
	case op == OperandA:
		// f16/bf16: a0..a3 in columns 2t+{0,1}, a4..a7 in 2t+8+{0,1};
		// rows g for a0, a1, a4, a5 and g+8 for the others.
		return g + 8*(i/2%2), 2*t + i%2 + 8*(i/4)
	}
	// f16/bf16 B: b0, b1 in rows 2t+{0,1}, b2, b3 in 2t+8+{0,1}; column g.
	return 2*t + i%2 + 8*(i/2), g
}

// LdMatrix is PTX's ldmatrix.sync.aligned.m8n8.x<Num>[.trans].shared.b16:
// the warp loads Num 8×8 matrices of 16-bit elements from shared memory
// into fragments. Lane 8j+r (r < 8) gives, in Index, the element index in
// Src of row r of matrix j: eight consecutive elements, 16-byte aligned.
// Every lane then receives two elements of each matrix j in Dst elements
// Off+2j and Off+2j+1: those of row lane/4, columns 2(lane%4) and
// 2(lane%4)+1, or with Trans, of column lane/4, rows 2(lane%4) and
// 2(lane%4)+1. Num is 1, 2 or 4; lanes past 8·Num give indexes that are
// not used. All WarpSize lanes of the warp must execute it together.
// Src is a shared f16 or bf16 array and Dst a local array of its type.
type LdMatrix struct {
	Num   int
	Trans bool
	Dst   Frag
	Src   *Buffer
	Index Expr
}

// LdMatrixElem returns, for lane and its register i of an LdMatrix, the
// matrix, the lane whose Index gives the row read, and the element's
// offset in that row.
func LdMatrixElem(trans bool, lane, i int) (matrix, rowLane, col int) {
	matrix = i / 2
	r, c := lane/4, 2*(lane%4)+i%2
	if trans {
		r, c = c, r
	}
	return matrix, 8*matrix + r, c
}

// VecBytes is the size of a vector access: 128 bits.
const VecBytes = 16

// VecLen returns the elements of type dt in a 16-byte vector.
func VecLen(dt te.DType) int { return VecBytes / dt.Size() }

// VecCopy copies VecLen(Src.DType) consecutive elements from Src, from
// element SrcIndex, to Dst, from element DstIndex, as one 128-bit load and
// one 128-bit store (ld.v4.b32 / st.v4.b32; float4 or uint4 in CUDA): a
// vector load when Dst is a local array (registers), a vector store when
// Src is, a copy through registers otherwise. Src and Dst have the same
// storage type (f32, i32, f16 or bf16); no value is converted. Both
// indexes must be multiples of the vector length (the address 16-byte
// aligned, since every buffer starts 16-byte aligned): the verifier
// rejects a constant index that is not, and the simulator reports one at
// run time. Bytes, when not 0, narrows the copy to 8 or 4 bytes (uint2,
// float2 or one 32-bit word in CUDA), aligned to its own size: where the
// layout allows no 16-byte vector (a row of 196 halves).
type VecCopy struct {
	Dst      *Buffer
	DstIndex Expr
	Src      *Buffer
	SrcIndex Expr
	Bytes    int
}

// Size returns the bytes the copy moves: Bytes, or VecBytes where it is 0.
func (s *VecCopy) Size() int {
	if s.Bytes == 0 {
		return VecBytes
	}
	return s.Bytes
}

// Len returns the elements the copy moves.
func (s *VecCopy) Len() int { return s.Size() / s.Src.DType.Size() }

// CopyAsync is PTX's cp.async.ca/cg.shared.global with 16 bytes: the
// thread starts copying VecLen elements from global buffer Src, from
// SrcIndex, to shared array Dst, from DstIndex (both 16-byte aligned, of
// one storage type). Bypass selects .cg (cached in L2 only) rather than
// .ca. The copy joins the thread's open group; CommitGroup closes that
// group, and WaitGroup{N} waits until at most N of the thread's committed
// groups are still in flight. Until then the elements copied are not
// written: a read of them is a bug, which the simulator reports like a
// data race. Completed copies are writes by the thread that issued them,
// so that other threads see them only after a barrier that follows the
// wait (PTX's memory model for cp.async).
type CopyAsync struct {
	Dst      *Buffer
	DstIndex Expr
	Src      *Buffer
	SrcIndex Expr
	Bypass   bool
}

// CommitGroup is cp.async.commit_group: the thread's copies issued since
// its last commit form a group.
type CommitGroup struct{}

// WaitGroup is cp.async.wait_group N: the thread waits until all but its
// N most recently committed groups have completed.
type WaitGroup struct{ N int }

func (*MMA) stmtNode()         {}
func (*LdMatrix) stmtNode()    {}
func (*VecCopy) stmtNode()     {}
func (*CopyAsync) stmtNode()   {}
func (*CommitGroup) stmtNode() {}
func (*WaitGroup) stmtNode()   {}

// Accesses calls f for each buffer that statement s itself accesses other
// than through a Load in its expressions, and whether it writes it: the
// buffer of a Store or Atomic, both buffers of a VecCopy or CopyAsync, the
// arrays of an LdMatrix, the fragments of an MMA, the counter of a
// Signal (a write) or a Wait (a read), and the buffer of a Prefetch (a
// read, which reads no value).
func Accesses(s Stmt, f func(b *Buffer, write bool)) {
	switch s := s.(type) {
	case *Store:
		f(s.Buf, true)
	case *Atomic:
		f(s.Buf, true)
	case *VecCopy:
		f(s.Src, false)
		f(s.Dst, true)
	case *CopyAsync:
		f(s.Src, false)
		f(s.Dst, true)
	case *LdMatrix:
		f(s.Src, false)
		f(s.Dst.Buf, true)
	case *Signal:
		f(s.Counter, true)
	case *Wait:
		f(s.Counter, false)
	case *Prefetch:
		f(s.Buf, false)
	case *MMA:
		f(s.A.Buf, false)
		f(s.B.Buf, false)
		f(s.C.Buf, false)
		f(s.D.Buf, true)
	}
}

// IsWarpLevel reports whether s is one of the statements of this file,
// which a stage function (see package dedup) does not take.
func IsWarpLevel(s Stmt) bool {
	switch s.(type) {
	case *MMA, *LdMatrix, *VecCopy, *CopyAsync, *CommitGroup, *WaitGroup:
		return true
	}
	return false
}

// mmaErr returns a description of the first problem of an MMA's types and
// fragments, or "".
func mmaErr(s *MMA) string {
	switch {
	case s.Shape == M16N8K16 && s.In != te.F16 && s.In != te.BF16:
		return fmt.Sprintf("mma.%s of %s (want f16 or bf16)", s.Shape, s.In)
	case s.Shape == M16N8K8 && s.In != te.F32 && s.In != te.F16:
		return fmt.Sprintf("mma.%s of %s (want f32, meaning tf32, or f16)", s.Shape, s.In)
	case s.Shape != M16N8K16 && s.Shape != M16N8K8:
		return fmt.Sprintf("unknown mma shape %d", s.Shape)
	}
	for _, x := range []struct {
		name string
		f    Frag
		op   MMAOperand
		dt   te.DType
	}{{"a", s.A, OperandA, s.In}, {"b", s.B, OperandB, s.In}, {"c", s.C, OperandC, te.F32}, {"d", s.D, OperandC, te.F32}} {
		if msg := fragErr(x.name, x.f, FragLen(s.Shape, x.op), x.dt); msg != "" {
			return "mma." + s.Shape.String() + " " + msg
		}
	}
	return ""
}

// fragErr checks that fragment f holds n elements of type dt.
func fragErr(name string, f Frag, n int, dt te.DType) string {
	switch {
	case f.Buf == nil:
		return fmt.Sprintf("fragment %s in a nil buffer", name)
	case f.Buf.Space != Local:
		return fmt.Sprintf("fragment %s in %s array %s (want a local array)", name, f.Buf.Space, f.Buf.Name)
	case f.Buf.DType != dt:
		return fmt.Sprintf("fragment %s in %s array %s (want %s)", name, f.Buf.DType, f.Buf.Name, dt)
	case f.Off < 0 || f.Off+n > f.Buf.Len():
		return fmt.Sprintf("fragment %s of %d elements at %d is out of bounds of %s %s", name, n, f.Off, f.Buf.Name, typeString(f.Buf))
	}
	return ""
}

// ldmatrixErr returns a description of the first problem of an LdMatrix
// other than its index, or "".
func ldmatrixErr(s *LdMatrix) string {
	switch {
	case s.Num != 1 && s.Num != 2 && s.Num != 4:
		return fmt.Sprintf("ldmatrix.x%d (want x1, x2 or x4)", s.Num)
	case s.Src == nil:
		return "ldmatrix from a nil buffer"
	case s.Src.Space != Shared:
		return fmt.Sprintf("ldmatrix from %s array %s (want shared)", s.Src.Space, s.Src.Name)
	case s.Src.DType != te.F16 && s.Src.DType != te.BF16:
		return fmt.Sprintf("ldmatrix from %s array %s (want f16 or bf16)", s.Src.DType, s.Src.Name)
	}
	if msg := fragErr("destination", s.Dst, 2*s.Num, s.Src.DType); msg != "" {
		return "ldmatrix " + msg
	}
	return ""
}

// copyErr returns a description of the first problem of the buffers of a
// 16-byte copy, or "".
func copyErr(what string, dst, src *Buffer, async bool) string {
	switch {
	case dst == nil || src == nil:
		return what + " with a nil buffer"
	case dst.DType != src.DType:
		return fmt.Sprintf("%s from %s %s to %s %s: the types differ", what, src.DType, src.Name, dst.DType, dst.Name)
	case dst.DType == te.Bool:
		return fmt.Sprintf("%s of bool elements", what)
	case dst.Space == Global && dst.Role.ReadOnly():
		return fmt.Sprintf("%s to %s %s", what, dst.Role, dst.Name)
	case async && (src.Space != Global || dst.Space != Shared):
		return fmt.Sprintf("%s from %s %s to %s %s (want global to shared)", what, src.Space, src.Name, dst.Space, dst.Name)
	case !async && src.Space == Local && dst.Space == Local:
		return fmt.Sprintf("%s from local %s to local %s", what, src.Name, dst.Name)
	}
	return ""
}

// vecIndexErr returns a description of a constant index of a 16-byte access
// of buf that is misaligned or out of bounds, or "".
func vecIndexErr(buf *Buffer, index Expr) string {
	if buf == nil {
		return ""
	}
	return vecIndexBytesErr(buf, index, VecBytes)
}

// vecIndexBytesErr is vecIndexErr for an access of bytes bytes.
func vecIndexBytesErr(buf *Buffer, index Expr, bytes int) string {
	c, ok := index.(*Const)
	if !ok || buf == nil {
		return ""
	}
	n, i := bytes/buf.DType.Size(), int(c.Value)
	switch {
	case i%n != 0:
		return fmt.Sprintf("misaligned %d-byte access to %s[%d]: the index is not a multiple of %d", bytes, buf.Name, i, n)
	case i < 0 || i+n > buf.Len():
		return fmt.Sprintf("%d-byte access to %s[%d:%d] out of bounds of %s", bytes, buf.Name, i, i+n, typeString(buf))
	}
	return ""
}

// vecBytesErr returns a description of a VecCopy's width that is not 4, 8
// or 16 bytes, or not a whole number of its elements, or "".
func vecBytesErr(s *VecCopy) string {
	switch b := s.Size(); {
	case b != 4 && b != 8 && b != VecBytes:
		return fmt.Sprintf("vector copy of %d bytes (want 4, 8 or 16)", b)
	case b < s.Src.DType.Size() || b%s.Src.DType.Size() != 0:
		return fmt.Sprintf("vector copy of %d bytes of %s elements", b, s.Src.DType)
	}
	return ""
}

package cuda

import (
	"fmt"
	"strings"

	"tec/backend/kir"
	"tec/te"
)

// This file writes the warp-level and 16-byte statements of kir's warp.go:
// mma.sync, ldmatrix and cp.async as inline PTX (asm volatile), and vector
// copies as float4 or uint4 accesses. Fragments are the elements of local
// arrays; a pair of f16 or bf16 elements is one 32-bit register, reached
// by reinterpreting the array (which is 16-byte aligned, as are shared
// arrays in a kernel with these statements).

// usesWarpLevel reports whether k has a warp-level or 16-byte statement,
// whose arrays must be 16-byte aligned.
func usesWarpLevel(k *kir.Kernel) bool {
	found := false
	kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
		found = found || kir.IsWarpLevel(s)
		return !found
	})
	return found
}

// reg32 returns the 32-bit register holding elements off and off+1 (f16,
// bf16) or element off (f32, as its bits) of local array buf.
func (w *kernelWriter) reg32(buf *kir.Buffer, off int) string {
	name := w.names.buf(buf)
	if buf.DType == te.F32 {
		return fmt.Sprintf("__float_as_uint(%s[%d])", name, off)
	}
	return fmt.Sprintf("*reinterpret_cast<unsigned*>(&%s[%d])", name, off)
}

// sharedAddr returns the 32-bit shared-space address of element index of
// shared array buf.
func (w *kernelWriter) sharedAddr(buf *kir.Buffer, index kir.Expr) string {
	return fmt.Sprintf("static_cast<unsigned>(__cvta_generic_to_shared(&%s[%s]))", w.names.buf(buf), w.expr(index))
}

// operands formats n asm operands from %first: "{%4, %5, %6, %7}".
func operands(first, n int) string {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf("%%%d", first+i)
	}
	return "{" + strings.Join(ops, ", ") + "}"
}

func (w *kernelWriter) mma(s *kir.MMA, depth int) {
	in := s.In.String()
	if s.In == te.F32 {
		in = "tf32"
	}
	na, nb := kir.FragLen(s.Shape, kir.OperandA), kir.FragLen(s.Shape, kir.OperandB)
	perReg := 2
	if s.In == te.F32 {
		perReg = 1
	}
	ra, rb := na/perReg, nb/perReg
	var outs, ins []string
	d, c := w.names.buf(s.D.Buf), w.names.buf(s.C.Buf)
	for i := range 4 {
		outs = append(outs, fmt.Sprintf(`"=f"(%s[%d])`, d, s.D.Off+i))
	}
	for i := range ra {
		ins = append(ins, fmt.Sprintf(`"r"(%s)`, w.reg32(s.A.Buf, s.A.Off+i*perReg)))
	}
	for i := range rb {
		ins = append(ins, fmt.Sprintf(`"r"(%s)`, w.reg32(s.B.Buf, s.B.Off+i*perReg)))
	}
	for i := range 4 {
		ins = append(ins, fmt.Sprintf(`"f"(%s[%d])`, c, s.C.Off+i))
	}
	w.line(depth, `asm volatile("mma.sync.aligned.%s.row.col.f32.%s.%s.f32 %s, %s, %s, %s;"`,
		s.Shape, in, in, operands(0, 4), operands(4, ra), operands(4+ra, rb), operands(4+ra+rb, 4))
	w.line(depth+1, ": %s", strings.Join(outs, ", "))
	w.line(depth+1, ": %s);", strings.Join(ins, ", "))
}

func (w *kernelWriter) ldmatrix(s *kir.LdMatrix, depth int) {
	trans := ""
	if s.Trans {
		trans = ".trans"
	}
	var outs []string
	for i := range s.Num {
		outs = append(outs, fmt.Sprintf(`"=r"(%s)`, w.reg32(s.Dst.Buf, s.Dst.Off+2*i)))
	}
	w.line(depth, `asm volatile("ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 %s, [%%%d];"`, s.Num, trans, operands(0, s.Num), s.Num)
	w.line(depth+1, ": %s", strings.Join(outs, ", "))
	w.line(depth+1, `: "r"(%s) : "memory");`, w.sharedAddr(s.Src, s.Index))
}

// vecType returns the CUDA vector type of 16 bytes of dt.
func vecType(dt te.DType) string {
	if dt == te.F32 {
		return "float4"
	}
	return "uint4"
}

// narrowVecType returns the CUDA type of a copy of bytes bytes (8 or 4)
// of dt.
func narrowVecType(dt te.DType, bytes int) string {
	switch {
	case bytes == 8 && dt == te.F32:
		return "float2"
	case bytes == 8:
		return "uint2"
	case dt == te.F32:
		return "float"
	}
	return "unsigned"
}

func (w *kernelWriter) vecCopy(s *kir.VecCopy, depth int) {
	t := vecType(s.Src.DType)
	if s.Size() != kir.VecBytes {
		t = narrowVecType(s.Src.DType, s.Size())
	}
	w.line(depth, "*reinterpret_cast<%s*>(&%s[%s]) = *reinterpret_cast<const %s*>(&%s[%s]);",
		t, w.names.buf(s.Dst), w.expr(s.DstIndex), t, w.names.buf(s.Src), w.expr(s.SrcIndex))
}

func (w *kernelWriter) copyAsync(s *kir.CopyAsync, depth int) {
	kind := "ca"
	if s.Bypass {
		kind = "cg"
	}
	w.line(depth, `asm volatile("cp.async.%s.shared.global [%%0], [%%1], 16;" :: "r"(%s), "l"(&%s[%s]) : "memory");`,
		kind, w.sharedAddr(s.Dst, s.DstIndex), w.names.buf(s.Src), w.expr(s.SrcIndex))
}

// warpStmt writes a statement of kir's warp.go.
func (w *kernelWriter) warpStmt(s kir.Stmt, depth int) {
	switch s := s.(type) {
	case *kir.MMA:
		w.mma(s, depth)
	case *kir.LdMatrix:
		w.ldmatrix(s, depth)
	case *kir.VecCopy:
		w.vecCopy(s, depth)
	case *kir.CopyAsync:
		w.copyAsync(s, depth)
	case *kir.CommitGroup:
		w.line(depth, `asm volatile("cp.async.commit_group;" ::: "memory");`)
	case *kir.WaitGroup:
		w.line(depth, `asm volatile("cp.async.wait_group %d;" ::: "memory");`, s.N)
	}
}

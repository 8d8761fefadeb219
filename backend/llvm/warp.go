package llvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"tec/backend/kir"
	"tec/te"
)

// This file emits the warp-level and 16-byte statements of kir's warp.go
// as NVVM intrinsics: llvm.nvvm.mma.*, llvm.nvvm.ldmatrix.*,
// llvm.nvvm.cp.async.*, and vector loads and stores of <4 x i32> with
// 16-byte alignment. Fragments are elements of local arrays (allocas,
// 16-byte aligned in a kernel with these statements); a pair of f16 or
// bf16 elements is one 32-bit register, reached through a pointer cast.

// ptrTo returns p cast to a pointer to t in p's address space.
func (kg *kgen) ptrTo(p value.Value, t types.Type) value.Value {
	pt := types.NewPointer(t)
	pt.AddrSpace = p.Type().(*types.PointerType).AddrSpace
	return kg.cur.NewBitCast(p, pt)
}

// fragAddr returns the address of element off of local array buf.
func (kg *kgen) fragAddr(buf *kir.Buffer, off int) value.Value {
	return kg.addr(buf, kir.I(off))
}

// reg32 loads the 32-bit register holding elements off and off+1 of a
// fragment of f16 (as <2 x half>) or bf16 (as i32), or element off of an
// f32 one (as its bits, i32).
func (kg *kgen) reg32(buf *kir.Buffer, off int) value.Value {
	p := kg.fragAddr(buf, off)
	switch buf.DType {
	case te.F16:
		return kg.cur.NewLoad(half2, kg.ptrTo(p, half2))
	case te.BF16:
		return kg.cur.NewLoad(types.I32, kg.ptrTo(p, types.I32))
	}
	return kg.cur.NewBitCast(kg.cur.NewLoad(types.Float, p), types.I32)
}

var half2 = types.NewVector(2, types.Half)

// mma calls llvm.nvvm.mma.m16n8k16.row.col.f32.f32 (f16 operands),
// .row.col.bf16, llvm.nvvm.mma.m16n8k8.row.col.tf32 or, for f16 operands
// on sm_75, llvm.nvvm.mma.m16n8k8.row.col.f32.f32, all with f32
// accumulators.
func (kg *kgen) mma(s *kir.MMA) {
	perReg, regT, name := 2, types.Type(half2), fmt.Sprintf("llvm.nvvm.mma.%s.row.col.f32.f32", s.Shape)
	switch s.In {
	case te.BF16:
		regT, name = types.I32, "llvm.nvvm.mma.m16n8k16.row.col.bf16"
	case te.F32:
		perReg, regT, name = 1, types.I32, "llvm.nvvm.mma.m16n8k8.row.col.tf32"
	}
	var params []types.Type
	var args []value.Value
	for _, op := range []struct {
		f  kir.Frag
		op kir.MMAOperand
	}{{s.A, kir.OperandA}, {s.B, kir.OperandB}} {
		for i := 0; i < kir.FragLen(s.Shape, op.op); i += perReg {
			params = append(params, regT)
			args = append(args, kg.reg32(op.f.Buf, op.f.Off+i))
		}
	}
	for i := range 4 {
		params = append(params, types.Float)
		args = append(args, kg.cur.NewLoad(types.Float, kg.fragAddr(s.C.Buf, s.C.Off+i)))
	}
	ret := types.NewStruct(types.Float, types.Float, types.Float, types.Float)
	d := kg.cur.NewCall(kg.g.intrinsic(name, ret, params...), args...)
	for i := range 4 {
		kg.cur.NewStore(kg.cur.NewExtractValue(d, uint64(i)), kg.fragAddr(s.D.Buf, s.D.Off+i))
	}
}

// sharedI8 returns the address of element index of shared array buf as
// an i8 pointer in the shared address space.
func (kg *kgen) sharedI8(buf *kir.Buffer, index kir.Expr) value.Value {
	return kg.ptrTo(kg.addr(buf, index), types.I8)
}

// ldmatrix calls llvm.nvvm.ldmatrix.sync.aligned.m8n8.x<N>[.trans].b16.
func (kg *kgen) ldmatrix(s *kir.LdMatrix) {
	trans := ""
	if s.Trans {
		trans = ".trans"
	}
	name := fmt.Sprintf("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", s.Num, trans)
	addr := kg.sharedI8(s.Src, s.Index)
	var ret types.Type = types.I32
	if s.Num > 1 {
		fields := make([]types.Type, s.Num)
		for i := range fields {
			fields[i] = types.I32
		}
		ret = types.NewStruct(fields...)
	}
	r := kg.cur.NewCall(kg.g.intrinsic(name, ret, addr.Type()), addr)
	for i := range s.Num {
		var v value.Value = r
		if s.Num > 1 {
			v = kg.cur.NewExtractValue(r, uint64(i))
		}
		kg.cur.NewStore(v, kg.ptrTo(kg.fragAddr(s.Dst.Buf, s.Dst.Off+2*i), types.I32))
	}
}

var vec4 = types.NewVector(4, types.I32)

// vecCopy loads and stores a <4 x i32> with 16-byte alignment (a
// narrower copy: <2 x i32> or i32, aligned to its size).
func (kg *kgen) vecCopy(s *kir.VecCopy) {
	var t types.Type = vec4
	switch s.Size() {
	case 8:
		t = types.NewVector(2, types.I32)
	case 4:
		t = types.I32
	}
	ld := kg.cur.NewLoad(t, kg.ptrTo(kg.addr(s.Src, s.SrcIndex), t))
	ld.Align = ir.Align(s.Size())
	st := kg.cur.NewStore(ld, kg.ptrTo(kg.addr(s.Dst, s.DstIndex), t))
	st.Align = ir.Align(s.Size())
}

// copyAsync calls llvm.nvvm.cp.async.ca or .cg.shared.global.16.
func (kg *kgen) copyAsync(s *kir.CopyAsync) {
	name := "llvm.nvvm.cp.async.ca.shared.global.16"
	if s.Bypass {
		name = "llvm.nvvm.cp.async.cg.shared.global.16"
	}
	dst := kg.sharedI8(s.Dst, s.DstIndex)
	src := kg.ptrTo(kg.addr(s.Src, s.SrcIndex), types.I8)
	kg.cur.NewCall(kg.g.intrinsic(name, types.Void, dst.Type(), src.Type()), dst, src)
}

// warpStmt emits a statement of kir's warp.go.
func (kg *kgen) warpStmt(s kir.Stmt) {
	switch s := s.(type) {
	case *kir.MMA:
		kg.mma(s)
	case *kir.LdMatrix:
		kg.ldmatrix(s)
	case *kir.VecCopy:
		kg.vecCopy(s)
	case *kir.CopyAsync:
		kg.copyAsync(s)
	case *kir.CommitGroup:
		kg.cur.NewCall(kg.g.intrinsic("llvm.nvvm.cp.async.commit.group", types.Void))
	case *kir.WaitGroup:
		kg.cur.NewCall(kg.g.intrinsic("llvm.nvvm.cp.async.wait.group", types.Void, types.I32), i32(int64(s.N)))
	}
}

// alignLocals gives k's local arrays 16-byte alignment when k has a
// warp-level or 16-byte statement.
func alignLocals(k *kir.Kernel, allocas []*ir.InstAlloca) {
	found := false
	kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
		found = found || kir.IsWarpLevel(s)
		return !found
	})
	if !found {
		return
	}
	for _, a := range allocas {
		a.Align = 16
	}
}

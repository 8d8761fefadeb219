package kirtest

import (
	"fmt"

	"tec/backend/kir"
	"tec/te"
)

// FragIndex returns the row and column, as expressions of a lane's
// groupID g = lane>>2 and threadID_in_group t = lane%4, of the element of
// an operand of an MMA of the shape and operand type in that register i of the lane
// holds.
type FragIndex func(shape kir.MMAShape, in te.DType, op kir.MMAOperand, g, t kir.Expr, i int) (row, col kir.Expr)

// ISAFragIndex is FragIndex as the PTX ISA's "Matrix Fragments for mma"
// sections state it, written out case by case (independently of
// kir.FragElem, which the simulator uses, so that each checks the other).
func ISAFragIndex(shape kir.MMAShape, in te.DType, op kir.MMAOperand, g, t kir.Expr, i int) (row, col kir.Expr) {
	plus := func(x kir.Expr, c int) kir.Expr {
		if c == 0 {
			return x
		}
		return kir.Add(x, kir.I(c))
	}
	twoT := kir.Mul(kir.I(2), t)
	switch {
	case op == kir.OperandC: // c0, c1: row g; c2, c3: row g+8; col 2t + (i&1)
		return plus(g, 8*(i/2)), plus(twoT, i&1)
	case shape == kir.M16N8K8 && in == te.F16 && op == kir.OperandA: // a0 a1: row g; a2 a3: row g+8; col 2t + (i&1)
		return plus(g, 8*(i/2)), plus(twoT, i&1)
	case shape == kir.M16N8K8 && in == te.F16: // b0 (2t, g), b1 (2t+1, g)
		return plus(twoT, i), g
	case shape == kir.M16N8K8 && op == kir.OperandA: // a0 (g,t) a1 (g+8,t) a2 (g,t+4) a3 (g+8,t+4)
		r := map[int]int{0: 0, 1: 8, 2: 0, 3: 8}[i]
		c := map[int]int{0: 0, 1: 0, 2: 4, 3: 4}[i]
		return plus(g, r), plus(t, c)
	case shape == kir.M16N8K8: // b0 (t, g), b1 (t+4, g)
		return plus(t, 4*i), g
	case op == kir.OperandA: // rows g for a0 a1 a4 a5, g+8 otherwise; cols 2t+(i&1), +8 for i >= 4
		r := 0
		if i == 2 || i == 3 || i == 6 || i == 7 {
			r = 8
		}
		c := i & 1
		if i >= 4 {
			c += 8
		}
		return plus(g, r), plus(twoT, c)
	}
	// B: rows 2t+(i&1), +8 for i >= 2; col g
	r := i & 1
	if i >= 2 {
		r += 8
	}
	return plus(twoT, r), g
}

// MMA returns a module of one warp that computes d = a·b + c with one
// tensor-core MMA of the given shape and operand type (te.F16, te.BF16,
// or te.F32 for TF32, whose operands it rounds with RoundTF32): every lane
// loads its fragments of a (M×K, row-major), b (K×N, row-major) and c
// (M×N, f32) from global memory at the places idx gives, and stores its
// fragment of d where idx places C's.
func MMA(shape kir.MMAShape, in te.DType, idx FragIndex) *kir.Module {
	m, n, k := shape.Dims()
	name := fmt.Sprintf("mma_%s_%s", shape, in)
	a := &kir.Buffer{Name: "a", Role: kir.Input, DType: in, Shape: []int{m, k}}
	b := &kir.Buffer{Name: "b", Role: kir.Input, DType: in, Shape: []int{k, n}}
	c := &kir.Buffer{Name: "c", Role: kir.Input, DType: te.F32, Shape: []int{m, n}}
	d := &kir.Buffer{Name: "d", Role: kir.Output, DType: te.F32, Shape: []int{m, n}}
	fa := &kir.Buffer{Name: "fa", Space: kir.Local, DType: in, Shape: []int{kir.FragLen(shape, kir.OperandA)}}
	fb := &kir.Buffer{Name: "fb", Space: kir.Local, DType: in, Shape: []int{kir.FragLen(shape, kir.OperandB)}}
	acc := &kir.Buffer{Name: "acc", Space: kir.Local, DType: te.F32, Shape: []int{kir.FragLen(shape, kir.OperandC)}}
	tid, g, t := kir.NewVar("tid", te.I32), kir.NewVar("g", te.I32), kir.NewVar("t", te.I32)
	body := []kir.Stmt{
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.Let{Var: g, Value: kir.Div(tid, kir.I(4))},
		&kir.Let{Var: t, Value: kir.Mod(tid, kir.I(4))},
	}
	operand := func(v kir.Expr) kir.Expr {
		if in == te.F32 {
			return &kir.Unary{Op: te.RoundTF32, X: v}
		}
		return v
	}
	load := func(dst, src *kir.Buffer, op kir.MMAOperand, cols int, conv func(kir.Expr) kir.Expr) {
		for i := range dst.Len() {
			r, col := idx(shape, in, op, g, t, i)
			body = append(body, &kir.Store{Buf: dst, Index: kir.I(i), Value: conv(kir.Ld(src, kir.Add(kir.Mul(r, kir.I(cols)), col)))})
		}
	}
	load(fa, a, kir.OperandA, k, operand)
	load(fb, b, kir.OperandB, n, operand)
	load(acc, c, kir.OperandC, n, func(v kir.Expr) kir.Expr { return v })
	frag := func(buf *kir.Buffer) kir.Frag { return kir.Frag{Buf: buf} }
	body = append(body, &kir.MMA{Shape: shape, In: in, D: frag(acc), A: frag(fa), B: frag(fb), C: frag(acc)})
	for i := range acc.Len() {
		r, col := idx(shape, in, kir.OperandC, g, t, i)
		body = append(body, &kir.Store{Buf: d, Index: kir.Add(kir.Mul(r, kir.I(n)), col), Value: kir.Ld(acc, kir.I(i))})
	}
	return &kir.Module{
		Name: name, Buffers: []*kir.Buffer{a, b, c, d}, Outputs: []*kir.Buffer{d},
		Kernels: []*kir.Kernel{{
			Name: "mma", Grid: kir.Grid{Blocks: 1}, Block: kir.WarpSize, Params: []*kir.Buffer{a, b, c, d},
			Locals: []*kir.Buffer{fa, fb, acc}, Body: body,
			Doc: fmt.Sprintf("d = a·b + c with one mma.sync.%s of %s operands", shape, in),
		}},
	}
}

// PipelineBugs plants bugs in Pipeline.
type PipelineBugs struct {
	NoWait    bool // leave out the cp.async.wait_group before the barrier
	NoBarrier bool // leave out the barrier after the wait
}

// Pipeline returns a module of one warp that computes d = a·b + c, a
// 16×16 f16 matrix times a 16×8 one, the way a tensor-core GEMM does: a
// is staged in shared memory by 128-bit vector copies and b by cp.async
// (lanes 0-15, one commit group, waited on), then after a barrier every
// lane loads its fragment of a with ldmatrix.x4 and of b with
// ldmatrix.x2.trans, and one mma.sync.m16n8k16 computes the product.
func Pipeline(bugs PipelineBugs) *kir.Module {
	a := &kir.Buffer{Name: "a", Role: kir.Input, DType: te.F16, Shape: []int{16, 16}}
	b := &kir.Buffer{Name: "b", Role: kir.Input, DType: te.F16, Shape: []int{16, 8}}
	c := &kir.Buffer{Name: "c", Role: kir.Input, DType: te.F32, Shape: []int{16, 8}}
	d := &kir.Buffer{Name: "d", Role: kir.Output, DType: te.F32, Shape: []int{16, 8}}
	sa := &kir.Buffer{Name: "sa", Space: kir.Shared, DType: te.F16, Shape: []int{16, 16}}
	sb := &kir.Buffer{Name: "sb", Space: kir.Shared, DType: te.F16, Shape: []int{16, 8}}
	fa := &kir.Buffer{Name: "fa", Space: kir.Local, DType: te.F16, Shape: []int{8}}
	fb := &kir.Buffer{Name: "fb", Space: kir.Local, DType: te.F16, Shape: []int{4}}
	acc := &kir.Buffer{Name: "acc", Space: kir.Local, DType: te.F32, Shape: []int{4}}
	tid, g, t := kir.NewVar("tid", te.I32), kir.NewVar("g", te.I32), kir.NewVar("t", te.I32)
	at8 := kir.Mul(tid, kir.I(8))
	body := []kir.Stmt{
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.Let{Var: g, Value: kir.Div(tid, kir.I(4))},
		&kir.Let{Var: t, Value: kir.Mod(tid, kir.I(4))},
		&kir.VecCopy{Dst: sa, DstIndex: at8, Src: a, SrcIndex: at8},
		&kir.If{Cond: kir.Lt(tid, kir.I(16)), Then: []kir.Stmt{
			&kir.CopyAsync{Dst: sb, DstIndex: at8, Src: b, SrcIndex: at8, Bypass: true},
		}},
		&kir.CommitGroup{},
	}
	if !bugs.NoWait {
		body = append(body, &kir.WaitGroup{N: 0})
	}
	if !bugs.NoBarrier {
		body = append(body, &kir.SyncThreads{})
	}
	// ldmatrix.x4: lanes 0-15 give rows 0-15 of columns 0-7 (matrices 0
	// and 1, a0-a3), lanes 16-31 rows 0-15 of columns 8-15 (a4-a7).
	rowA := kir.Add(kir.Mul(kir.Mod(tid, kir.I(16)), kir.I(16)), kir.Mul(kir.Div(tid, kir.I(16)), kir.I(8)))
	// ldmatrix.x2.trans: lanes 0-15 give rows k = 0-15 of b.
	rowB := kir.Mul(kir.Mod(tid, kir.I(16)), kir.I(8))
	body = append(body,
		&kir.LdMatrix{Num: 4, Dst: kir.Frag{Buf: fa}, Src: sa, Index: rowA},
		&kir.LdMatrix{Num: 2, Trans: true, Dst: kir.Frag{Buf: fb}, Src: sb, Index: rowB},
	)
	for i := range 4 {
		r, col := ISAFragIndex(kir.M16N8K16, te.F16, kir.OperandC, g, t, i)
		body = append(body, &kir.Store{Buf: acc, Index: kir.I(i), Value: kir.Ld(c, kir.Add(kir.Mul(r, kir.I(8)), col))})
	}
	body = append(body, &kir.MMA{Shape: kir.M16N8K16, In: te.F16, D: kir.Frag{Buf: acc}, A: kir.Frag{Buf: fa}, B: kir.Frag{Buf: fb}, C: kir.Frag{Buf: acc}})
	for i := range 4 {
		r, col := ISAFragIndex(kir.M16N8K16, te.F16, kir.OperandC, g, t, i)
		body = append(body, &kir.Store{Buf: d, Index: kir.Add(kir.Mul(r, kir.I(8)), col), Value: kir.Ld(acc, kir.I(i))})
	}
	return &kir.Module{
		Name: "pipeline", Buffers: []*kir.Buffer{a, b, c, d}, Outputs: []*kir.Buffer{d},
		Kernels: []*kir.Kernel{{
			Name: "gemm", Grid: kir.Grid{Blocks: 1}, Block: kir.WarpSize, Params: []*kir.Buffer{a, b, c, d},
			Shared: []*kir.Buffer{sa, sb}, Locals: []*kir.Buffer{fa, fb, acc}, Body: body,
			Doc: "d = a·b + c: vector copies and cp.async to shared memory, ldmatrix, one mma.sync",
		}},
	}
}

// Vectors returns a module of 16 threads whose kernel moves 64 f32 and
// 128 f16 elements with 128-bit vector copies, global to shared, shared
// to registers (reversing the order of the vectors) and registers to
// global: y[4i:4i+4] = x[4(15-i):...], h2 likewise in vectors of 8. Skew
// is added to the shared index of the f32 copy (0 for a correct kernel).
func Vectors(skew int) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{64}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{64}}
	h := &kir.Buffer{Name: "h", Role: kir.Input, DType: te.F16, Shape: []int{128}}
	h2 := &kir.Buffer{Name: "h2", Role: kir.Output, DType: te.F16, Shape: []int{128}}
	sx := &kir.Buffer{Name: "sx", Space: kir.Shared, DType: te.F32, Shape: []int{64 + 8}}
	sh := &kir.Buffer{Name: "sh", Space: kir.Shared, DType: te.F16, Shape: []int{128}}
	rx := &kir.Buffer{Name: "rx", Space: kir.Local, DType: te.F32, Shape: []int{4}}
	rh := &kir.Buffer{Name: "rh", Space: kir.Local, DType: te.F16, Shape: []int{8}}
	tid := kir.NewVar("tid", te.I32)
	rev := kir.Sub(kir.I(15), tid)
	body := []kir.Stmt{
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.VecCopy{Dst: sx, DstIndex: kir.Add(kir.Mul(tid, kir.I(4)), kir.I(skew)), Src: x, SrcIndex: kir.Mul(tid, kir.I(4))},
		&kir.VecCopy{Dst: sh, DstIndex: kir.Mul(tid, kir.I(8)), Src: h, SrcIndex: kir.Mul(tid, kir.I(8))},
		&kir.SyncThreads{},
		&kir.VecCopy{Dst: rx, DstIndex: kir.I(0), Src: sx, SrcIndex: kir.Add(kir.Mul(rev, kir.I(4)), kir.I(skew))},
		&kir.VecCopy{Dst: rh, DstIndex: kir.I(0), Src: sh, SrcIndex: kir.Mul(rev, kir.I(8))},
		&kir.VecCopy{Dst: y, DstIndex: kir.Mul(tid, kir.I(4)), Src: rx, SrcIndex: kir.I(0)},
		&kir.VecCopy{Dst: h2, DstIndex: kir.Mul(tid, kir.I(8)), Src: rh, SrcIndex: kir.I(0)},
	}
	return &kir.Module{
		Name: "vectors", Buffers: []*kir.Buffer{x, y, h, h2}, Outputs: []*kir.Buffer{y, h2},
		Kernels: []*kir.Kernel{{
			Name: "vectors", Grid: kir.Grid{Blocks: 1}, Block: 16, Params: []*kir.Buffer{x, y, h, h2},
			Shared: []*kir.Buffer{sx, sh}, Locals: []*kir.Buffer{rx, rh}, Body: body,
			Doc: "128-bit vector copies: global to shared, shared to registers, registers to global",
		}},
	}
}

// VectorLoads returns a module of 16 threads whose kernel loads a row of
// weights 16 bytes at a time into registers, as a matrix-vector tile
// loads its wide factor (backend/lower's sumVec): thread i loads w[8i:8i+8]
// (bf16) and x[4i:4i+4] (f32) with one 128-bit load each into local
// arrays, and writes y[i] = sum over j of w[8i+j]·(j+1) + sum over j of
// x[4i+j]·(j+1), the elements read from the arrays at constant indexes.
func VectorLoads() *kir.Module {
	w := &kir.Buffer{Name: "w", Role: kir.Param, DType: te.BF16, Shape: []int{16, 8}}
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{16, 4}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{16}}
	rw := &kir.Buffer{Name: "w.vec", Space: kir.Local, DType: te.BF16, Shape: []int{8}}
	rx := &kir.Buffer{Name: "x.vec", Space: kir.Local, DType: te.F32, Shape: []int{4}}
	tid, acc := kir.NewVar("tid", te.I32), kir.NewVar("acc", te.F32)
	body := []kir.Stmt{
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.VecCopy{Dst: rw, DstIndex: kir.I(0), Src: w, SrcIndex: kir.Mul(tid, kir.I(8))},
		&kir.VecCopy{Dst: rx, DstIndex: kir.I(0), Src: x, SrcIndex: kir.Mul(tid, kir.I(4))},
		&kir.Let{Var: acc, Value: kir.F(0)},
	}
	for _, r := range []*kir.Buffer{rw, rx} {
		for j := range r.Len() {
			body = append(body, &kir.Assign{Var: acc, Value: kir.Add(acc, kir.Mul(kir.Ld(r, kir.I(j)), kir.F(float64(j+1))))})
		}
	}
	body = append(body, &kir.Store{Buf: y, Index: tid, Value: acc})
	return &kir.Module{
		Name: "vecloads", Buffers: []*kir.Buffer{w, x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "vecloads", Grid: kir.Grid{Blocks: 1}, Block: 16, Params: []*kir.Buffer{w, x, y},
			Locals: []*kir.Buffer{rw, rx}, Body: body,
			Doc: "128-bit loads of bf16 and f32 weights from global memory into registers, used element by element",
		}},
	}
}

package llvm

import (
	"fmt"
	"math"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"tec/backend/internal/dedup"
	"tec/backend/internal/ident"
	"tec/backend/internal/sign"
	"tec/backend/kir"
	"tec/gpu"
	"tec/te"
)

// kgen emits one kernel.
type kgen struct {
	g      *gen
	k      *kir.Kernel
	f      *ir.Func
	entry  *ir.Block // holds the allocas
	cur    *ir.Block // where instructions go
	blocks *ident.Scope
	bufs   map[*kir.Buffer]value.Value // global params and local arrays
	env    map[*kir.Var]value.Value    // each variable's current value
	facts  *sign.Facts
}

func (g *gen) kernel(k *kir.Kernel, name string) error {
	var params []*ir.Param
	pscope := ident.NewScope()
	global := func(elem types.Type) *types.PointerType {
		t := types.NewPointer(elem)
		t.AddrSpace = globalSpace
		return t
	}
	args, ws := g.m.KernelArgs(k)
	for _, b := range args {
		params = append(params, ir.NewParam(pscope.Name(b.Name), global(storageType(b.DType))))
	}
	if ws {
		params = append(params, ir.NewParam(pscope.Name("ws"), global(types.I8)))
	}
	f := g.mod.NewFunc(name, types.Void, params...)
	f.CallingConv = enum.CallingConvPTXKernel
	g.launchBounds(f, k)
	kg := &kgen{g: g, k: k, f: f, blocks: ident.NewScope(), bufs: map[*kir.Buffer]value.Value{},
		env: map[*kir.Var]value.Value{}, facts: sign.Analyze(k.Body)}
	for i, b := range args {
		kg.bufs[b] = params[i]
	}
	// Shared arrays are globals of their own, or, past the static limit,
	// 16-byte aligned slices of the dynamic shared memory (the launch asks
	// for k.SharedBytes of it).
	dynamic := gpu.DynamicShared(k.SharedBytes())
	var off int64
	for _, s := range k.Shared {
		arr := types.NewArray(uint64(s.Len()), storageType(s.DType))
		if !dynamic {
			g.shared[s] = sharedArray{g.global(g.scope.Name(name+"_"+s.Name), constant.NewUndef(arr), sharedSpace), arr}
			continue
		}
		off = (off + 15) &^ 15
		base := g.dynamicShared()
		at := constant.NewGetElementPtr(base.ContentType, base, i64(0), i64(off))
		ptr := types.NewPointer(arr)
		ptr.AddrSpace = sharedSpace
		g.shared[s] = sharedArray{constant.NewBitCast(at, ptr), arr}
		off += s.Bytes()
	}
	kg.entry = f.NewBlock("entry")
	if ws {
		// The temporaries, at fixed offsets in the workspace.
		wsp := params[len(params)-1]
		for _, b := range k.Params {
			off, ok := g.offsets[b]
			if !ok {
				continue
			}
			at := kg.entry.NewGetElementPtr(types.I8, wsp, i64(off))
			at.SetName(kg.blocks.Name(b.Name + ".off"))
			p := kg.entry.NewBitCast(at, global(storageType(b.DType)))
			p.SetName(kg.blocks.Name(b.Name + ".ws"))
			kg.bufs[b] = p
		}
	}
	var allocas []*ir.InstAlloca
	for _, l := range k.Locals {
		if g.calls.Moved[l] {
			continue // allocated in its stage's function
		}
		a := kg.entry.NewAlloca(types.NewArray(uint64(l.Len()), storageType(l.DType)))
		a.SetName(kg.blocks.Name(l.Name))
		kg.bufs[l] = a
		allocas = append(allocas, a)
	}
	alignLocals(k, allocas)
	kg.cur = kg.newBlock("body")
	kg.stmts(k.Body)
	kg.cur.NewRet(nil)
	kg.entry.NewBr(f.Blocks[1])
	return nil
}

func (kg *kgen) newBlock(name string) *ir.Block {
	return kg.f.NewBlock(kg.blocks.Name(name))
}

func (kg *kgen) stmts(body []kir.Stmt) {
	for _, s := range body {
		kg.stmt(s)
	}
}

func (kg *kgen) stmt(s kir.Stmt) {
	switch s := s.(type) {
	case *kir.Let:
		kg.env[s.Var] = kg.expr(s.Value)
	case *kir.Assign:
		kg.env[s.Var] = kg.expr(s.Value)
	case *kir.Store:
		if ld, ok := s.Copied(); ok {
			src := kg.addr(ld.Buf, ld.Index)
			kg.cur.NewStore(kg.cur.NewLoad(storageType(ld.Buf.DType), src), kg.addr(s.Buf, s.Index))
			return
		}
		ptr := kg.addr(s.Buf, s.Index)
		kg.cur.NewStore(kg.toStorage(s.Buf.DType, kg.expr(s.Value)), ptr)
	case *kir.Atomic:
		kg.atomic(s)
	case *kir.If:
		kg.ifStmt(s)
	case *kir.For:
		kg.forStmt(s)
	case *kir.SyncThreads:
		kg.g.barrier(kg.cur)
	case *kir.GridSync:
		kg.cur.NewCall(kg.g.gridSync())
	case *kir.Signal:
		kg.signal(s)
	case *kir.Wait:
		kg.wait(s)
	case *kir.Prefetch:
		kg.prefetch(s)
	case *kir.MMA, *kir.LdMatrix, *kir.VecCopy, *kir.CopyAsync, *kir.CommitGroup, *kir.WaitGroup:
		kg.warpStmt(s)
	case *kir.Stage:
		// A block of its own, named after the stage, so that the IR shows
		// where each stage starts.
		b := kg.newBlock("stage_" + s.Name)
		kg.cur.NewBr(b)
		kg.cur = b
		if f := kg.g.calls.Call(s); f != nil {
			kg.callStage(s, f)
			return
		}
		kg.stmts(s.Body)
	default:
		panic(fmt.Sprintf("llvm: unknown statement %T", s))
	}
}

// addr returns the address of element index of buf.
func (kg *kgen) addr(buf *kir.Buffer, index kir.Expr) value.Value {
	idx := kg.cur.NewSExt(kg.expr(index), types.I64)
	if p, ok := kg.bufs[buf]; ok && buf.Space == kir.Shared { // a stage function's parameter
		return kg.cur.NewGetElementPtr(storageType(buf.DType), p, idx)
	}
	if sh, ok := kg.g.shared[buf]; ok {
		return kg.cur.NewGetElementPtr(sh.typ, sh.ptr, i64(0), idx)
	}
	base := kg.bufs[buf]
	if buf.Space == kir.Local {
		return kg.cur.NewGetElementPtr(base.(*ir.InstAlloca).ElemType, base, i64(0), idx)
	}
	return kg.cur.NewGetElementPtr(storageType(buf.DType), base, idx)
}

// toStorage converts a register value to storage type dt.
func (kg *kgen) toStorage(dt te.DType, v value.Value) value.Value {
	switch dt {
	case te.F16:
		return kg.cur.NewFPTrunc(v, types.Half)
	case te.BF16:
		return kg.cur.NewCall(kg.g.toBF16(), v)
	case te.Bool:
		return kg.cur.NewZExt(v, types.I8)
	}
	return v
}

// fromStorage converts a loaded element of storage type dt to a register
// value.
func (kg *kgen) fromStorage(dt te.DType, v value.Value) value.Value {
	switch dt {
	case te.F16:
		return kg.cur.NewFPExt(v, types.Float)
	case te.BF16:
		return kg.cur.NewCall(kg.g.fromBF16(), v)
	case te.Bool:
		return kg.cur.NewICmp(enum.IPredNE, v, constant.NewInt(types.I8, 0))
	}
	return v
}

func (kg *kgen) atomic(s *kir.Atomic) {
	ptr := kg.addr(s.Buf, s.Index)
	v := kg.expr(s.Value)
	if s.Op == kir.AtomicAdd {
		kg.cur.NewAtomicRMW(enum.AtomicOpFAdd, ptr, v, enum.AtomicOrderingMonotonic)
		return
	}
	// max and min by compare-and-swap on the element's bits; NaN wins.
	pt := ptr.Type().(*types.PointerType)
	ip := types.NewPointer(types.I32)
	ip.AddrSpace = pt.AddrSpace
	iptr := kg.cur.NewBitCast(ptr, ip)
	first := kg.cur.NewLoad(types.I32, iptr)
	first.Volatile = true
	pre := kg.cur
	loop, swap, done := kg.newBlock("atomic_loop"), kg.newBlock("atomic_swap"), kg.newBlock("atomic_done")
	pre.NewBr(loop)
	old := loop.NewPhi(ir.NewIncoming(first, pre))
	o := loop.NewBitCast(old, types.Float)
	// Keep the old value where it already wins: !(o < v) for max,
	// !(o > v) for min, unless v is NaN.
	pred := enum.FPredOLT
	if s.Op == kir.AtomicMin {
		pred = enum.FPredOGT
	}
	vNaN := loop.NewFCmp(enum.FPredUNO, v, v)
	better := loop.NewFCmp(pred, o, v)
	replace := loop.NewOr(vNaN, better)
	loop.NewCondBr(replace, swap, done)
	pair := swap.NewCmpXchg(iptr, old, swap.NewBitCast(v, types.I32), enum.AtomicOrderingMonotonic, enum.AtomicOrderingMonotonic)
	seen := swap.NewExtractValue(pair, 0)
	ok := swap.NewExtractValue(pair, 1)
	old.Incs = append(old.Incs, ir.NewIncoming(seen, swap))
	swap.NewCondBr(ok, done, loop)
	kg.cur = done
}

// assignedIn returns the variables that body assigns.
func assignedIn(body []kir.Stmt) []*kir.Var {
	var vs []*kir.Var
	seen := map[*kir.Var]bool{}
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		if a, ok := s.(*kir.Assign); ok && !seen[a.Var] {
			seen[a.Var] = true
			vs = append(vs, a.Var)
		}
		return true
	})
	return vs
}

func (kg *kgen) ifStmt(s *kir.If) {
	cond := kg.expr(s.Cond)
	then, els, join := kg.newBlock("then"), kg.newBlock("else"), kg.newBlock("endif")
	kg.cur.NewCondBr(cond, then, els)
	assigned := assignedIn(append(append([]kir.Stmt(nil), s.Then...), s.Else...))
	before := map[*kir.Var]value.Value{}
	for _, v := range assigned {
		before[v] = kg.env[v]
	}
	kg.cur = then
	kg.stmts(s.Then)
	thenEnd, thenVals := kg.cur, kg.values(assigned)
	for v, x := range before {
		kg.env[v] = x
	}
	kg.cur = els
	kg.stmts(s.Else)
	elseEnd, elseVals := kg.cur, kg.values(assigned)
	thenEnd.NewBr(join)
	elseEnd.NewBr(join)
	kg.cur = join
	for i, v := range assigned {
		if before[v] == nil {
			continue // defined inside a branch: out of scope here
		}
		if thenVals[i] == elseVals[i] {
			kg.env[v] = thenVals[i]
			continue
		}
		kg.env[v] = join.NewPhi(ir.NewIncoming(thenVals[i], thenEnd), ir.NewIncoming(elseVals[i], elseEnd))
	}
}

func (kg *kgen) values(vs []*kir.Var) []value.Value {
	out := make([]value.Value, len(vs))
	for i, v := range vs {
		out[i] = kg.env[v]
	}
	return out
}

func (kg *kgen) forStmt(s *kir.For) {
	lo := kg.expr(s.Lo)
	var init value.Value
	var step value.Value
	switch s.Kind {
	case kir.Serial, kir.Unrolled:
		init, step = lo, i32(int64(s.Step))
	case kir.GridStride:
		init = kg.cur.NewAdd(lo, kg.g.sreg(kg.cur, "ctaid.x"))
		step = kg.g.sreg(kg.cur, "nctaid.x")
	case kir.BlockStride:
		init = kg.cur.NewAdd(lo, kg.g.sreg(kg.cur, "tid.x"))
		step = kg.g.sreg(kg.cur, "ntid.x")
	case kir.ThreadStride:
		ntid := kg.g.sreg(kg.cur, "ntid.x")
		global := kg.cur.NewAdd(kg.cur.NewMul(kg.g.sreg(kg.cur, "ctaid.x"), ntid), kg.g.sreg(kg.cur, "tid.x"))
		init = kg.cur.NewAdd(lo, global)
		step = kg.cur.NewMul(kg.g.sreg(kg.cur, "nctaid.x"), ntid)
	}
	pre := kg.cur
	name := ident.Sanitize(s.Var.Name)
	head, body, exit := kg.newBlock(name+"_loop"), kg.newBlock(name+"_body"), kg.newBlock(name+"_exit")
	pre.NewBr(head)

	// Phis for the loop variable and for every variable of the enclosing
	// scope that the body assigns.
	iv := head.NewPhi(ir.NewIncoming(init, pre))
	kg.env[s.Var] = iv
	var carried []*kir.Var
	phis := map[*kir.Var]*ir.InstPhi{}
	for _, v := range assignedIn(s.Body) {
		if x := kg.env[v]; x != nil {
			p := head.NewPhi(ir.NewIncoming(x, pre))
			phis[v] = p
			kg.env[v] = p
			carried = append(carried, v)
		}
	}
	kg.cur = head
	hi := kg.expr(s.Hi) // may add blocks after head
	kg.cur.NewCondBr(kg.cur.NewICmp(enum.IPredSLT, iv, hi), body, exit)

	kg.cur = body
	kg.stmts(s.Body)
	next := kg.cur.NewAdd(iv, step)
	iv.Incs = append(iv.Incs, ir.NewIncoming(next, kg.cur))
	for _, v := range carried {
		phis[v].Incs = append(phis[v].Incs, ir.NewIncoming(kg.env[v], kg.cur))
	}
	kg.cur.NewBr(head)
	kg.cur = exit
	for _, v := range carried {
		kg.env[v] = phis[v]
	}
	delete(kg.env, s.Var)
}

// expr returns the value of e in the current block.
func (kg *kgen) expr(e kir.Expr) value.Value {
	b := kg.cur
	switch e := e.(type) {
	case *kir.Const:
		return constValue(e)
	case *kir.Var:
		v, ok := kg.env[e]
		if !ok {
			panic(fmt.Sprintf("llvm: variable %s used before its definition", e.Name))
		}
		return v
	case *kir.Special:
		return kg.g.sreg(b, map[kir.SpecialReg]string{kir.ThreadIdx: "tid.x", kir.BlockIdx: "ctaid.x",
			kir.BlockDim: "ntid.x", kir.GridDim: "nctaid.x"}[e.Reg])
	case *kir.Load:
		ptr := kg.addr(e.Buf, e.Index)
		return kg.fromStorage(e.Buf.DType, kg.cur.NewLoad(storageType(e.Buf.DType), ptr))
	case *kir.Unary:
		return kg.unary(e)
	case *kir.Binary:
		return kg.binary(e)
	case *kir.Select:
		return kg.selectExpr(e)
	case *kir.Cast:
		return kg.cast(e)
	case *kir.Shuffle:
		return kg.shuffle(e)
	case *kir.Bounded:
		return kg.bounded(e)
	}
	panic(fmt.Sprintf("llvm: unknown expression %T", e))
}

func constValue(c *kir.Const) value.Value {
	switch c.T {
	case te.Bool:
		return constant.NewBool(c.Value != 0)
	case te.I32, te.I64:
		return intConst(c.T, int64(c.Value))
	}
	return f32(float64(float32(c.Value)))
}

// mayFault reports whether evaluating e may fault or read out of bounds: it
// loads, or divides integers by a non-constant.
func mayFault(e kir.Expr) bool {
	fault := false
	kir.WalkExpr(e, func(e kir.Expr) bool {
		switch e := e.(type) {
		case *kir.Load:
			fault = true
		case *kir.Shuffle:
			// Not a fault, but a shuffle must run only in the lanes
			// that reach it: it is never speculated.
			fault = true
		case *kir.Bounded:
			// A reported index out of range must be one the program
			// reads, not one a speculated operand would have.
			fault = fault || e.Record != nil
		case *kir.Binary:
			if (e.Op == te.Div || e.Op == te.Mod) && e.X.Type() != te.F32 {
				if _, ok := e.Y.(*kir.Const); !ok {
					fault = true
				}
			}
		}
		return !fault
	})
	return fault
}

// bounded clamps a gather's run-time index into its dimension; with an
// error record, an index out of range also claims the record (cmpxchg of
// its flag from 0 to 1) and, if it won, writes the gather's site, the
// position read and the value to it.
func (kg *kgen) bounded(e *kir.Bounded) value.Value {
	x := kg.expr(e.X)
	lo := kg.cur.NewSelect(kg.cur.NewICmp(enum.IPredSLT, x, i32(0)), i32(0), x)
	n := i32(int64(e.N - 1))
	clamped := kg.cur.NewSelect(kg.cur.NewICmp(enum.IPredSGT, lo, n), n, lo)
	if e.Record == nil {
		return clamped
	}
	bad, write, join := kg.newBlock("bad_index"), kg.newBlock("bad_index_record"), kg.newBlock("bad_index_done")
	kg.cur.NewCondBr(kg.cur.NewICmp(enum.IPredULT, x, i32(int64(e.N))), join, bad)
	kg.cur = bad
	flag := kg.addr(e.Record, kir.I(kir.RecordFlag))
	pair := kg.cur.NewCmpXchg(flag, i32(0), i32(1), enum.AtomicOrderingMonotonic, enum.AtomicOrderingMonotonic)
	kg.cur.NewCondBr(kg.cur.NewExtractValue(pair, 1), write, join)
	kg.cur = write
	var at value.Value = i32(-1)
	if e.At != nil {
		at = kg.expr(e.At)
	}
	kg.cur.NewStore(i32(int64(e.Site)), kg.addr(e.Record, kir.I(kir.RecordSite)))
	kg.cur.NewStore(at, kg.addr(e.Record, kir.I(kir.RecordAt)))
	kg.cur.NewStore(x, kg.addr(e.Record, kir.I(kir.RecordValue)))
	kg.cur.NewBr(join)
	kg.cur = join
	return clamped
}

// selectExpr evaluates only the chosen operand when the other might fault,
// as kir requires; otherwise it uses a select instruction.
func (kg *kgen) selectExpr(e *kir.Select) value.Value {
	cond := kg.expr(e.Cond)
	if !mayFault(e.Then) && !mayFault(e.Else) {
		x, y := kg.expr(e.Then), kg.expr(e.Else)
		return kg.cur.NewSelect(cond, x, y)
	}
	then, els, join := kg.newBlock("sel_then"), kg.newBlock("sel_else"), kg.newBlock("sel_join")
	kg.cur.NewCondBr(cond, then, els)
	kg.cur = then
	x := kg.expr(e.Then)
	thenEnd := kg.cur
	thenEnd.NewBr(join)
	kg.cur = els
	y := kg.expr(e.Else)
	elseEnd := kg.cur
	elseEnd.NewBr(join)
	kg.cur = join
	return join.NewPhi(ir.NewIncoming(x, thenEnd), ir.NewIncoming(y, elseEnd))
}

func (kg *kgen) unary(e *kir.Unary) value.Value {
	x := kg.expr(e.X)
	b, g := kg.cur, kg.g
	t := e.X.Type()
	isInt := t == te.I32 || t == te.I64
	switch e.Op {
	case te.Neg:
		if isInt {
			return b.NewSub(intConst(t, 0), x)
		}
		return b.NewFNeg(x)
	case te.Not:
		return b.NewXor(x, constant.NewBool(true))
	case te.Abs:
		if isInt {
			neg := b.NewICmp(enum.IPredSLT, x, intConst(t, 0))
			return b.NewSelect(neg, b.NewSub(intConst(t, 0), x), x)
		}
		return b.NewCall(g.intrinsic("llvm.fabs.f32", types.Float, types.Float), x)
	case te.Exp:
		return b.NewCall(g.expf(), x)
	case te.Log:
		lg2 := b.NewCall(g.intrinsic("llvm.nvvm.lg2.approx.f", types.Float, types.Float), x)
		return b.NewFMul(lg2, f32(math.Ln2))
	case te.Sqrt:
		return b.NewCall(g.intrinsic("llvm.sqrt.f32", types.Float, types.Float), x)
	case te.Rsqrt:
		return b.NewCall(g.intrinsic("llvm.nvvm.rsqrt.approx.f", types.Float, types.Float), x)
	case te.Tanh:
		return b.NewCall(g.tanhf(), x)
	case te.Sigmoid:
		ex := b.NewCall(g.expf(), b.NewFNeg(x))
		return b.NewFDiv(f32(1), b.NewFAdd(f32(1), ex))
	case te.Erf:
		return b.NewCall(g.erff(), x)
	case te.RoundTF32:
		return b.NewCall(g.roundTF32(), x)
	case te.Sin:
		return b.NewCall(g.sinf(), x)
	case te.Cos:
		return b.NewCall(g.cosf(), x)
	}
	panic(fmt.Sprintf("llvm: unknown unary operation %v", e.Op))
}

func (kg *kgen) binary(e *kir.Binary) value.Value {
	x, y := kg.expr(e.X), kg.expr(e.Y)
	b, g := kg.cur, kg.g
	t := e.X.Type()
	if t == te.F32 {
		switch e.Op {
		case te.Add:
			return b.NewFAdd(x, y)
		case te.Sub:
			return b.NewFSub(x, y)
		case te.Mul:
			return b.NewFMul(x, y)
		case te.Div:
			return b.NewFDiv(x, y)
		case te.Mod:
			return b.NewCall(g.fmodf(), x, y)
		case te.Max:
			return b.NewCall(g.intrinsic("llvm.maxnum.f32", types.Float, types.Float, types.Float), x, y)
		case te.Min:
			return b.NewCall(g.intrinsic("llvm.minnum.f32", types.Float, types.Float, types.Float), x, y)
		case te.Pow:
			return b.NewCall(g.powf(), x, y)
		case te.Lt:
			return b.NewFCmp(enum.FPredOLT, x, y)
		case te.Le:
			return b.NewFCmp(enum.FPredOLE, x, y)
		case te.Gt:
			return b.NewFCmp(enum.FPredOGT, x, y)
		case te.Ge:
			return b.NewFCmp(enum.FPredOGE, x, y)
		case te.Eq:
			return b.NewFCmp(enum.FPredOEQ, x, y)
		case te.Ne:
			return b.NewFCmp(enum.FPredUNE, x, y)
		}
	}
	switch e.Op {
	case te.Add:
		return b.NewAdd(x, y)
	case te.Sub:
		return b.NewSub(x, y)
	case te.Mul:
		return b.NewMul(x, y)
	case te.Div:
		if kg.facts.Truncating(e.X, e.Y) {
			return b.NewUDiv(x, y)
		}
		return b.NewCall(g.floorDiv(t), x, y)
	case te.Mod:
		if kg.facts.Truncating(e.X, e.Y) {
			return b.NewURem(x, y)
		}
		return b.NewCall(g.floorMod(t), x, y)
	case te.Max:
		return b.NewSelect(b.NewICmp(enum.IPredSGT, x, y), x, y)
	case te.Min:
		return b.NewSelect(b.NewICmp(enum.IPredSLT, x, y), x, y)
	case te.Lt:
		return b.NewICmp(enum.IPredSLT, x, y)
	case te.Le:
		return b.NewICmp(enum.IPredSLE, x, y)
	case te.Gt:
		return b.NewICmp(enum.IPredSGT, x, y)
	case te.Ge:
		return b.NewICmp(enum.IPredSGE, x, y)
	case te.Eq:
		return b.NewICmp(enum.IPredEQ, x, y)
	case te.Ne:
		return b.NewICmp(enum.IPredNE, x, y)
	case te.And:
		return b.NewAnd(x, y)
	case te.Or:
		return b.NewOr(x, y)
	}
	panic(fmt.Sprintf("llvm: binary operation %v on %v", e.Op, t))
}

// shuffle calls llvm.nvvm.shfl.sync.bfly or .down, .f32 or .i32. Its
// last operand packs the segment mask and the clamp lane of PTX's shfl
// (c = ((32 - width) << 8) | 31), which is how CUDA's width is encoded.
func (kg *kgen) shuffle(e *kir.Shuffle) value.Value {
	mask, x := kg.expr(e.Mask), kg.expr(e.X)
	t, suffix := types.Type(types.Float), "f32"
	if e.X.Type() == te.I32 {
		t, suffix = types.I32, "i32"
	}
	mode := "bfly"
	if e.Mode == kir.ShuffleDown {
		mode = "down"
	}
	fn := kg.g.intrinsic("llvm.nvvm.shfl.sync."+mode+"."+suffix, t, types.I32, t, types.I32, types.I32)
	c := (kir.WarpSize-e.Width)<<8 | (kir.WarpSize - 1)
	return kg.cur.NewCall(fn, mask, x, i32(int64(e.Offset)), i32(int64(c)))
}

func (kg *kgen) cast(e *kir.Cast) value.Value {
	x := kg.expr(e.X)
	b, g := kg.cur, kg.g
	from := e.X.Type()
	switch {
	case e.To == from:
		return x
	case e.To == te.Bool && from == te.F32:
		return b.NewFCmp(enum.FPredUNE, x, f32(0))
	case e.To == te.Bool:
		return b.NewICmp(enum.IPredNE, x, i32(0))
	case e.To == te.I32 && from == te.F32:
		// cvt.rzi.s32.f32: truncates, saturates, and gives 0 for NaN.
		return b.NewCall(g.intrinsic("llvm.nvvm.f2i.rz", types.I32, types.Float), x)
	case e.To == te.I32 && from == te.I64:
		// Saturated at the i32 limits, as the reference stores it.
		lo, hi := i64(math.MinInt32), i64(math.MaxInt32)
		x = b.NewSelect(b.NewICmp(enum.IPredSLT, x, lo), lo, x)
		x = b.NewSelect(b.NewICmp(enum.IPredSGT, x, hi), hi, x)
		return b.NewTrunc(x, types.I32)
	case e.To == te.I64: // from i32
		return b.NewSExt(x, types.I64)
	case e.To == te.I32: // from bool
		return b.NewZExt(x, types.I32)
	case e.To == te.F32 && (from == te.I32 || from == te.I64):
		return b.NewSIToFP(x, types.Float)
	case e.To == te.F32: // from bool
		return b.NewUIToFP(x, types.Float)
	}
	if from != te.F32 {
		x = kg.cast(&kir.Cast{To: te.F32, X: e.X})
	}
	switch e.To {
	case te.F16:
		return kg.cur.NewFPExt(kg.cur.NewFPTrunc(x, types.Half), types.Float)
	case te.BF16:
		return kg.cur.NewCall(g.fromBF16(), kg.cur.NewCall(g.toBF16(), x))
	}
	panic(fmt.Sprintf("llvm: cast from %v to %v", from, e.To))
}

// stageFunc emits the internal, never inlined function that computes the
// stages of f: its parameters are pointers to f's buffers, global or shared.
func (g *gen) stageFunc(f *dedup.StageFunc) {
	pscope := ident.NewScope()
	params := make([]*ir.Param, len(f.Params))
	for i, b := range f.Params {
		t := types.NewPointer(storageType(b.DType))
		t.AddrSpace = globalSpace
		if b.Space == kir.Shared {
			t.AddrSpace = sharedSpace
		}
		params[i] = ir.NewParam(pscope.Name(b.Name), t)
	}
	fn := g.mod.NewFunc(g.scope.Name("s_"+f.Stages[0].Name), types.Void, params...)
	fn.Linkage = enum.LinkageInternal
	fn.FuncAttrs = append(fn.FuncAttrs, enum.FuncAttrNoInline)
	g.stageFuncs[f] = fn
	kg := &kgen{g: g, k: &kir.Kernel{Body: f.Body}, f: fn, blocks: ident.NewScope(), bufs: map[*kir.Buffer]value.Value{},
		env: map[*kir.Var]value.Value{}, facts: sign.Analyze(f.Body)}
	for i, b := range f.Params {
		kg.bufs[b] = params[i]
	}
	kg.entry = fn.NewBlock("entry")
	var allocas []*ir.InstAlloca
	for _, l := range f.Locals {
		a := kg.entry.NewAlloca(types.NewArray(uint64(l.Len()), storageType(l.DType)))
		a.SetName(kg.blocks.Name(l.Name))
		kg.bufs[l] = a
		allocas = append(allocas, a)
	}
	alignLocals(kg.k, allocas)
	kg.cur = kg.newBlock("body")
	kg.stmts(f.Body)
	kg.cur.NewRet(nil)
	kg.entry.NewBr(fn.Blocks[1])
}

// callStage calls the function of f for stage s, with s's buffers rebased.
func (kg *kgen) callStage(s *kir.Stage, f *dedup.StageFunc) {
	args := make([]value.Value, len(f.Params))
	for i, b := range kg.g.calls.Args[s] {
		var p value.Value
		if b.Space == kir.Shared {
			sh := kg.g.shared[b]
			p = kg.cur.NewGetElementPtr(sh.typ, sh.ptr, i64(0), i64(0))
		} else {
			p = kg.bufs[b]
		}
		if off := kg.g.calls.Bases[s][i]; off != 0 {
			p = kg.cur.NewGetElementPtr(storageType(b.DType), p, i64(int64(off)))
		}
		args[i] = p
	}
	kg.cur.NewCall(kg.g.stageFuncs[f], args...)
}

// launchBounds annotates kernel f (of k) as CUDA's __launch_bounds__ does:
// at most k.Block threads per block (PTX's .maxntid) and, where the plan
// counts on k.BlocksPerSM blocks per SM, that many (.minnctapersm), so that
// ptxas keeps each thread's registers within what they leave it. The
// annotations are operands of the module's !nvvm.annotations.
func (g *gen) launchBounds(f *ir.Func, k *kir.Kernel) {
	fields := []metadata.Field{f, &metadata.String{Value: "maxntidx"}, constant.NewInt(types.I32, int64(k.Block))}
	if k.BlocksPerSM > 0 {
		fields = append(fields, &metadata.String{Value: "minctasm"}, constant.NewInt(types.I32, int64(k.BlocksPerSM)))
	}
	node := &metadata.Tuple{MetadataID: metadata.MetadataID(len(g.mod.MetadataDefs)), Fields: fields}
	g.mod.MetadataDefs = append(g.mod.MetadataDefs, node)
	named := g.mod.NamedMetadataDefs["nvvm.annotations"]
	if named == nil {
		named = &metadata.NamedDef{Name: "nvvm.annotations"}
		g.mod.NamedMetadataDefs["nvvm.annotations"] = named
	}
	named.Nodes = append(named.Nodes, node)
}

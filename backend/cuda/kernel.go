package cuda

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"tec/backend/internal/ident"
	"tec/backend/internal/sign"
	"tec/backend/kir"
	"tec/gpu"
	"tec/te"
)

// cType returns the C type that stores elements of dt.
func cType(dt te.DType) string {
	switch dt {
	case te.F16:
		return "__half"
	case te.BF16:
		return "__nv_bfloat16"
	case te.I32:
		return "int"
	case te.I64:
		return "long long"
	case te.Bool:
		return "bool"
	}
	return "float"
}

// kernelWriter writes one __global__ function.
type kernelWriter struct {
	b     *strings.Builder
	k     *kir.Kernel
	names *names
	vars  map[*kir.Var]string
	scope *ident.Scope
	facts *sign.Facts
	// dynamic is set when the kernel's shared arrays exceed the static
	// limit and are carved out of dynamic shared memory.
	dynamic bool
	// live holds the variables whose values are read; Lets and Assigns of
	// the others are left out.
	live map[*kir.Var]bool
	// clocked is set when writing a kernel, whose grid syncs end the stage
	// clock's segments (clock.go), and marks counts the marks written.
	clocked bool
	marks   int
}

// liveVars returns the variables of body whose values something other than
// the definition of a dead variable reads, and those whose definitions
// report a gather index out of range (kir.Bounded with a record), the one
// side effect an expression has; leaving out the other dead definitions
// changes nothing.
func liveVars(body []kir.Stmt) map[*kir.Var]bool {
	live := map[*kir.Var]bool{}
	for changed := true; changed; {
		changed = false
		kir.WalkStmts(body, func(s kir.Stmt) bool {
			switch d := s.(type) {
			case *kir.Let:
				if !live[d.Var] && !reports(d.Value) {
					return true
				}
				changed = changed || !live[d.Var]
				live[d.Var] = true
			case *kir.Assign:
				if !live[d.Var] && !reports(d.Value) {
					return true
				}
				changed = changed || !live[d.Var]
				live[d.Var] = true
			}
			kir.Exprs(s, func(e kir.Expr) {
				kir.WalkExpr(e, func(e kir.Expr) bool {
					if v, ok := e.(*kir.Var); ok && !live[v] {
						live[v] = true
						changed = true
					}
					return true
				})
			})
			return true
		})
	}
	return live
}

// reports reports whether evaluating e may write the error record.
func reports(e kir.Expr) bool {
	found := false
	kir.WalkExpr(e, func(x kir.Expr) bool {
		if b, ok := x.(*kir.Bounded); ok && b.Record != nil {
			found = true
		}
		return !found
	})
	return found
}

// writtenBy returns the buffers that body stores to or updates.
func writtenBy(body []kir.Stmt) map[*kir.Buffer]bool {
	w := map[*kir.Buffer]bool{}
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		kir.Accesses(s, func(b *kir.Buffer, write bool) {
			if write {
				w[b] = true
			}
		})
		kir.Exprs(s, func(e kir.Expr) {
			kir.WalkExpr(e, func(x kir.Expr) bool {
				if b, ok := x.(*kir.Bounded); ok && b.Record != nil {
					w[b.Record] = true // reported to
				}
				return true
			})
		})
		return true
	})
	return w
}

// dynamicBytes returns the dynamic shared memory k's arrays take when each
// starts at a multiple of 16 bytes.
func dynamicBytes(k *kir.Kernel) int64 {
	var off int64
	for _, s := range k.Shared {
		off = (off+15)&^15 + s.Bytes()
	}
	return off
}

// usesDynamicShared reports whether k's shared arrays must be allocated at
// launch.
func usesDynamicShared(k *kir.Kernel) bool { return gpu.DynamicShared(k.SharedBytes()) }

// writeKernel writes kernel k, which also serves the kernels named in also.
func writeKernel(b *strings.Builder, k *kir.Kernel, n *names, also []string) {
	w := &kernelWriter{b: b, k: k, names: n, vars: map[*kir.Var]string{}, scope: n.module.Child(),
		facts: sign.Analyze(k.Body), dynamic: usesDynamicShared(k), live: liveVars(k.Body)}
	w.header(also)
	if k.HasGridSync() {
		w.line(1, "cg::grid_group grid = cg::this_grid();")
	}
	if w.dynamic {
		w.line(1, "extern __shared__ __align__(16) unsigned char tec_dynamic_smem[];")
	}
	// Arrays that 16-byte accesses or fragments use must be aligned.
	align := ""
	if usesWarpLevel(k) {
		align = "__align__(16) "
	}
	var off int64
	for _, s := range k.Shared {
		name := w.scope.Name(safe(s.Name))
		n.local[s] = name
		if w.dynamic {
			off = (off + 15) &^ 15
			w.line(1, "%s* %s = reinterpret_cast<%s*>(tec_dynamic_smem + %d);  // %s", cType(s.DType), name, cType(s.DType), off, shapeComment(s))
			off += s.Bytes()
			continue
		}
		w.line(1, "__shared__ %s%s %s[%d];  // %s", align, cType(s.DType), name, s.Len(), shapeComment(s))
	}
	for _, l := range k.Locals {
		if n.stages != nil && n.stages.Moved[l] {
			continue // declared in its stage's function
		}
		name := w.scope.Name(safe(l.Name))
		n.local[l] = name
		w.line(1, "%s%s %s[%d];  // %s, per thread", align, cType(l.DType), name, l.Len(), shapeComment(l))
	}
	w.clocked = true
	w.line(1, "TEC_CLOCK_START();")
	w.stmts(k.Body, 1)
	w.line(1, "TEC_CLOCK_END();")
	b.WriteString("}\n")
}

func shapeComment(b *kir.Buffer) string {
	dims := make([]string, len(b.Shape))
	for i, d := range b.Shape {
		dims[i] = strconv.Itoa(d)
	}
	return b.Name + ": " + b.DType.String() + "[" + strings.Join(dims, ", ") + "]"
}

// header writes the comment and signature of the kernel.
func (w *kernelWriter) header(also []string) {
	k := w.k
	for _, line := range strings.Split(k.Doc, "\n") {
		if line != "" {
			w.line(0, "// %s", line)
		}
	}
	grid := fmt.Sprintf("%d block%s", k.Grid.Blocks, plural(k.Grid.Blocks))
	if k.Grid.Resident {
		grid = "all resident blocks (cooperative launch)"
		if k.Grid.Blocks > 0 {
			grid = fmt.Sprintf("all resident blocks, at most %d (cooperative launch)", k.Grid.Blocks)
		}
	}
	w.line(0, "// Launch: %s of %d threads, %d B shared memory.", grid, k.Block, k.SharedBytes())
	if len(also) > 0 {
		const show = 4
		list := strings.Join(also[:min(show, len(also))], ", ")
		if len(also) > show {
			list += fmt.Sprintf(" and %d more", len(also)-show)
		}
		w.line(0, "// The same code computes %s, on other buffers.", list)
	}
	written := writtenBy(k.Body)
	// Temporaries that share workspace bytes with another of the kernel's
	// (in other grid epochs) may alias: neither restrict nor const.
	aliased := kir.Overlapping(k, w.names.offsets)
	constness := func(b *kir.Buffer) string {
		if written[b] || aliased[b] {
			return ""
		}
		return "const "
	}
	restrict := func(b *kir.Buffer) string {
		if aliased[b] {
			return ""
		}
		return " __restrict__"
	}
	var params []string
	args, ws := w.names.mod.KernelArgs(k)
	for _, p := range args {
		params = append(params, fmt.Sprintf("%s%s*%s %s", constness(p), cType(p.DType), restrict(p), w.names.buf(p)))
	}
	if ws {
		params = append(params, "unsigned char* __restrict__ ws")
	}
	if k.BlocksPerSM > 0 {
		w.line(0, "static __global__ void __launch_bounds__(%d, %d)", k.Block, k.BlocksPerSM)
	} else {
		w.line(0, "static __global__ void __launch_bounds__(%d)", k.Block)
	}
	w.line(0, "%s(%s) {", w.names.kernel[k], strings.Join(params, ", "))
	if !ws {
		return
	}
	w.line(1, "// The temporaries, at fixed offsets in the workspace.")
	for _, p := range k.Params {
		off, ok := w.names.offsets[p]
		if !ok {
			continue
		}
		t := cType(p.DType)
		w.line(1, "%s%s*%s %s = reinterpret_cast<%s%s*>(ws + %s);  // %s at byte %d",
			constness(p), t, restrict(p), w.names.buf(p), constness(p), t, offset(off), shapeComment(p), off)
	}
}

func (w *kernelWriter) line(depth int, format string, args ...any) {
	if format == "" {
		w.b.WriteByte('\n')
		return
	}
	w.b.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(w.b, format, args...)
	w.b.WriteByte('\n')
}

func (w *kernelWriter) varName(v *kir.Var) string {
	if n, ok := w.vars[v]; ok {
		return n
	}
	n := w.scope.Name(safe(v.Name))
	w.vars[v] = n
	return n
}

func (w *kernelWriter) stmts(body []kir.Stmt, depth int) {
	for _, s := range body {
		w.stmt(s, depth)
	}
}

func (w *kernelWriter) stmt(s kir.Stmt, depth int) {
	switch s := s.(type) {
	case *kir.Let:
		if w.live[s.Var] {
			w.line(depth, "%s %s = %s;", cType(s.Var.T), w.varName(s.Var), w.expr(s.Value))
		}
	case *kir.Assign:
		if w.live[s.Var] {
			w.line(depth, "%s = %s;", w.varName(s.Var), w.expr(s.Value))
		}
	case *kir.Store:
		w.line(depth, "%s[%s] = %s;", w.names.buf(s.Buf), w.expr(s.Index), w.store(s))
	case *kir.Atomic:
		ref := fmt.Sprintf("&%s[%s]", w.names.buf(s.Buf), w.expr(s.Index))
		switch s.Op {
		case kir.AtomicAdd:
			w.line(depth, "atomicAdd(%s, %s);", ref, w.expr(s.Value))
		case kir.AtomicMax:
			w.names.used["tec_atomic_max"] = true
			w.line(depth, "tec_atomic_max(%s, %s);", ref, w.expr(s.Value))
		case kir.AtomicMin:
			w.names.used["tec_atomic_min"] = true
			w.line(depth, "tec_atomic_min(%s, %s);", ref, w.expr(s.Value))
		}
	case *kir.If:
		w.line(depth, "if (%s) {", w.expr(s.Cond))
		w.stmts(s.Then, depth+1)
		if len(s.Else) > 0 {
			w.line(depth, "} else {")
			w.stmts(s.Else, depth+1)
		}
		w.line(depth, "}")
	case *kir.For:
		w.forStmt(s, depth)
	case *kir.SyncThreads:
		w.line(depth, "__syncthreads();")
	case *kir.MMA, *kir.LdMatrix, *kir.VecCopy, *kir.CopyAsync, *kir.CommitGroup, *kir.WaitGroup:
		w.warpStmt(s, depth)
	case *kir.GridSync:
		w.line(depth, "grid.sync();")
		if w.clocked {
			w.line(depth, "TEC_CLOCK_MARK(%d);", w.marks)
			w.marks++
		}
	case *kir.Signal:
		w.names.used["tec_signal"] = true
		w.line(depth, "__syncthreads();")
		w.line(depth, "if (threadIdx.x == 0) tec_signal(&%s[%s]);", w.names.buf(s.Counter), w.expr(s.Index))
	case *kir.Prefetch:
		w.line(depth, `asm volatile("prefetch.global.L2 [%%0];" :: "l"(&%s[%s]));`, w.names.buf(s.Buf), w.expr(s.Index))
	case *kir.Wait:
		w.names.used["tec_wait"] = true
		w.line(depth, "if (threadIdx.x == 0) tec_wait(&%s[%s], %s);", w.names.buf(s.Counter), w.expr(s.Index), w.expr(s.Target))
		w.line(depth, "__syncthreads();")
	case *kir.Stage:
		// Variables are unique within a kernel, so a stage needs no scope
		// of its own.
		if s.Span.IsValid() {
			w.line(depth, "// Stage %s, defined at %s.", s.Name, s.Span)
		} else {
			w.line(depth, "// Stage %s.", s.Name)
		}
		if f := w.names.stages.call(s); f != nil {
			args := make([]string, len(f.Params))
			for i, b := range w.names.stages.Args[s] {
				args[i] = w.names.buf(b)
				if off := w.names.stages.Bases[s][i]; off != 0 {
					args[i] += " + " + strconv.Itoa(off)
				}
			}
			w.line(depth, "%s(%s);", f.name, strings.Join(args, ", "))
			return
		}
		w.stmts(s.Body, depth)
	default:
		panic(fmt.Sprintf("cuda: unknown statement %T", s))
	}
}

func (w *kernelWriter) forStmt(s *kir.For, depth int) {
	v := w.varName(s.Var)
	lo := w.expr(s.Lo)
	var init, step string
	plus := func(x string) string {
		if lo == "0" {
			return x
		}
		return lo + " + " + x
	}
	switch s.Kind {
	case kir.Serial, kir.Unrolled:
		init, step = lo, fmt.Sprintf("%s += %d", v, s.Step)
		if s.Step == 1 {
			step = "++" + v
		}
		switch {
		case s.Kind == kir.Unrolled:
			w.line(depth, "#pragma unroll")
		case s.Unroll > 0:
			w.line(depth, "#pragma unroll %d", s.Unroll)
		}
	case kir.GridStride:
		init, step = plus("blockIdx.x"), v+" += gridDim.x"
	case kir.BlockStride:
		init, step = plus("threadIdx.x"), v+" += blockDim.x"
	case kir.ThreadStride:
		init, step = plus("blockIdx.x * blockDim.x + threadIdx.x"), v+" += gridDim.x * blockDim.x"
	}
	w.line(depth, "for (int %s = %s; %s < %s; %s) {", v, init, v, w.expr(s.Hi), step)
	w.stmts(s.Body, depth+1)
	w.line(depth, "}")
}

// store returns the C expression of the value s stores, in its buffer's
// storage type: the element itself where s copies one (kir.Store.Copied).
func (w *kernelWriter) store(s *kir.Store) string {
	if ld, ok := s.Copied(); ok {
		return w.names.buf(ld.Buf) + "[" + w.expr(ld.Index) + "]"
	}
	value := s.Value
	switch s.Buf.DType {
	case te.F16:
		return "__float2half_rn(" + w.expr(value) + ")"
	case te.BF16:
		return "__float2bfloat16_rn(" + w.expr(value) + ")"
	}
	return w.expr(value)
}

// C operator precedences, loosest first.
const (
	precCond = iota + 1
	precOr
	precAnd
	precEq
	precRel
	precAdd
	precMul
	precUnary
	precAtom
)

func (w *kernelWriter) expr(e kir.Expr) string {
	var b strings.Builder
	w.exprPrec(&b, e, 0)
	return b.String()
}

// exprPrec writes e, in parentheses if its precedence is below min.
func (w *kernelWriter) exprPrec(b *strings.Builder, e kir.Expr, min int) {
	paren := func(prec int, f func()) {
		if prec < min {
			b.WriteByte('(')
		}
		f()
		if prec < min {
			b.WriteByte(')')
		}
	}
	switch e := e.(type) {
	case *kir.Const:
		s := constant(e)
		if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "(") {
			paren(precUnary, func() { b.WriteString(s) })
		} else {
			b.WriteString(s)
		}
	case *kir.Var:
		b.WriteString(w.varName(e))
	case *kir.Special:
		b.WriteString(e.Reg.String())
	case *kir.Load:
		load := func() {
			b.WriteString(w.names.buf(e.Buf))
			b.WriteByte('[')
			w.exprPrec(b, e.Index, 0)
			b.WriteByte(']')
		}
		switch e.Buf.DType {
		case te.F16:
			b.WriteString("__half2float(")
			load()
			b.WriteByte(')')
		case te.BF16:
			b.WriteString("__bfloat162float(")
			load()
			b.WriteByte(')')
		default:
			load()
		}
	case *kir.Unary:
		w.unary(b, e, paren)
	case *kir.Binary:
		w.binary(b, e, paren)
	case *kir.Select:
		paren(precCond, func() {
			w.exprPrec(b, e.Cond, precOr)
			b.WriteString(" ? ")
			w.exprPrec(b, e.Then, precOr)
			b.WriteString(" : ")
			w.exprPrec(b, e.Else, precCond)
		})
	case *kir.Cast:
		if e.To == e.X.Type() {
			w.exprPrec(b, e.X, min)
			return
		}
		w.cast(b, e, paren)
	case *kir.Shuffle:
		fn := "__shfl_xor_sync("
		if e.Mode == kir.ShuffleDown {
			fn = "__shfl_down_sync("
		}
		b.WriteString(fn)
		if c, ok := e.Mask.(*kir.Const); ok {
			fmt.Fprintf(b, "0x%08xu", uint32(int32(c.Value)))
		} else {
			b.WriteString("(unsigned)(")
			w.exprPrec(b, e.Mask, 0)
			b.WriteByte(')')
		}
		b.WriteString(", ")
		w.exprPrec(b, e.X, 0)
		fmt.Fprintf(b, ", %d, %d)", e.Offset, e.Width)
	case *kir.Bounded:
		// A gather's run-time index, clamped into its dimension, and
		// reported if it was out of range.
		if e.Record == nil {
			b.WriteString("min(max(")
			w.exprPrec(b, e.X, 0)
			fmt.Fprintf(b, ", 0), %d)", e.N-1)
			break
		}
		w.names.used["tec_bounded"] = true
		b.WriteString("tec_bounded(")
		w.exprPrec(b, e.X, 0)
		fmt.Fprintf(b, ", %d, %s, %d, ", e.N, w.names.buf(e.Record), e.Site)
		if e.At == nil {
			b.WriteString("-1")
		} else {
			w.exprPrec(b, e.At, 0)
		}
		b.WriteByte(')')
	default:
		panic(fmt.Sprintf("cuda: unknown expression %T", e))
	}
}

func (w *kernelWriter) call(b *strings.Builder, fn string, args ...kir.Expr) {
	if strings.HasPrefix(fn, "tec_") {
		w.names.used[fn] = true
	}
	b.WriteString(fn)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		w.exprPrec(b, a, 0)
	}
	b.WriteByte(')')
}

func (w *kernelWriter) unary(b *strings.Builder, e *kir.Unary, paren func(int, func())) {
	switch e.Op {
	case te.Neg, te.Not:
		op := "-"
		if e.Op == te.Not {
			op = "!"
		}
		paren(precUnary, func() {
			b.WriteString(op)
			w.exprPrec(b, e.X, precUnary)
		})
		return
	case te.Abs:
		switch e.X.Type() {
		case te.I32:
			w.call(b, "abs", e.X)
			return
		case te.I64:
			w.call(b, "llabs", e.X)
			return
		}
		w.call(b, "fabsf", e.X)
		return
	}
	fn := map[te.UnaryOp]string{te.Exp: "expf", te.Log: "logf", te.Sqrt: "sqrtf", te.Rsqrt: "rsqrtf",
		te.Tanh: "tanhf", te.Sigmoid: "tec_sigmoid", te.Erf: "erff", te.RoundTF32: "tec_round_tf32",
		te.Sin: "sinf", te.Cos: "cosf"}[e.Op]
	if fn == "" {
		panic(fmt.Sprintf("cuda: unknown unary operation %v", e.Op))
	}
	w.call(b, fn, e.X)
}

func (w *kernelWriter) binary(b *strings.Builder, e *kir.Binary, paren func(int, func())) {
	isInt := e.X.Type() == te.I32 || e.X.Type() == te.I64
	suffix := "" // of the flooring helpers
	if e.X.Type() == te.I64 {
		suffix = "64"
	}
	infix := func(prec int, op string) {
		paren(prec, func() {
			w.exprPrec(b, e.X, prec)
			b.WriteString(" " + op + " ")
			w.exprPrec(b, e.Y, prec+1)
		})
	}
	switch e.Op {
	case te.Add:
		infix(precAdd, "+")
	case te.Sub:
		infix(precAdd, "-")
	case te.Mul:
		infix(precMul, "*")
	case te.Div:
		switch {
		case !isInt:
			infix(precMul, "/")
		case w.facts.Truncating(e.X, e.Y):
			infix(precMul, "/")
		default:
			w.call(b, "tec_floordiv"+suffix, e.X, e.Y)
		}
	case te.Mod:
		switch {
		case !isInt:
			w.call(b, "tec_fmod", e.X, e.Y)
		case w.facts.Truncating(e.X, e.Y):
			infix(precMul, "%")
		default:
			w.call(b, "tec_floormod"+suffix, e.X, e.Y)
		}
	case te.Max:
		if isInt {
			w.call(b, "max", e.X, e.Y)
		} else {
			w.call(b, "fmaxf", e.X, e.Y)
		}
	case te.Min:
		if isInt {
			w.call(b, "min", e.X, e.Y)
		} else {
			w.call(b, "fminf", e.X, e.Y)
		}
	case te.Pow:
		w.call(b, "powf", e.X, e.Y)
	case te.Lt, te.Le, te.Gt, te.Ge:
		infix(precRel, e.Op.String())
	case te.Eq, te.Ne:
		infix(precEq, e.Op.String())
	case te.And:
		infix(precAnd, "&&")
	case te.Or:
		infix(precOr, "||")
	default:
		panic(fmt.Sprintf("cuda: unknown binary operation %v", e.Op))
	}
}

func (w *kernelWriter) cast(b *strings.Builder, e *kir.Cast, paren func(int, func())) {
	from := e.X.Type()
	switch {
	case e.To == te.Bool:
		paren(precEq, func() {
			w.exprPrec(b, e.X, precEq)
			if from == te.F32 {
				b.WriteString(" != 0.0f")
			} else {
				b.WriteString(" != 0")
			}
		})
	case e.To == te.I32 && from == te.F32:
		w.call(b, "__float2int_rz", e.X)
	case e.To == te.I32 && from == te.I64:
		w.call(b, "tec_narrow", e.X)
	case e.To == te.I32: // from bool
		paren(precUnary, func() {
			b.WriteString("(int)")
			w.exprPrec(b, e.X, precUnary)
		})
	case e.To == te.I64: // from i32
		paren(precUnary, func() {
			b.WriteString("(long long)")
			w.exprPrec(b, e.X, precUnary)
		})
	case e.To == te.F32:
		paren(precUnary, func() {
			b.WriteString("(float)")
			w.exprPrec(b, e.X, precUnary)
		})
	case e.To == te.F16:
		w.call(b, "tec_round_f16", castToF32(e.X))
	case e.To == te.BF16:
		w.call(b, "tec_round_bf16", castToF32(e.X))
	default:
		panic(fmt.Sprintf("cuda: cast from %v to %v", from, e.To))
	}
}

// castToF32 returns x as an f32 expression.
func castToF32(x kir.Expr) kir.Expr {
	if x.Type() == te.F32 {
		return x
	}
	return &kir.Cast{To: te.F32, X: x}
}

// constant formats a constant as a C literal: "3", "true", "0.5f",
// "INFINITY".
func constant(c *kir.Const) string {
	switch c.T {
	case te.Bool:
		if c.Value != 0 {
			return "true"
		}
		return "false"
	case te.I32:
		if c.Value == math.MinInt32 {
			return "(-2147483647 - 1)"
		}
		return strconv.FormatInt(int64(c.Value), 10)
	case te.I64:
		if c.Value == math.MinInt64 {
			return "(-9223372036854775807LL - 1)"
		}
		return strconv.FormatInt(int64(c.Value), 10) + "LL"
	}
	v := c.Value
	switch {
	case math.IsInf(v, 1):
		return "INFINITY"
	case math.IsInf(v, -1):
		return "-INFINITY"
	case math.IsNaN(v):
		return "NAN"
	}
	s := strconv.FormatFloat(float64(float32(v)), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

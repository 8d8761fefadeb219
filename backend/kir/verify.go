package kir

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"tec/gpu"
	"tec/te"
)

// MaxBlockThreads is the largest block CUDA allows.
const MaxBlockThreads = 1024

// maxErrors bounds the number of problems Verify reports.
const maxErrors = 20

// Verify checks that m is well formed and returns every problem found (up to
// a limit), joined, or nil. It checks that
//
//   - buffer and kernel names are unique, global buffers are in global
//     memory, kernel parameters are buffers of the module, shared and local
//     arrays are in their spaces;
//   - launch shapes are valid: 1 to MaxBlockThreads threads per block, at
//     least one block in a fixed grid;
//   - every buffer a kernel accesses is declared in it (as a parameter, a
//     shared or a local array), no kernel writes an input or a param, and
//     constant indexes are in bounds, under a Select too: a lowering drops
//     a branch that cannot run (its condition decided by the ranges) rather
//     than emit a load that would be out of bounds if it did;
//   - every variable is defined before use, in scope, and only once; only
//     Let-defined variables are assigned;
//   - every expression is well typed, and stores and atomics store values of
//     the buffer's type (atomics: f32 in global or shared memory);
//   - the warp-level and 16-byte statements (MMA, LdMatrix, VecCopy,
//     CopyAsync, WaitGroup) have fragments of the right arrays, types and
//     lengths in bounds, copies of one type between the right spaces, and
//     no constant index of a 16-byte access that is misaligned (which
//     indexes the simulator checks at run time, as it checks that a warp
//     executes an MMA or LdMatrix with all its lanes);
//   - what the module uses, the architecture of its GPU has: no
//     cp.async, m16n8k16 MMA, bf16 or tf32 MMA or bf16 buffer on sm_75;
//   - SyncThreads occurs only under control flow uniform across each block,
//     and GridSync only under control flow uniform across the grid, and only
//     in a kernel with an all-resident grid;
//   - a counter Signal or Wait (counter.go) has an i32 global temporary as
//     its counter, an index in bounds where constant, block-uniform
//     operands and control flow, and a Wait is only in a kernel with an
//     all-resident grid.
//
// Messages name the kernel and stage and quote the offending statement.
func Verify(m *Module) error {
	v := &verifier{}
	v.module(m)
	return errors.Join(v.errs...)
}

type verifier struct {
	errs []error
	full bool
	m    *Module

	// per kernel
	k        *Kernel
	stage    string
	declared map[*Buffer]bool
	vars     map[*Var]int32 // index into info
	info     []varInfo
	scope    []*Var // the variables defined in the open scopes, in order
	changed  bool   // a level rose after the walk had read it
	check    bool   // the final pass, which reports barrier problems
	quiet    bool   // a walk before the final one, which reports nothing

	// In a check walk, expr type-checks each expression it is given once:
	// typed is whether it did and found it well typed, inside it (all of
	// whose subexpressions are then well typed too), and checked and
	// checkedOK are the last expression and whether it was.
	typed     bool
	checked   Expr
	checkedOK bool
}

// varInfo is what the verifier knows of a variable of the kernel: its
// uniformity, which only rises from walk to walk, and what the current walk
// has seen of it.
type varInfo struct {
	level   uniformity
	defined bool  // ever defined in this walk
	let     bool  // defined by a Let
	read    bool  // its level was read in this walk
	open    int32 // its definitions in the open scopes
}

// varInfo returns x's entry.
func (v *verifier) varInfo(x *Var) *varInfo {
	i, ok := v.vars[x]
	if !ok {
		i = int32(len(v.info))
		v.vars[x] = i
		v.info = append(v.info, varInfo{})
	}
	return &v.info[i]
}

func (v *verifier) errorf(format string, args ...any) {
	if v.quiet {
		return
	}
	if len(v.errs) >= maxErrors {
		if !v.full {
			v.full = true
			v.errs = append(v.errs, errors.New("kir: too many errors"))
		}
		return
	}
	var where []string
	if v.k != nil {
		where = append(where, fmt.Sprintf("kernel %s", v.k.Name))
	}
	if v.stage != "" {
		where = append(where, fmt.Sprintf("stage %s", v.stage))
	}
	prefix := "kir: "
	if len(where) > 0 {
		prefix += strings.Join(where, ", ") + ": "
	}
	v.errs = append(v.errs, fmt.Errorf(prefix+format, args...))
}

func (v *verifier) module(m *Module) {
	if m == nil {
		v.errorf("nil module")
		return
	}
	v.m = m
	names := map[string]bool{}
	global := map[*Buffer]bool{}
	for _, b := range m.Buffers {
		if b == nil {
			v.errorf("nil buffer in module %s", m.Name)
			continue
		}
		if names[b.Name] {
			v.errorf("two buffers are named %s", b.Name)
		}
		names[b.Name] = true
		global[b] = true
		if b.Space != Global {
			v.errorf("module buffer %s is in %s memory, not global", b.Name, b.Space)
		}
		v.checkStorage(b)
	}
	for _, o := range m.Outputs {
		if !global[o] {
			v.errorf("output %s is not a buffer of the module", bufName(o))
		}
	}
	if r := m.ErrorRecord; r != nil {
		if !global[r] || r.Role != Temp || r.DType != te.I32 || r.Len() != ErrorRecordWords {
			v.errorf("error record %s %s: want a temporary i32[%d] of the module", bufName(r), typeString(r), ErrorRecordWords)
		}
	}
	kernels := map[string]bool{}
	for _, k := range m.Kernels {
		if k == nil {
			v.errorf("nil kernel in module %s", m.Name)
			continue
		}
		if kernels[k.Name] {
			v.errorf("two kernels are named %s", k.Name)
		}
		kernels[k.Name] = true
		v.kernel(k, global)
	}
}

func (v *verifier) checkStorage(b *Buffer) {
	switch b.DType {
	case te.F32, te.F16, te.BF16, te.I32, te.Bool:
	default:
		v.errorf("buffer %s has unknown dtype %s", b.Name, b.DType)
	}
	if msg := bufferArchErr(b, v.arch()); msg != "" {
		v.errorf("%s", msg)
	}
	for _, d := range b.Shape {
		if d < 0 {
			v.errorf("buffer %s has negative dimension in %s", b.Name, typeString(b))
		}
	}
}

func (v *verifier) kernel(k *Kernel, global map[*Buffer]bool) {
	v.k, v.stage = k, ""
	defer func() { v.k = nil }()
	if k.Block < 1 || k.Block > MaxBlockThreads {
		v.errorf("block of %d threads (want 1 to %d)", k.Block, MaxBlockThreads)
	}
	if !k.Grid.Resident && k.Grid.Blocks < 1 {
		v.errorf("fixed grid of %d blocks", k.Grid.Blocks)
	}
	if k.Grid.Blocks < 0 {
		v.errorf("grid of %d blocks", k.Grid.Blocks)
	}
	v.declared = map[*Buffer]bool{}
	names := map[string]bool{}
	declare := func(b *Buffer, what string, space Space) {
		if b == nil {
			v.errorf("nil %s", what)
			return
		}
		if names[b.Name] {
			v.errorf("%s %s: the kernel already declares a buffer of that name", what, b.Name)
		}
		names[b.Name] = true
		v.declared[b] = true
		if b.Space != space {
			v.errorf("%s %s is in %s memory", what, b.Name, b.Space)
		}
	}
	for _, p := range k.Params {
		declare(p, "parameter", Global)
		if p != nil && !global[p] {
			v.errorf("parameter %s is not a buffer of the module", p.Name)
		}
	}
	for _, s := range k.Shared {
		declare(s, "shared array", Shared)
		if s != nil {
			v.checkStorage(s)
		}
	}
	for _, l := range k.Locals {
		declare(l, "local array", Local)
		if l != nil {
			v.checkStorage(l)
		}
	}
	if k.HasGridSync() && !k.Grid.Resident {
		v.errorf("grid sync in a kernel launched with a fixed %s, not all-resident", k.Grid)
	}

	// Uniformity of variables is a fixpoint: iterate the walk until no
	// variable's level rises after the walk has read it, then walk once
	// more to report. A walk in which no level rose after it was read saw
	// every variable at its final level, so the first walk reports, and
	// only if a level rose late are its reports dropped and the walk
	// iterated: the result is the same, in one walk for most kernels.
	v.vars = map[*Var]int32{}
	v.info = v.info[:0]
	errs, full := len(v.errs), v.full
	v.walkKernel(k, true)
	if !v.changed {
		return
	}
	v.errs, v.full = v.errs[:errs], full
	for range 15 {
		v.walkKernel(k, false)
		if !v.changed {
			break
		}
	}
	v.walkKernel(k, true)
}

// walkKernel walks k's body once; only a check walk reports problems.
func (v *verifier) walkKernel(k *Kernel, check bool) {
	v.check, v.quiet = check, !check
	defer func() { v.quiet = false }()
	v.changed = false
	v.scope = v.scope[:0]
	for i := range v.info {
		v.info[i] = varInfo{level: v.info[i].level}
	}
	v.stage = ""
	v.stmts(k.Body, uniform, false)
}

// uniformity says how far a value or control flow agrees across threads.
type uniformity int

const (
	uniform      uniformity = iota // the same in every thread of the grid
	blockUniform                   // the same in every thread of a block
	varying                        // may differ between threads of a block
)

func (v *verifier) raise(x *Var, u uniformity) {
	if in := v.varInfo(x); u > in.level {
		in.level = u
		v.changed = v.changed || in.read
	}
}

func (v *verifier) define(x *Var, u uniformity, byLet bool) {
	if x == nil {
		v.errorf("nil variable")
		return
	}
	in := v.varInfo(x)
	if in.defined && v.check {
		v.errorf("variable %s is defined twice", x.Name)
	}
	in.defined = true
	in.open++
	v.scope = append(v.scope, x)
	if byLet {
		in.let = true
	}
	v.raise(x, u)
	switch x.T {
	case te.F32, te.I32, te.Bool, te.I64:
	default:
		if v.check {
			v.errorf("variable %s has type %s (want f32, i32, i64 or bool)", x.Name, x.T)
		}
	}
}

func (v *verifier) inScope(x *Var) bool { return v.varInfo(x).open > 0 }

// openScope opens a scope and returns what closeScope needs to close it.
func (v *verifier) openScope() int { return len(v.scope) }

// closeScope closes the scope that openScope returned mark for: the
// variables defined in it go out of scope.
func (v *verifier) closeScope(mark int) {
	for _, x := range v.scope[mark:] {
		v.varInfo(x).open--
	}
	v.scope = v.scope[:mark]
}

func (v *verifier) stmts(body []Stmt, ctx uniformity, inStage bool) {
	mark := v.openScope()
	for _, s := range body {
		v.stmt(s, ctx, inStage)
	}
	v.closeScope(mark)
}

// describe quotes the first line of a statement for messages.
func (v *verifier) describe(s Stmt) string {
	var b strings.Builder
	p := &printer{b: &b, names: map[*Var]string{}, used: map[string]bool{}}
	p.stmt(s, 0)
	line, _, _ := strings.Cut(b.String(), "\n")
	return strings.TrimSuffix(line, " {")
}

func (v *verifier) stmt(s Stmt, ctx uniformity, inStage bool) {
	switch s := s.(type) {
	case *Let:
		u := v.expr(s.Value, s)
		v.define(s.Var, max(ctx, u), true)
		if s.Var != nil && v.check && s.Value != nil && v.wellTyped(s.Value) && s.Value.Type() != s.Var.T {
			v.errorf("type mismatch: %s value assigned to %s variable %s: %s", s.Value.Type(), s.Var.T, s.Var.Name, v.describe(s))
		}
	case *Assign:
		u := v.expr(s.Value, s)
		if s.Var == nil {
			v.errorf("assignment to a nil variable")
			return
		}
		if v.check {
			switch {
			case !v.inScope(s.Var):
				v.errorf("assignment to variable %s outside its scope: %s", s.Var.Name, v.describe(s))
			case !v.varInfo(s.Var).let:
				v.errorf("assignment to loop variable %s: %s", s.Var.Name, v.describe(s))
			}
			if s.Value != nil && v.wellTyped(s.Value) && s.Value.Type() != s.Var.T {
				v.errorf("type mismatch: %s value assigned to %s variable %s: %s", s.Value.Type(), s.Var.T, s.Var.Name, v.describe(s))
			}
		}
		v.raise(s.Var, max(ctx, u))
	case *Store:
		v.access(s.Buf, s.Index, s.Value, s, true)
		if v.check && s.Buf != nil && !s.Buf.Writable() && s.Buf.Space == Global {
			v.errorf("store to %s %s: %s", s.Buf.Role, s.Buf.Name, v.describe(s))
		}
	case *Atomic:
		v.access(s.Buf, s.Index, s.Value, s, true)
		if v.check && s.Buf != nil {
			if !s.Buf.Writable() && s.Buf.Space == Global {
				v.errorf("atomic update of %s %s: %s", s.Buf.Role, s.Buf.Name, v.describe(s))
			}
			if s.Buf.Space == Local {
				v.errorf("atomic on local array %s: %s", s.Buf.Name, v.describe(s))
			}
			if s.Buf.DType != te.F32 {
				v.errorf("atomic on %s buffer %s (want f32): %s", s.Buf.DType, s.Buf.Name, v.describe(s))
			}
			if s.Op < AtomicAdd || s.Op > AtomicMin {
				v.errorf("unknown atomic operation %d: %s", s.Op, v.describe(s))
			}
		}
	case *If:
		u := v.expr(s.Cond, s)
		v.wantType(s.Cond, te.Bool, "if condition", s)
		v.stmts(s.Then, max(ctx, u), inStage)
		v.stmts(s.Else, max(ctx, u), inStage)
	case *For:
		lo, hi := v.expr(s.Lo, s), v.expr(s.Hi, s)
		v.wantType(s.Lo, te.I32, "loop bound", s)
		v.wantType(s.Hi, te.I32, "loop bound", s)
		inner := max(ctx, lo, hi)
		if s.Unroll != 0 && (s.Kind != Serial || s.Unroll < 2) && v.check {
			v.errorf("unroll %d on a %s loop (want 0, or 2 or more on a serial loop): %s", s.Unroll, s.Kind, v.describe(s))
		}
		switch s.Kind {
		case Serial, Unrolled:
			if s.Step <= 0 && v.check {
				v.errorf("loop step %d (want > 0): %s", s.Step, v.describe(s))
			}
			if s.Kind == Unrolled && v.check {
				_, lok := s.Lo.(*Const)
				_, hok := s.Hi.(*Const)
				if !lok || !hok {
					v.errorf("unrolled loop with non-constant bounds: %s", v.describe(s))
				}
			}
		case GridStride:
			inner = max(inner, blockUniform)
		case BlockStride, ThreadStride:
			inner = varying
		default:
			v.errorf("unknown loop kind %d", s.Kind)
		}
		if s.Var != nil && s.Var.T != te.I32 && v.check {
			v.errorf("loop variable %s has type %s (want i32): %s", s.Var.Name, s.Var.T, v.describe(s))
		}
		mark := v.openScope()
		v.define(s.Var, inner, false)
		v.stmts(s.Body, inner, inStage)
		v.closeScope(mark)
	case *SyncThreads:
		if v.check && ctx > blockUniform {
			v.errorf("syncthreads under thread-divergent control flow")
		}
	case *GridSync:
		if v.check && ctx > uniform {
			v.errorf("gridsync under control flow that differs between blocks or threads")
		}
	case *Stage:
		if inStage && v.check {
			v.errorf("stage %s nested in another stage", s.Name)
		}
		outer := v.stage
		v.stage = s.Name
		v.stmts(s.Body, ctx, true)
		v.stage = outer
	case *MMA, *LdMatrix, *VecCopy, *CopyAsync, *CommitGroup, *WaitGroup:
		v.warpStmt(s)
	case *Signal, *Wait:
		v.counterStmt(s, ctx)
	case *Prefetch:
		v.expr(s.Index, s)
		if v.check {
			v.buffer(s.Buf, s.Index, s)
			if s.Buf != nil && s.Buf.Space != Global {
				v.errorf("prefetch of %s, which is not in global memory: %s", s.Buf.Name, v.describe(s))
			}
		}
	case nil:
		v.errorf("nil statement")
	default:
		v.errorf("unknown statement %T", s)
	}
}

// access checks a store or atomic to buf[index] of value.
func (v *verifier) access(buf *Buffer, index, value Expr, s Stmt, write bool) {
	v.expr(index, s)
	v.expr(value, s)
	if !v.check {
		return
	}
	v.buffer(buf, index, s)
	if buf != nil && value != nil && v.wellTyped(value) && value.Type() != buf.ValueType() {
		v.errorf("type mismatch: %s value stored to %s buffer %s: %s", value.Type(), buf.DType, buf.Name, v.describe(s))
	}
}

// buffer checks that buf is declared and a constant index is in bounds.
func (v *verifier) buffer(buf *Buffer, index Expr, s Stmt) {
	if buf == nil {
		v.errorf("access to a nil buffer: %s", v.describe(s))
		return
	}
	if !v.declared[buf] {
		v.errorf("buffer %s is not declared in the kernel: %s", buf.Name, v.describe(s))
	}
	v.wantType(index, te.I32, "index", s)
	if c, ok := index.(*Const); ok && (c.Value < 0 || int(c.Value) >= buf.Len()) {
		v.errorf("index %s out of bounds of %s %s: %s", FormatConst(c), buf.Name, typeString(buf), v.describe(s))
	}
}

func (v *verifier) wantType(e Expr, t te.DType, what string, s Stmt) {
	if !v.check || e == nil || !v.wellTyped(e) {
		return
	}
	if e.Type() != t {
		v.errorf("type mismatch: %s is %s, want %s: %s", what, e.Type(), t, v.describe(s))
	}
}

// wellTyped reports whether e's Type is meaningful: it type-checks without
// reporting (the reports come from expr).
func (v *verifier) wellTyped(e Expr) bool {
	if v.typed {
		return true
	}
	if e != nil && e == v.checked {
		return v.checkedOK
	}
	return typeErr(e) == ""
}

// expr checks e in statement s and returns its uniformity.
func (v *verifier) expr(e Expr, s Stmt) uniformity {
	if e == nil {
		if v.check {
			v.errorf("nil expression: %s", v.describe(s))
		}
		return uniform
	}
	typed := false
	if v.check {
		msg := typeErr(e)
		if msg != "" {
			v.errorf("%s: %s", msg, v.describe(s))
		}
		typed = msg == ""
	}
	outer := v.typed
	v.typed = outer || typed
	defer func() { v.typed, v.checked, v.checkedOK = outer, e, typed }()
	u := uniform
	WalkExpr(e, func(x Expr) bool {
		switch x := x.(type) {
		case *Var:
			in := v.varInfo(x)
			if v.check && in.open == 0 {
				if in.defined {
					v.errorf("variable %s used outside its scope: %s", x.Name, v.describe(s))
				} else {
					v.errorf("variable %s used before its definition: %s", x.Name, v.describe(s))
				}
			}
			in.read = true
			u = max(u, in.level)
		case *Special:
			switch x.Reg {
			case ThreadIdx:
				u = varying
			case BlockIdx:
				u = max(u, blockUniform)
			}
		case *Load:
			if x.Buf != nil && x.Buf.Space == Local {
				u = varying
			}
			if v.check {
				v.buffer(x.Buf, x.Index, s)
			}
		case *Shuffle:
			u = varying
		case *Bounded:
			if v.check {
				v.bounded(x, s)
			}
		}
		return true
	})
	return u
}

// bounded checks a Bounded's report: to the module's error record, which
// the kernel declares, from one of the module's gathers.
func (v *verifier) bounded(e *Bounded, s Stmt) {
	if e.Record == nil {
		if e.At != nil {
			v.errorf("bounded index with a position but no error record: %s", v.describe(s))
		}
		return
	}
	if e.Record != v.m.ErrorRecord {
		v.errorf("bounded index reports to %s, not the module's error record: %s", e.Record.Name, v.describe(s))
	}
	v.buffer(e.Record, I(RecordValue), s)
	if e.Site < 0 || e.Site >= len(v.m.Gathers) {
		v.errorf("bounded index reports gather %d of the module's %d: %s", e.Site, len(v.m.Gathers), v.describe(s))
	}
	if e.At != nil {
		v.wantType(e.At, te.I32, "bounded index's position", s)
	}
}

// typeErr returns a description of the first type error in e, or "".
func typeErr(e Expr) string {
	switch e := e.(type) {
	case nil:
		return "nil expression"
	case *Const:
		switch e.T {
		case te.I32:
			if e.Value != math.Trunc(e.Value) || e.Value < math.MinInt32 || e.Value > math.MaxInt32 {
				return fmt.Sprintf("i32 constant %v is not a 32-bit integer (Widen makes such constants i64)", e.Value)
			}
			return ""
		case te.I64:
			if e.Value != math.Trunc(e.Value) {
				return fmt.Sprintf("i64 constant %v is not an integer", e.Value)
			}
			return ""
		case te.F32, te.Bool:
			return ""
		}
		return fmt.Sprintf("constant of type %s", e.T)
	case *Var:
		return ""
	case *Special:
		if e.Reg < ThreadIdx || e.Reg > GridDim {
			return fmt.Sprintf("unknown special register %d", e.Reg)
		}
		return ""
	case *Load:
		if e.Buf == nil {
			return "load from a nil buffer"
		}
		return typeErr(e.Index)
	case *Unary:
		if msg := typeErr(e.X); msg != "" {
			return msg
		}
		x := e.X.Type()
		switch e.Op {
		case te.Not:
			if x != te.Bool {
				return fmt.Sprintf("type mismatch: ! of %s", x)
			}
		case te.Neg, te.Abs:
			if x != te.F32 && x != te.I32 && x != te.I64 {
				return fmt.Sprintf("type mismatch: %s of %s", e.Op, x)
			}
		case te.Exp, te.Log, te.Sqrt, te.Rsqrt, te.Tanh, te.Sigmoid, te.Erf, te.RoundTF32, te.Sin, te.Cos:
			if x != te.F32 {
				return fmt.Sprintf("type mismatch: %s of %s (want f32)", e.Op, x)
			}
		default:
			return fmt.Sprintf("unknown unary operation %d", e.Op)
		}
		return ""
	case *Binary:
		if msg := typeErr(e.X); msg != "" {
			return msg
		}
		if msg := typeErr(e.Y); msg != "" {
			return msg
		}
		x, y := e.X.Type(), e.Y.Type()
		if x != y {
			return fmt.Sprintf("type mismatch: %s %s %s", x, e.Op, y)
		}
		switch {
		case e.Op.IsLogical():
			if x != te.Bool {
				return fmt.Sprintf("type mismatch: %s on %s (want bool)", e.Op, x)
			}
		case e.Op == te.Eq || e.Op == te.Ne:
		case e.Op == te.Pow:
			if x != te.F32 {
				return fmt.Sprintf("type mismatch: pow on %s (want f32)", x)
			}
		case e.Op >= te.Add && e.Op <= te.Ge:
			if x != te.F32 && x != te.I32 && x != te.I64 {
				return fmt.Sprintf("type mismatch: %s on %s", e.Op, x)
			}
		default:
			return fmt.Sprintf("unknown binary operation %d", e.Op)
		}
		return ""
	case *Select:
		for _, x := range []Expr{e.Cond, e.Then, e.Else} {
			if msg := typeErr(x); msg != "" {
				return msg
			}
		}
		if e.Cond.Type() != te.Bool {
			return fmt.Sprintf("type mismatch: select condition is %s, want bool", e.Cond.Type())
		}
		if e.Then.Type() != e.Else.Type() {
			return fmt.Sprintf("type mismatch: select of %s and %s", e.Then.Type(), e.Else.Type())
		}
		return ""
	case *Cast:
		if msg := typeErr(e.X); msg != "" {
			return msg
		}
		from := e.X.Type()
		switch {
		case e.To == te.I64 && from != te.I32 && from != te.I64,
			from == te.I64 && e.To != te.I32 && e.To != te.I64 && e.To != te.F32:
			// Widen converts i32 to i64, and i64 to i32 and f32; the
			// emitters know no other conversion of an i64.
			return fmt.Sprintf("cast from %s to %s (i64 converts from i32, and to i32 and f32)", from, e.To)
		}
		switch e.To {
		case te.F32, te.F16, te.BF16, te.I32, te.Bool, te.I64:
			return ""
		}
		return fmt.Sprintf("cast to unknown type %s", e.To)
	case *Shuffle:
		return shuffleErr(e)
	case *Bounded:
		if msg := typeErr(e.X); msg != "" {
			return msg
		}
		if e.X.Type() != te.I32 {
			return fmt.Sprintf("type mismatch: bounded index of %s (want i32)", e.X.Type())
		}
		if e.N < 1 {
			return fmt.Sprintf("bounded index in an empty range [0, %d)", e.N)
		}
		return ""
	}
	return fmt.Sprintf("unknown expression %T", e)
}

// shuffleErr returns a description of the first type error in a shuffle,
// or "".
func shuffleErr(e *Shuffle) string {
	for _, x := range []Expr{e.X, e.Mask} {
		if msg := typeErr(x); msg != "" {
			return msg
		}
	}
	switch {
	case e.Mode != ShuffleXor && e.Mode != ShuffleDown:
		return fmt.Sprintf("unknown shuffle mode %d", e.Mode)
	case e.X.Type() != te.F32 && e.X.Type() != te.I32:
		return fmt.Sprintf("type mismatch: shuffle of %s (want f32 or i32)", e.X.Type())
	case e.Mask.Type() != te.I32:
		return fmt.Sprintf("type mismatch: shuffle mask is %s, want i32", e.Mask.Type())
	case e.Offset < 0 || e.Offset >= WarpSize:
		return fmt.Sprintf("shuffle offset %d (want 0 to %d)", e.Offset, WarpSize-1)
	case e.Width < 1 || e.Width > WarpSize || e.Width&(e.Width-1) != 0:
		return fmt.Sprintf("shuffle width %d (want a power of two from 1 to %d)", e.Width, WarpSize)
	}
	return ""
}

// warpStmt checks an MMA, LdMatrix, VecCopy, CopyAsync, CommitGroup or
// WaitGroup.
func (v *verifier) warpStmt(s Stmt) {
	Exprs(s, func(e Expr) { v.expr(e, s) })
	if !v.check {
		return
	}
	msg := ""
	switch s := s.(type) {
	case *MMA:
		msg = mmaErr(s)
		for _, f := range []Frag{s.A, s.B, s.C, s.D} {
			if f.Buf != nil && !v.declared[f.Buf] {
				v.errorf("buffer %s is not declared in the kernel: %s", f.Buf.Name, v.describe(s))
			}
		}
	case *LdMatrix:
		msg = ldmatrixErr(s)
		if msg == "" {
			v.buffer(s.Src, s.Index, s)
			v.buffer(s.Dst.Buf, I(s.Dst.Off), s)
			if c, ok := s.Index.(*Const); ok && int(c.Value)%8 != 0 {
				msg = fmt.Sprintf("misaligned ldmatrix row %s[%d]: the index is not a multiple of 8", s.Src.Name, int(c.Value))
			}
		}
	case *VecCopy:
		msg = copyErr("vector copy", s.Dst, s.Src, false)
		if msg == "" {
			msg = vecBytesErr(s)
		}
		if msg == "" {
			v.buffer(s.Dst, s.DstIndex, s)
			v.buffer(s.Src, s.SrcIndex, s)
			msg = cmpOr(vecIndexBytesErr(s.Dst, s.DstIndex, s.Size()), vecIndexBytesErr(s.Src, s.SrcIndex, s.Size()))
		}
	case *CopyAsync:
		msg = copyErr("cp.async", s.Dst, s.Src, true)
		if msg == "" {
			v.buffer(s.Dst, s.DstIndex, s)
			v.buffer(s.Src, s.SrcIndex, s)
			msg = cmpOr(vecIndexErr(s.Dst, s.DstIndex), vecIndexErr(s.Src, s.SrcIndex))
		}
	case *WaitGroup:
		if s.N < 0 || s.N > 7 {
			msg = fmt.Sprintf("cp.async.wait_group %d (want 0 to 7)", s.N)
		}
	}
	msg = cmpOr(archErr(s, v.arch()), msg)
	if msg != "" {
		v.errorf("%s: %s", msg, v.describe(s))
	}
}

// arch returns the architecture the module is compiled for; zero (sm_80's
// instructions) where it records no GPU.
func (v *verifier) arch() gpu.Arch {
	if v.m == nil || v.m.GPU == nil {
		return gpu.Arch{}
	}
	return v.m.GPU.Arch
}

// CheckArch returns an error naming the first thing m uses that
// architecture a lacks (archErr, and bf16 buffers where a has no bf16),
// or nil: the emitters' check that the module may be compiled for a,
// which may not be the architecture it was planned for (m.GPU's).
func CheckArch(m *Module, a gpu.Arch) error {
	bufs := slices.Clone(m.Buffers)
	for _, k := range m.Kernels {
		bufs = append(append(bufs, k.Shared...), k.Locals...)
	}
	for _, b := range bufs {
		if msg := bufferArchErr(b, a); msg != "" {
			return errors.New(msg)
		}
	}
	for _, k := range m.Kernels {
		msg := ""
		WalkStmts(k.Body, func(s Stmt) bool {
			if msg == "" {
				msg = archErr(s, a)
			}
			return msg == ""
		})
		if msg != "" {
			return fmt.Errorf("kernel %s: %s", k.Name, msg)
		}
	}
	return nil
}

// bufferArchErr says why architecture a cannot hold buffer b, or "".
func bufferArchErr(b *Buffer, a gpu.Arch) string {
	if b.DType == te.BF16 && !a.BF16() {
		return fmt.Sprintf("buffer %s is bf16, which %s has no arithmetic for (sm_80 and later have)", b.Name, a.Name)
	}
	return ""
}

// archErr says what in warp-level statement s architecture a lacks, or "".
func archErr(s Stmt, a gpu.Arch) string {
	need := ""
	switch s := s.(type) {
	case *MMA:
		switch {
		case s.In == te.BF16 && !a.BF16():
			need = "the bf16 mma." + s.Shape.String()
		case s.In == te.F32 && !a.TF32():
			need = "the tf32 mma." + s.Shape.String()
		case s.Shape == M16N8K16 && !a.MMAK16():
			need = "mma.m16n8k16"
		}
	case *CopyAsync, *CommitGroup, *WaitGroup:
		if !a.AsyncCopy() {
			need = "cp.async"
		}
	}
	if need == "" {
		return ""
	}
	return fmt.Sprintf("%s needs sm_80 or later; the module is compiled for %s", need, a.Name)
}

// cmpOr returns the first non-empty string.
func cmpOr(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

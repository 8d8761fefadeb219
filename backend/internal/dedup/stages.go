package dedup

import (
	"slices"

	"tec/backend/kir"
	"tec/te"
)

// A persistent kernel of an unrolled model (the LSTM's 100 steps × 10
// layers in one kernel) repeats the same few stages thousands of times on
// different buffers. Written out inline, such a kernel is megabytes of
// code that nvcc and llc take many minutes to optimise. Emitters therefore
// write stages with the same code once, as a device function that takes
// the stage's buffers as pointers, and the kernels call it.

// StageFunc is the code that several stages share.
type StageFunc struct {
	// Body is the code of the first stage, with the indexes of each global
	// buffer lowered by the base (StageCalls.Bases) that its call adds to
	// the pointer.
	Body []kir.Stmt
	// Params are the buffers of the first stage, in order of first use:
	// global buffers, then shared arrays; a call passes its stage's
	// buffers in the same order.
	Params []*kir.Buffer
	// Locals are the first stage's per-thread arrays (fragments, 16-byte
	// vectors), in order of first use: the function's own, since no other
	// statement of a calling kernel uses them (StageCalls.Moved).
	Locals []*kir.Buffer
	// Stages are the stages that call it, in module order.
	Stages []*kir.Stage
}

// StageCalls are the stage functions of a module and, for each stage that
// calls one, the function, the kernel the stage is in, the buffers it
// passes and the element offsets added to them.
type StageCalls struct {
	Funcs  []*StageFunc
	Func   map[*kir.Stage]*StageFunc
	Kernel map[*kir.Stage]*kir.Kernel
	Args   map[*kir.Stage][]*kir.Buffer
	Bases  map[*kir.Stage][]int
	// Moved are the per-thread arrays of the stages that call a function:
	// the function declares its own, and their kernels need not.
	Moved map[*kir.Buffer]bool
}

// Call returns the function that computes stage s, or nil if s is to be
// written inline (c may be nil).
func (c *StageCalls) Call(s *kir.Stage) *StageFunc {
	if c == nil {
		return nil
	}
	return c.Func[s]
}

// Stages finds the top-level stages of m's emitted kernels (those groups,
// from Groups, maps to themselves) that have the same code as another
// stage up to their buffers and constant offsets into them, and gives each
// such code a StageFunc. A stage stays inline that uses a variable defined
// outside it or a per-thread array that another statement of its kernel
// uses too. Tensor-core and 16-byte stages share functions like
// the others: a transformer's layers, whose code was megabytes of the same
// few stages inline (Swin's largest kernel 4 MB of CUDA C++, nvcc minutes
// on each compilation), call one function per stage kind.
func Stages(m *kir.Module, groups map[*kir.Kernel]*kir.Kernel) *StageCalls {
	c := &StageCalls{Func: map[*kir.Stage]*StageFunc{}, Kernel: map[*kir.Stage]*kir.Kernel{},
		Args: map[*kir.Stage][]*kir.Buffer{}, Bases: map[*kir.Stage][]int{}, Moved: map[*kir.Buffer]bool{}}
	type use struct {
		k      *kir.Kernel
		s      *kir.Stage
		bufs   []*kir.Buffer
		locals []*kir.Buffer
		bases  []int
		body   []kir.Stmt
	}
	byKey := map[string][]use{}
	var keys []string
	w := newKeyWriter()
	codeOnly := &kir.Module{}
	for _, k := range m.Kernels {
		if groups[k] != k {
			continue
		}
		shared := localsShared(k)
		for _, st := range k.Body {
			s, ok := st.(*kir.Stage)
			if !ok {
				continue
			}
			bufs, locals, ok := stageBuffers(s)
			if !ok || slices.ContainsFunc(locals, func(b *kir.Buffer) bool { return shared[b] }) {
				continue
			}
			// Stages of different layers or steps address their buffers
			// at different constant offsets: pass the pointers rebased.
			base := bases(s.Body)
			body := rebaseStmts(s.Body, base)
			pk := &kir.Kernel{Block: k.Block, Body: body, Locals: locals}
			for _, b := range bufs {
				if b.Space == kir.Global {
					pk.Params = append(pk.Params, b)
				} else {
					pk.Shared = append(pk.Shared, b)
				}
			}
			key := w.key(codeOnly, pk, nil, false) // CodeKey(pk)
			if _, seen := byKey[key]; !seen {
				keys = append(keys, key)
			}
			all := append(pk.Params, pk.Shared...)
			offs := make([]int, len(all))
			for i, b := range all {
				offs[i] = base[b]
			}
			byKey[key] = append(byKey[key], use{k, s, all, locals, offs, body})
		}
	}
	for _, key := range keys {
		uses := byKey[key]
		if len(uses) < 2 {
			continue
		}
		f := &StageFunc{Body: uses[0].body, Params: uses[0].bufs, Locals: uses[0].locals}
		for _, u := range uses {
			c.Func[u.s] = f
			c.Kernel[u.s] = u.k
			c.Args[u.s] = u.bufs
			c.Bases[u.s] = u.bases
			f.Stages = append(f.Stages, u.s)
			for _, l := range u.locals {
				c.Moved[l] = true
			}
		}
		c.Funcs = append(c.Funcs, f)
	}
	return c
}

// localsShared returns the per-thread arrays of k that more than one of
// its top-level statements uses.
func localsShared(k *kir.Kernel) map[*kir.Buffer]bool {
	users := map[*kir.Buffer]int{}
	for _, st := range k.Body {
		seen := map[*kir.Buffer]bool{}
		kir.WalkStmts([]kir.Stmt{st}, func(s kir.Stmt) bool {
			for _, b := range stmtBuffers(s) {
				if b.Space == kir.Local && !seen[b] {
					seen[b] = true
					users[b]++
				}
			}
			return true
		})
	}
	out := map[*kir.Buffer]bool{}
	for b, n := range users {
		if n > 1 {
			out[b] = true
		}
	}
	return out
}

// stmtBuffers returns the buffers that s uses itself, not in the
// statements it holds: those it names, then those its expressions load.
func stmtBuffers(s kir.Stmt) []*kir.Buffer {
	var bufs []*kir.Buffer
	for _, a := range accesses(s) {
		bufs = append(bufs, a.buf)
	}
	kir.Exprs(s, func(e kir.Expr) {
		kir.WalkExpr(e, func(x kir.Expr) bool {
			if l, ok := x.(*kir.Load); ok {
				bufs = append(bufs, l.Buf)
			}
			return true
		})
	})
	return bufs
}

// stageBuffers returns the global buffers and shared arrays that s uses, in
// order of first use, its per-thread arrays likewise, and whether s can be
// a function of them: it uses no variable defined outside it.
func stageBuffers(s *kir.Stage) (bufs, locals []*kir.Buffer, ok bool) {
	seen := map[*kir.Buffer]bool{}
	defined := map[*kir.Var]bool{}
	ok = true
	add := func(b *kir.Buffer) {
		if seen[b] {
			return
		}
		seen[b] = true
		if b.Space == kir.Local {
			locals = append(locals, b)
		} else {
			bufs = append(bufs, b)
		}
	}
	var used []*kir.Var
	kir.WalkStmts(s.Body, func(st kir.Stmt) bool {
		switch st := st.(type) {
		case *kir.Let:
			defined[st.Var] = true
		case *kir.For:
			defined[st.Var] = true
		}
		for _, b := range stmtBuffers(st) {
			add(b)
		}
		kir.Exprs(st, func(e kir.Expr) {
			kir.WalkExpr(e, func(x kir.Expr) bool {
				switch x := x.(type) {
				case *kir.Var:
					used = append(used, x)
				case *kir.Bounded:
					// A reported gather names its site: the stage is
					// its own.
					ok = ok && x.Record == nil
				}
				return true
			})
		})
		return ok
	})
	for _, v := range used {
		if !defined[v] {
			return nil, nil, false
		}
	}
	return bufs, locals, ok
}

// bases returns, for each global buffer that body indexes only as e + c or
// c with constants c > 0, the least such c.
func bases(body []kir.Stmt) map[*kir.Buffer]int {
	least := map[*kir.Buffer]int{}
	bad := map[*kir.Buffer]bool{}
	see := func(b *kir.Buffer, index kir.Expr) {
		if b.Space != kir.Global {
			return
		}
		_, c := splitConst(index)
		if c <= 0 {
			bad[b] = true
			return
		}
		if l, ok := least[b]; !ok || c < l {
			least[b] = c
		}
	}
	kir.WalkStmts(body, func(st kir.Stmt) bool {
		for _, a := range accesses(st) {
			see(a.buf, a.index)
		}
		kir.Exprs(st, func(e kir.Expr) {
			kir.WalkExpr(e, func(x kir.Expr) bool {
				if l, ok := x.(*kir.Load); ok {
					see(l.Buf, l.Index)
				}
				return true
			})
		})
		return true
	})
	for b := range bad {
		delete(least, b)
	}
	return least
}

// access is a buffer that a statement indexes, and the index.
type access struct {
	buf   *kir.Buffer
	index kir.Expr
}

// accesses returns the buffers that st uses itself (not through its
// expressions' loads), with their indexes (none for a fragment): the
// global ones are those a stage function's call rebases.
func accesses(st kir.Stmt) []access {
	switch st := st.(type) {
	case *kir.Store:
		return []access{{st.Buf, st.Index}}
	case *kir.Atomic:
		return []access{{st.Buf, st.Index}}
	case *kir.VecCopy:
		return []access{{st.Src, st.SrcIndex}, {st.Dst, st.DstIndex}}
	case *kir.CopyAsync:
		return []access{{st.Src, st.SrcIndex}, {st.Dst, st.DstIndex}}
	case *kir.LdMatrix:
		return []access{{st.Src, st.Index}, {st.Dst.Buf, nil}}
	case *kir.MMA:
		return []access{{st.A.Buf, nil}, {st.B.Buf, nil}, {st.C.Buf, nil}, {st.D.Buf, nil}}
	case *kir.Signal:
		return []access{{st.Counter, st.Index}}
	case *kir.Wait:
		return []access{{st.Counter, st.Index}}
	case *kir.Prefetch:
		return []access{{st.Buf, st.Index}}
	}
	return nil
}

// splitConst splits an index into e + c: e is nil for a constant.
func splitConst(x kir.Expr) (kir.Expr, int) {
	switch x := x.(type) {
	case *kir.Const:
		return nil, int(x.Value)
	case *kir.Binary:
		if c, ok := x.Y.(*kir.Const); ok {
			switch x.Op {
			case te.Add:
				return x.X, int(c.Value)
			case te.Sub:
				return x.X, -int(c.Value)
			}
		}
	}
	return x, 0
}

// rebaseIndex returns index lowered by base.
func rebaseIndex(index kir.Expr, base int) kir.Expr {
	if base == 0 {
		return index
	}
	e, c := splitConst(index)
	c -= base
	switch {
	case e == nil:
		return kir.I(c)
	case c > 0:
		return kir.Add(e, kir.I(c))
	case c < 0:
		return kir.Sub(e, kir.I(-c))
	}
	return e
}

// rebaseStmts returns a copy of body in which every index of a buffer b is
// lowered by base[b].
func rebaseStmts(body []kir.Stmt, base map[*kir.Buffer]int) []kir.Stmt {
	if len(base) == 0 {
		return body
	}
	out := make([]kir.Stmt, len(body))
	for i, s := range body {
		switch s := s.(type) {
		case *kir.Let:
			out[i] = &kir.Let{Var: s.Var, Value: rebaseExpr(s.Value, base)}
		case *kir.Assign:
			out[i] = &kir.Assign{Var: s.Var, Value: rebaseExpr(s.Value, base)}
		case *kir.Store:
			out[i] = &kir.Store{Buf: s.Buf, Index: rebaseIndex(rebaseExpr(s.Index, base), base[s.Buf]), Value: rebaseExpr(s.Value, base)}
		case *kir.Atomic:
			out[i] = &kir.Atomic{Op: s.Op, Buf: s.Buf, Index: rebaseIndex(rebaseExpr(s.Index, base), base[s.Buf]), Value: rebaseExpr(s.Value, base)}
		case *kir.If:
			out[i] = &kir.If{Cond: rebaseExpr(s.Cond, base), Then: rebaseStmts(s.Then, base), Else: rebaseStmts(s.Else, base)}
		case *kir.For:
			out[i] = &kir.For{Var: s.Var, Kind: s.Kind, Lo: rebaseExpr(s.Lo, base), Hi: rebaseExpr(s.Hi, base), Step: s.Step, Unroll: s.Unroll, Body: rebaseStmts(s.Body, base)}
		case *kir.Stage:
			out[i] = &kir.Stage{Name: s.Name, Span: s.Span, Body: rebaseStmts(s.Body, base)}
		case *kir.VecCopy:
			out[i] = &kir.VecCopy{Dst: s.Dst, DstIndex: rebaseIndex(rebaseExpr(s.DstIndex, base), base[s.Dst]),
				Src: s.Src, SrcIndex: rebaseIndex(rebaseExpr(s.SrcIndex, base), base[s.Src]), Bytes: s.Bytes}
		case *kir.CopyAsync:
			out[i] = &kir.CopyAsync{Dst: s.Dst, DstIndex: rebaseExpr(s.DstIndex, base),
				Src: s.Src, SrcIndex: rebaseIndex(rebaseExpr(s.SrcIndex, base), base[s.Src]), Bypass: s.Bypass}
		case *kir.LdMatrix:
			out[i] = &kir.LdMatrix{Num: s.Num, Trans: s.Trans, Dst: s.Dst, Src: s.Src, Index: rebaseExpr(s.Index, base)}
		case *kir.Signal:
			out[i] = &kir.Signal{Counter: s.Counter, Index: rebaseIndex(rebaseExpr(s.Index, base), base[s.Counter])}
		case *kir.Wait:
			out[i] = &kir.Wait{Counter: s.Counter, Index: rebaseIndex(rebaseExpr(s.Index, base), base[s.Counter]), Target: rebaseExpr(s.Target, base)}
		case *kir.Prefetch:
			out[i] = &kir.Prefetch{Buf: s.Buf, Index: rebaseIndex(rebaseExpr(s.Index, base), base[s.Buf])}
		default:
			out[i] = s
		}
	}
	return out
}

// rebaseExpr returns a copy of e in which every index of a buffer b is
// lowered by base[b].
func rebaseExpr(e kir.Expr, base map[*kir.Buffer]int) kir.Expr {
	switch e := e.(type) {
	case *kir.Load:
		return &kir.Load{Buf: e.Buf, Index: rebaseIndex(rebaseExpr(e.Index, base), base[e.Buf])}
	case *kir.Unary:
		return &kir.Unary{Op: e.Op, X: rebaseExpr(e.X, base)}
	case *kir.Binary:
		return kir.Bin(e.Op, rebaseExpr(e.X, base), rebaseExpr(e.Y, base))
	case *kir.Select:
		return &kir.Select{Cond: rebaseExpr(e.Cond, base), Then: rebaseExpr(e.Then, base), Else: rebaseExpr(e.Else, base)}
	case *kir.Cast:
		return &kir.Cast{To: e.To, X: rebaseExpr(e.X, base)}
	case *kir.Shuffle:
		return &kir.Shuffle{Mode: e.Mode, X: rebaseExpr(e.X, base), Offset: e.Offset, Width: e.Width, Mask: rebaseExpr(e.Mask, base)}
	case *kir.Bounded:
		return &kir.Bounded{X: rebaseExpr(e.X, base), N: e.N, Buf: e.Buf, Dim: e.Dim,
			Record: e.Record, Site: e.Site, At: rebaseExpr(e.At, base), Update: e.Update}
	}
	return e
}

package cuda

import (
	"fmt"
	"strings"

	"tec/backend/internal/dedup"
	"tec/backend/internal/sign"
	"tec/backend/kir"
	"tec/te"
)

// A persistent kernel of an unrolled model (the LSTM's 100 steps × 10
// layers in one kernel) repeats the same few stages thousands of times on
// different buffers. Written out inline, such a kernel is megabytes of
// source that nvcc takes many minutes to optimise. Stages with the same
// code are therefore written once, as a device function that takes the
// stage's buffers as pointers, and the kernels call it.

// stageFunc is a device function that computes every stage with its code.
type stageFunc struct {
	name string
	// body is the code of the first stage, with the indexes of each global
	// buffer lowered by the base that its call adds to the pointer.
	body []kir.Stmt
	// params are the buffers of first, in order of first use: global
	// buffers and shared arrays; a call passes its stage's buffers in the
	// same order.
	params []*kir.Buffer
	// restrict[i] is whether every call's buffer i is one that its kernel
	// either writes only in this stage or does not write at all, and that
	// shares no bytes with another of the kernel's temporaries: a pointer
	// the compiler may read through the read-only cache.
	restrict []bool
	stages   []string
}

// outlined holds the stage functions of a module and, for each stage that
// calls one, the function and the buffers it passes.
type outlined struct {
	funcs []*stageFunc
	fn    map[*kir.Stage]*stageFunc
	args  map[*kir.Stage][]*kir.Buffer
	bases map[*kir.Stage][]int // element offsets added to the args
}

// outline finds the stages of m's emitted kernels (those groups maps to
// themselves) that share their code with another stage, and gives each
// such code a device function.
func outline(m *kir.Module, groups map[*kir.Kernel]*kir.Kernel, n *names) *outlined {
	o := &outlined{fn: map[*kir.Stage]*stageFunc{}, args: map[*kir.Stage][]*kir.Buffer{}, bases: map[*kir.Stage][]int{}}
	type use struct {
		k     *kir.Kernel
		s     *kir.Stage
		bufs  []*kir.Buffer
		bases []int
		body  []kir.Stmt
	}
	byKey := map[string][]use{}
	var keys []string
	for _, k := range m.Kernels {
		if groups[k] != k {
			continue
		}
		for _, st := range k.Body {
			s, ok := st.(*kir.Stage)
			if !ok {
				continue
			}
			bufs, ok := stageBuffers(s)
			if !ok {
				continue
			}
			// Stages of different layers or steps address their buffers
			// at different constant offsets: pass the pointers rebased.
			base := bases(s.Body)
			body := rebaseStmts(s.Body, base)
			pk := &kir.Kernel{Block: k.Block, Body: body}
			for _, b := range bufs {
				if b.Space == kir.Global {
					pk.Params = append(pk.Params, b)
				} else {
					pk.Shared = append(pk.Shared, b)
				}
			}
			key := dedup.CodeKey(pk)
			if _, seen := byKey[key]; !seen {
				keys = append(keys, key)
			}
			all := append(pk.Params, pk.Shared...)
			offs := make([]int, len(all))
			for i, b := range all {
				offs[i] = base[b]
			}
			byKey[key] = append(byKey[key], use{k, s, all, offs, body})
		}
	}
	aliased := map[*kir.Kernel]map[*kir.Buffer]bool{}
	written := map[*kir.Kernel]map[*kir.Buffer]bool{}
	for _, key := range keys {
		uses := byKey[key]
		if len(uses) < 2 {
			continue
		}
		f := &stageFunc{name: n.module.Name("s_" + uses[0].s.Name), body: uses[0].body, params: uses[0].bufs}
		f.restrict = make([]bool, len(f.params))
		for i := range f.restrict {
			f.restrict[i] = f.params[i].Space == kir.Global
		}
		for _, u := range uses {
			al, ok := aliased[u.k]
			if !ok {
				al = kir.Overlapping(u.k, n.offsets)
				aliased[u.k] = al
			}
			if _, ok := written[u.k]; !ok {
				written[u.k] = writtenBy(u.k)
			}
			here := writtenBy(&kir.Kernel{Body: u.s.Body})
			for i, b := range u.bufs {
				if al[b] || written[u.k][b] && !here[b] {
					f.restrict[i] = false
				}
			}
			o.fn[u.s] = f
			o.args[u.s] = u.bufs
			o.bases[u.s] = u.bases
			f.stages = append(f.stages, u.s.Name)
		}
		o.funcs = append(o.funcs, f)
	}
	return o
}

// call returns the function that computes stage s, or nil if s is
// written inline (o may be nil).
func (o *outlined) call(s *kir.Stage) *stageFunc {
	if o == nil {
		return nil
	}
	return o.fn[s]
}

// stageBuffers returns the global buffers and shared arrays that s uses, in
// order of first use, and whether s can be a function of them: it uses no
// per-thread arrays and no variable defined outside it.
func stageBuffers(s *kir.Stage) ([]*kir.Buffer, bool) {
	var bufs []*kir.Buffer
	seen := map[*kir.Buffer]bool{}
	defined := map[*kir.Var]bool{}
	ok := true
	add := func(b *kir.Buffer) {
		if b.Space == kir.Local {
			ok = false
		}
		if !seen[b] {
			seen[b] = true
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
		case *kir.Store:
			add(st.Buf)
		case *kir.Atomic:
			add(st.Buf)
		}
		kir.Exprs(st, func(e kir.Expr) {
			kir.WalkExpr(e, func(x kir.Expr) bool {
				switch x := x.(type) {
				case *kir.Load:
					add(x.Buf)
				case *kir.Var:
					used = append(used, x)
				}
				return true
			})
		})
		return ok
	})
	for _, v := range used {
		if !defined[v] {
			return nil, false
		}
	}
	return bufs, ok
}

// writeStageFunc writes f's device function.
func writeStageFunc(b *strings.Builder, f *stageFunc, n *names) {
	local := map[*kir.Buffer]string{}
	scope := n.module.Child()
	fn := *n
	fn.local = local
	fn.stages = nil
	written := map[*kir.Buffer]bool{}
	kir.WalkStmts(f.body, func(s kir.Stmt) bool {
		switch s := s.(type) {
		case *kir.Store:
			written[s.Buf] = true
		case *kir.Atomic:
			written[s.Buf] = true
		}
		return true
	})
	var params []string
	for i, p := range f.params {
		name := scope.Name(safe(p.Name))
		local[p] = name
		c := "const "
		if written[p] {
			c = ""
		}
		r := ""
		if f.restrict[i] {
			r = " __restrict__"
		}
		params = append(params, fmt.Sprintf("%s%s*%s %s", c, cType(p.DType), r, name))
	}
	list := strings.Join(f.stages[:min(4, len(f.stages))], ", ")
	if len(f.stages) > 4 {
		list += fmt.Sprintf(" and %d more", len(f.stages)-4)
	}
	fmt.Fprintf(b, "\n// The code of %d stages: %s.\n", len(f.stages), list)
	fmt.Fprintf(b, "static __device__ __noinline__ void %s(%s) {\n", f.name, strings.Join(params, ", "))
	w := &kernelWriter{b: b, k: &kir.Kernel{Body: f.body}, names: &fn, vars: map[*kir.Var]string{}, scope: scope,
		facts: sign.Analyze(f.body), live: liveVars(f.body)}
	if w.k.HasGridSync() {
		w.line(1, "cg::grid_group grid = cg::this_grid();")
	}
	w.stmts(f.body, 1)
	b.WriteString("}\n")
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
		switch st := st.(type) {
		case *kir.Store:
			see(st.Buf, st.Index)
		case *kir.Atomic:
			see(st.Buf, st.Index)
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
			out[i] = &kir.For{Var: s.Var, Kind: s.Kind, Lo: rebaseExpr(s.Lo, base), Hi: rebaseExpr(s.Hi, base), Step: s.Step, Body: rebaseStmts(s.Body, base)}
		case *kir.Stage:
			out[i] = &kir.Stage{Name: s.Name, Span: s.Span, Body: rebaseStmts(s.Body, base)}
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
		return &kir.Binary{Op: e.Op, X: rebaseExpr(e.X, base), Y: rebaseExpr(e.Y, base)}
	case *kir.Select:
		return &kir.Select{Cond: rebaseExpr(e.Cond, base), Then: rebaseExpr(e.Then, base), Else: rebaseExpr(e.Else, base)}
	case *kir.Cast:
		return &kir.Cast{To: e.To, X: rebaseExpr(e.X, base)}
	}
	return e
}

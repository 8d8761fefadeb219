package lower

import (
	"fmt"
	"slices"

	"tec/backend/kir"
	"tec/te"
)

// A loop over the elements of a tensor whose body moves along the last
// axis with contiguous loads computes a vector of elements per thread:
// 16 bytes of the tensor's storage type, each load that moves along the
// axis read with 16-byte loads into registers (two for 8 elements of
// f32), the elements computed there, and one 16-byte store (vectorElems,
// storeVector).

// vectorElems returns te.VectorElems(t, done) where t's buffer buf holds
// t's own type, else 0.
func vectorElems(t *te.Tensor, buf *kir.Buffer, done *te.Reduce) (int, []*te.Load) {
	if buf.DType != t.DType {
		return 0, nil
	}
	return te.VectorElems(t, done)
}

// readLocal returns e with each load that local maps read instead from
// its stand-in, a local array of a vector's elements, at index at.
func readLocal(e te.Expr, local map[*te.Load]*te.Tensor, at te.Index) te.Expr {
	return te.Replace(e, func(x te.Expr) te.Expr {
		if ld, isLoad := x.(*te.Load); isLoad && local[ld] != nil {
			return &te.Load{Tensor: local[ld], Index: []te.Index{at}}
		}
		return nil
	})
}

// storeVector emits the computation of the n elements of t (vectorElems)
// from the one that g binds t's axes to, its last axis at a multiple of
// n, and their 16-byte store at at, t's flat index there: the moving
// loads read into local arrays, which it adds to k, and the elements
// computed from them. It reports false, emitting nothing, where a moving
// load does not lower to a plain load. Where sum is not nil, element j's
// value of reduction r is sum(j).
func (l *lowerer) storeVector(g *gen, t *te.Tensor, n int, moving []*te.Load, at kir.Expr, k *kir.Kernel, r *te.Reduce, sum func(j int) kir.Expr) bool {
	return l.storeGuardedVector(g, t, n, moving, nil, at, k, r, sum, nil)
}

// guardedVectorElems returns te.GuardedVectorElems(t, done) where t's
// buffer buf holds t's own type, else 0.
func guardedVectorElems(t *te.Tensor, buf *kir.Buffer, done *te.Reduce) (int, []*te.Load, map[*te.Load][]te.VectorGuard) {
	if buf.DType != t.DType {
		return 0, nil, nil
	}
	return te.GuardedVectorElems(t, done)
}

// readVectors emits the copies of each distinct vector of n elements
// that the moving loads read (sameVector), 16 bytes at a time (or, where
// n elements of a load's type are fewer, one copy of 4 or 8 bytes) under
// the load's guards, into the array that dst makes for load j of element
// type dt, from the index dst gives. It returns each load's stand-in,
// a tensor that reads the array (readLocal), and the arrays; and false,
// where a moving load is not a plain load of whole 16-byte units or one
// narrow vector.
func readVectors(g *gen, moving []*te.Load, guards map[*te.Load][]te.VectorGuard, n int,
	dst func(j int, dt te.DType) (*kir.Buffer, kir.Expr)) (map[*te.Load]*te.Tensor, []*kir.Buffer, bool) {
	stand := map[*te.Load]*te.Tensor{}
	var bufs []*kir.Buffer
	for j, ld := range moving {
		if same := sameVector(moving[:j], ld, guards); same != nil {
			stand[ld] = stand[same]
			continue
		}
		kl, isLoad := g.expr(ld).(*kir.Load)
		if !isLoad {
			return nil, nil, false
		}
		vl, bytes := kir.VecLen(kl.Buf.DType), 0
		if n < vl { // a narrow vector: 4 or 8 bytes
			vl, bytes = n, n*kl.Buf.DType.Size()
		}
		if n%vl != 0 || bytes != 0 && bytes != 4 && bytes != 8 {
			return nil, nil, false
		}
		b, at := dst(j, kl.Buf.DType)
		bufs = append(bufs, b)
		var copies []kir.Stmt
		for q := 0; q < n; q += vl {
			to := addIndex(at, q)
			if c, ok := constI(at); ok {
				to = kir.I(c + q)
			}
			copies = append(copies, &kir.VecCopy{Dst: b, DstIndex: to, Src: kl.Buf, SrcIndex: addIndex(kl.Index, q), Bytes: bytes})
		}
		// A local array that its guards leave unread holds zeros: the
		// elements' selects read it only where the guards hold, but its
		// old values, live until then, would hold registers (the decode
		// step's scores: 17 more registers for the new key's array).
		var zeros []kir.Stmt
		if b.Space == kir.Local && len(guards[ld]) > 0 {
			for e := range n {
				to := addIndex(at, e)
				if c, ok := constI(at); ok {
					to = kir.I(c + e)
				}
				zeros = append(zeros, &kir.Store{Buf: b, Index: to, Value: &kir.Const{T: b.ValueType()}})
			}
		}
		g.emit(guarded(g, guards[ld], copies, zeros)...)
		stand[ld] = &te.Tensor{Name: b.Name, Kind: te.Compute, DType: ld.Tensor.DType, Shape: slices.Clone(b.Shape)}
		g.bufs[stand[ld]] = b
	}
	return stand, bufs, true
}

// storeGuardedVector is storeVector where a moving load may lie under
// selects uniform over the vector (te.GuardedVectorElems): its vector is
// read under the conditions of guards[load], evaluated at the vector's
// first element, and the element code's selects, lazy, read it only
// there. Where arrays is not nil, the vectors are its arrays of their
// names, made and added to it where it has none: the calls of one stage
// that store in turn (a matrix-vector tile's rows) share them, as their
// registers would.
func (l *lowerer) storeGuardedVector(g *gen, t *te.Tensor, n int, moving []*te.Load, guards map[*te.Load][]te.VectorGuard, at kir.Expr, k *kir.Kernel, r *te.Reduce, sum func(j int) kir.Expr, arrays map[string]*kir.Buffer) bool {
	buf := l.bufs[t]
	var vecs []*kir.Buffer
	array := func(name string, dt te.DType) *kir.Buffer {
		if b := arrays[name]; b != nil && b.DType == dt && b.Len() == n {
			return b
		}
		b := &kir.Buffer{Name: name, Space: kir.Local, DType: dt, Shape: []int{n}}
		if arrays != nil {
			arrays[name] = b
		}
		return b
	}
	local := map[*te.Load]*te.Tensor{}
	once := map[*te.Load]*te.Tensor{} // the loads that do not move, read once
	last := t.Axes[len(t.Axes)-1]
	ok := true
	body := g.into(func() {
		local, vecs, ok = readVectors(g, moving, guards, n, func(i int, dt te.DType) (*kir.Buffer, kir.Expr) {
			return array(fmt.Sprintf("%s.v%d", t.Name, i), dt), kir.I(0)
		})
		if !ok {
			return
		}
		var scalars []*kir.Buffer
		once, scalars = readOnce(g, invariantLoads(t.Body, last, local), t.Name)
		vecs = append(vecs, scalars...)
		out := array(t.Name+".vo", buf.DType)
		vecs = append(vecs, out)
		base := g.env[last]
		for j := range n {
			aj := kir.NewVar(last.Name, te.I32)
			g.emit(&kir.Let{Var: aj, Value: addIndex(base, j)})
			g.env[last] = aj
			e := readLocal(readLocal(t.Body, once, te.Const(0)), local, te.Const(j))
			if sum != nil {
				g.done[r] = sum(j)
			}
			g.emit(&kir.Store{Buf: out, Index: kir.I(j), Value: convert(g.expr(e), buf.ValueType())})
		}
		if sum != nil {
			delete(g.done, r)
		}
		g.env[last] = base
		g.emit(&kir.VecCopy{Dst: buf, DstIndex: at, Src: out, SrcIndex: kir.I(0)})
	})
	for _, t := range local {
		delete(g.bufs, t)
	}
	for _, t := range once {
		delete(g.bufs, t)
	}
	if !ok {
		return false
	}
	for _, b := range vecs {
		if !slices.Contains(k.Locals, b) {
			k.Locals = append(k.Locals, b)
		}
	}
	g.emit(body...)
	return true
}

// readOnce emits the reads of loads, each distinct one once, into local
// arrays of one element named after name, and returns each load's
// stand-in (readLocal at index 0) and the arrays.
func readOnce(g *gen, loads []*te.Load, name string) (map[*te.Load]*te.Tensor, []*kir.Buffer) {
	once := map[*te.Load]*te.Tensor{}
	var bufs []*kir.Buffer
	for i, ld := range loads {
		if same := sameVector(loads[:i], ld, nil); same != nil {
			once[ld] = once[same]
			continue
		}
		s := &kir.Buffer{Name: fmt.Sprintf("%s.s%d", name, i), Space: kir.Local, DType: ld.Tensor.DType, Shape: []int{1}}
		bufs = append(bufs, s)
		g.emit(&kir.Store{Buf: s, Index: kir.I(0), Value: convert(g.expr(ld), s.ValueType())})
		once[ld] = &te.Tensor{Name: s.Name, Kind: te.Compute, DType: ld.Tensor.DType, Shape: []int{1}}
		g.bufs[once[ld]] = s
	}
	return once, bufs
}

// guarded returns ss under an If of the conditions gs (each as it holds or
// not), lowered where g's variables are now: a vector's first element,
// with els (which may be nil) where they do not hold.
func guarded(g *gen, gs []te.VectorGuard, ss, els []kir.Stmt) []kir.Stmt {
	var c kir.Expr
	for _, vg := range gs {
		x := convert(g.expr(vg.Cond), te.Bool)
		if !vg.Holds {
			x = &kir.Unary{Op: te.Not, X: x}
		}
		if c == nil {
			c = x
		} else {
			c = kir.And(c, x)
		}
	}
	if c == nil {
		return ss
	}
	return []kir.Stmt{&kir.If{Cond: c, Then: ss, Else: els}}
}

// sameVector returns the load of loads that reads the vector that ld
// reads, under the same guards, or nil.
func sameVector(loads []*te.Load, ld *te.Load, guards map[*te.Load][]te.VectorGuard) *te.Load {
	for _, x := range loads {
		if x.Tensor == ld.Tensor && !x.IsGather() && !ld.IsGather() && slices.EqualFunc(x.Index, ld.Index, te.Index.Equal) &&
			slices.Equal(guards[x], guards[ld]) {
			return x
		}
	}
	return nil
}

// invariantLoads returns the distinct loads of e that do not move along
// along and that every element evaluates (under no select or reduction):
// a vector's elements read them once (nvcc does not always see that
// their values do not change between the elements, a decode step's
// position read again for each element's sine and cosine).
func invariantLoads(e te.Expr, along *te.Var, moving map[*te.Load]*te.Tensor) []*te.Load {
	var out []*te.Load
	te.Walk(e, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Select, *te.Reduce:
			return false
		case *te.Load:
			if moving[x] == nil && !te.UsedVars(x)[along] && !x.IsGather() && !slices.Contains(out, x) && kirScalar(x.Tensor.DType) {
				out = append(out, x)
			}
			return false
		}
		return true
	})
	return out
}

// kirScalar reports whether a local array may hold elements of type t.
func kirScalar(t te.DType) bool {
	switch t {
	case te.F32, te.I32, te.F16, te.BF16:
		return true
	}
	return false
}

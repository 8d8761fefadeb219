package lower

import (
	"fmt"

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
	buf := l.bufs[t]
	var vecs []*kir.Buffer
	local := map[*te.Load]*te.Tensor{}
	body := g.into(func() {
		for i, ld := range moving {
			kl, isLoad := g.expr(ld).(*kir.Load)
			if !isLoad || n%kir.VecLen(kl.Buf.DType) != 0 {
				vecs = nil
				return
			}
			v := &kir.Buffer{Name: fmt.Sprintf("%s.v%d", t.Name, i), Space: kir.Local, DType: kl.Buf.DType, Shape: []int{n}}
			vecs = append(vecs, v)
			for q, vl := 0, kir.VecLen(kl.Buf.DType); q < n; q += vl {
				g.emit(&kir.VecCopy{Dst: v, DstIndex: kir.I(q), Src: kl.Buf, SrcIndex: addIndex(kl.Index, q)})
			}
			local[ld] = &te.Tensor{Name: v.Name, Kind: te.Compute, DType: ld.Tensor.DType, Shape: []int{n}}
			g.bufs[local[ld]] = v
		}
		out := &kir.Buffer{Name: t.Name + ".vo", Space: kir.Local, DType: buf.DType, Shape: []int{n}}
		vecs = append(vecs, out)
		last := t.Axes[len(t.Axes)-1]
		base := g.env[last]
		for j := range n {
			aj := kir.NewVar(last.Name, te.I32)
			g.emit(&kir.Let{Var: aj, Value: addIndex(base, j)})
			g.env[last] = aj
			e := readLocal(t.Body, local, te.Const(j))
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
	if len(vecs) != len(moving)+1 {
		return false
	}
	k.Locals = append(k.Locals, vecs...)
	g.emit(body...)
	return true
}

package tebuild

import "tec/te"

// GQAAttention is a decode step's grouped-query attention over a cache of
// t positions: nh query heads of dh, scaled (rq, element-wise), g of
// them sharing each key/value head (rk, element-wise); the scores of a
// head read its key head's new key at position 0 and the cache after it,
// then the maximum, the sum and the context (a matrix-vector product of
// the head's probabilities and its value head) as the Llama example
// writes them.
func GQAAttention(nh, nkv, dh, t int) *te.Program {
	g := nh / nkv
	b := New("gqa")
	q, k := b.Input("q", nh, dh), b.Input("k", nkv, dh)
	kc, vc := b.Input("kc", nkv, t, dh), b.Input("vc", nkv, t, dh)
	// A statistic of all of q, which the rotations follow after a grid
	// sync (as they follow a projection in a decode step).
	ss := b.Compute("ss", Shape(1), func(ax []te.Index) te.Expr {
		return ReduceN(te.Sum, []string{"n", "e"}, []int{nh, dh}, func(ks []te.Index) te.Expr {
			return Bin(te.Mul, Ld(q, ks...), Ld(q, ks...))
		})
	})
	scale := Ld(ss, te.Const(0))
	rq := b.Compute("rq", Shape(nh, dh), func(ax []te.Index) te.Expr { return Bin(te.Mul, Ld(q, ax...), scale) })
	rk := b.Compute("rk", Shape(nkv, dh), func(ax []te.Index) te.Expr { return Bin(te.Mul, Ld(k, ax...), scale) })
	sc := b.Compute("sc", Shape(nh, t), func(ax []te.Index) te.Expr {
		n, p := ax[0], ax[1]
		return Reduce(te.Sum, "e", dh, func(e te.Index) te.Expr {
			key := Sel(Bin(te.Eq, Idx(p), I(0)), Ld(rk, n.Div(g), e), Ld(kc, n.Div(g), p, e))
			return Bin(te.Mul, Ld(rq, n, e), key)
		})
	})
	mx := b.Compute("mx", Shape(nh), func(ax []te.Index) te.Expr {
		return Reduce(te.ReduceMax, "t", t, func(p te.Index) te.Expr { return Ld(sc, ax[0], p) })
	})
	pr := func(n, p te.Index) te.Expr { return Un(te.Exp, Bin(te.Sub, Ld(sc, n, p), Ld(mx, n))) }
	den := b.Compute("den", Shape(nh), func(ax []te.Index) te.Expr {
		return Reduce(te.Sum, "t", t, func(p te.Index) te.Expr { return pr(ax[0], p) })
	})
	ctx := b.Compute("ctx", Shape(nh, dh), func(ax []te.Index) te.Expr {
		n, e := ax[0], ax[1]
		return Bin(te.Div, Reduce(te.Sum, "t", t, func(p te.Index) te.Expr {
			return Bin(te.Mul, pr(n, p), Ld(vc, n.Div(g), p, e))
		}), Ld(den, n))
	})
	return b.Program(ctx)
}

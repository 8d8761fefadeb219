package analysis

import (
	"fmt"

	"tec/te"
)

// This file builds whole-model TE programs in Go, with the structure that
// the front end gives the examples (one TE per element-wise step, softmax
// and layernorm as several TEs, layouts as gathers with div and mod), for
// the reuse tests and the benchmarks.

// model is a builder with the operators of the examples.
type model struct {
	*builder
	n     int      // tensors made, for unique names
	scope []string // the scope of the tensors made next
}

func newModel(name string) *model { return &model{builder: newBuilder(name)} }

func (m *model) fresh(base string) string {
	m.n++
	return fmt.Sprintf("%s%d", base, m.n)
}

// te defines a scoped compute tensor.
func (m *model) te(base string, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	t := m.compute(m.fresh(base), shape, body)
	t.Scope = append([]string(nil), m.scope...)
	return t
}

func (m *model) enter(s string) func() {
	m.scope = append(m.scope, s)
	return func() { m.scope = m.scope[:len(m.scope)-1] }
}

func (m *model) w(base string, shape ...int) *te.Tensor { return m.param(m.fresh(base), shape...) }

// linear is x·w + b for x [M, K].
func (m *model) linear(x *te.Tensor, n int) *te.Tensor {
	k := x.Shape[1]
	w, b := m.w("w", k, n), m.w("b", n)
	return m.te("linear", shp(x.Shape[0], n), func(ax []te.Index) te.Expr {
		return add(sum1("k", k, func(r te.Index) te.Expr { return mul(ld(x, ax[0], r), ld(w, r, ax[1])) }), ld(b, ax[1]))
	})
}

// bmm is a batched a·b for a [B, M, K], b [B, K, N], times scale.
func (m *model) bmm(a, b *te.Tensor, scale float64) *te.Tensor {
	k := a.Shape[2]
	return m.te("bmm", shp(a.Shape[0], a.Shape[1], b.Shape[2]), func(ax []te.Index) te.Expr {
		return mul(sum1("k", k, func(r te.Index) te.Expr { return mul(ld(a, ax[0], ax[1], r), ld(b, ax[0], r, ax[2])) }), cf(scale))
	})
}

// softmax over the last axis of x [B, M, N], max-subtracted: four TEs.
func (m *model) softmax(x *te.Tensor) *te.Tensor {
	B, M, N := x.Shape[0], x.Shape[1], x.Shape[2]
	mx := m.te("max", shp(B, M), func(ax []te.Index) te.Expr {
		return red(te.ReduceMax, []string{"k"}, []int{N}, func(r []te.Index) te.Expr { return ld(x, ax[0], ax[1], r[0]) })
	})
	e := m.te("exp", x.Shape, func(ax []te.Index) te.Expr { return un(te.Exp, sub(ld(x, ax...), ld(mx, ax[0], ax[1]))) })
	s := m.te("sum", shp(B, M), func(ax []te.Index) te.Expr {
		return sum1("k", N, func(r te.Index) te.Expr { return ld(e, ax[0], ax[1], r) })
	})
	return m.te("softmax", x.Shape, func(ax []te.Index) te.Expr { return div(ld(e, ax...), ld(s, ax[0], ax[1])) })
}

// layernorm over the last axis of x [M, N], two-pass: three TEs.
func (m *model) layernorm(x *te.Tensor) *te.Tensor {
	M, N := x.Shape[0], x.Shape[1]
	g, b := m.w("gamma", N), m.w("beta", N)
	mean := m.te("mean", shp(M), func(ax []te.Index) te.Expr {
		return mul(sum1("k", N, func(r te.Index) te.Expr { return ld(x, ax[0], r) }), cf(1/float64(N)))
	})
	vr := m.te("var", shp(M), func(ax []te.Index) te.Expr {
		return mul(sum1("k", N, func(r te.Index) te.Expr {
			d := sub(ld(x, ax[0], r), ld(mean, ax[0]))
			return mul(d, d)
		}), cf(1/float64(N)))
	})
	return m.te("norm", x.Shape, func(ax []te.Index) te.Expr {
		n := mul(sub(ld(x, ax...), ld(mean, ax[0])), un(te.Rsqrt, add(ld(vr, ax[0]), cf(1e-5))))
		return add(mul(n, ld(g, ax[1])), ld(b, ax[1]))
	})
}

func (m *model) add2(x, y *te.Tensor) *te.Tensor {
	return m.te("add", x.Shape, func(ax []te.Index) te.Expr { return add(ld(x, ax...), ld(y, ax...)) })
}

func (m *model) unary(op te.UnaryOp, x *te.Tensor) *te.Tensor {
	return m.te(op.String(), x.Shape, func(ax []te.Index) te.Expr { return un(op, ld(x, ax...)) })
}

func (m *model) relu(x *te.Tensor) *te.Tensor {
	return m.te("relu", x.Shape, func(ax []te.Index) te.Expr { return bin(te.Max, ld(x, ax...), cf(0)) })
}

// heads splits x [S, NH·DH] into [NH, S, DH] (transposed: [NH, DH, S]).
func (m *model) heads(x *te.Tensor, nh int, transposed bool) *te.Tensor {
	S, dh := x.Shape[0], x.Shape[1]/nh
	if transposed {
		return m.te("headsT", shp(nh, dh, S), func(ax []te.Index) te.Expr { return ld(x, ax[2], ax[0].Scale(dh).Add(ax[1])) })
	}
	return m.te("heads", shp(nh, S, dh), func(ax []te.Index) te.Expr { return ld(x, ax[1], ax[0].Scale(dh).Add(ax[2])) })
}

// merge is the inverse of heads: [NH, S, DH] to [S, NH·DH], with div and mod.
func (m *model) merge(x *te.Tensor) *te.Tensor {
	nh, S, dh := x.Shape[0], x.Shape[1], x.Shape[2]
	return m.te("merge", shp(S, nh*dh), func(ax []te.Index) te.Expr { return ld(x, ax[1].Div(dh), ax[0], ax[1].Mod(dh)) })
}

// attention is multi-head self-attention over x [S, D], with its QKV
// projections named q, k and v in the result.
func (m *model) attention(x *te.Tensor, nh int) (out, q, k, v *te.Tensor) {
	defer m.enter("attention")()
	D := x.Shape[1]
	q, k, v = m.linear(x, D), m.linear(x, D), m.linear(x, D)
	p := m.softmax(m.bmm(m.heads(q, nh, false), m.heads(k, nh, true), 0.125))
	ctx := m.bmm(p, m.heads(v, nh, false), 1)
	return m.linear(m.merge(ctx), D), q, k, v
}

// bert is BERT's encoder: layers × (attention, add & norm, FFN, add & norm).
func bert(layers, S, D, nh, ffn int) *te.Program {
	m := newModel("bert")
	x := m.input("x", S, D)
	for l := range layers {
		done := m.enter(fmt.Sprintf("layer[%d]", l))
		a, _, _, _ := m.attention(x, nh)
		h := m.layernorm(m.add2(a, x))
		f := m.linear(m.unary(te.Erf, m.linear(h, ffn)), D)
		x = m.layernorm(m.add2(f, h))
		done()
	}
	return m.outputs(x)
}

// lstm is the stacked LSTM of examples/lstm.te: T steps of L layers, one TE
// for the four gates of a cell (or one per gate), then the cell and hidden
// states. The weights W[L, 4, H, H], U and b are read directly by every
// cell of their layer.
func lstm(T, L, H int, gatesApart bool) *te.Program {
	m := newModel("lstm")
	const B = 1
	xs := m.input("xs", T, B, H)
	W, U, bias := m.param("W", L, 4, H, H), m.param("U", L, 4, H, H), m.param("b", L, 4, H)
	zero := func() *te.Tensor { return m.te("zeros", shp(B, H), func([]te.Index) te.Expr { return cf(0) }) }
	h, cs := make([]*te.Tensor, L), make([]*te.Tensor, L)
	for l := range L {
		h[l], cs[l] = zero(), zero()
	}
	var ys []*te.Tensor
	for t := range T {
		inp, inpAt := xs, []te.Index{c(t)}
		for l := range L {
			done := m.enter(fmt.Sprintf("t[%d]", t))
			done2 := m.enter(fmt.Sprintf("l[%d]", l))
			done3 := m.enter("lstm_cell")
			x, hl := inp, h[l]
			gate := func(q te.Index, n, j te.Index) te.Expr {
				xi := append(append([]te.Index(nil), inpAt...), n)
				return add(add(
					sum1("k", H, func(k te.Index) te.Expr { return mul(ld(x, append(xi, k)...), ld(W, c(l), q, k, j)) }),
					sum1("k", H, func(k te.Index) te.Expr { return mul(ld(hl, n, k), ld(U, c(l), q, k, j)) })),
					ld(bias, c(l), q, j))
			}
			var g [4]func(n, j te.Index) te.Expr
			if gatesApart {
				for q := range 4 {
					gq := m.te(fmt.Sprintf("gate%d_", q), shp(B, H), func(ax []te.Index) te.Expr { return gate(c(q), ax[0], ax[1]) })
					g[q] = func(n, j te.Index) te.Expr { return ld(gq, n, j) }
				}
			} else {
				gs := m.te("g", shp(4, B, H), func(ax []te.Index) te.Expr { return gate(ax[0], ax[1], ax[2]) })
				for q := range 4 {
					g[q] = func(n, j te.Index) te.Expr { return ld(gs, c(q), n, j) }
				}
			}
			cl := cs[l]
			c2 := m.te("c", shp(B, H), func(ax []te.Index) te.Expr {
				n, j := ax[0], ax[1]
				return add(mul(ld(cl, n, j), un(te.Sigmoid, g[2](n, j))), mul(un(te.Sigmoid, g[0](n, j)), un(te.Tanh, g[1](n, j))))
			})
			h2 := m.te("h", shp(B, H), func(ax []te.Index) te.Expr {
				return mul(un(te.Tanh, ld(c2, ax...)), un(te.Sigmoid, g[3](ax[0], ax[1])))
			})
			h[l], cs[l] = h2, c2
			inp, inpAt = h2, nil
			done3()
			done2()
			done()
		}
		ys = append(ys, inp)
	}
	return m.outputs(ys...)
}

// conv2d is a grouped convolution of x [N, C, H, W] with O filters of k×k,
// zero-padded by pad, as one TE with a select around the padded load.
func (m *model) conv2d(x *te.Tensor, O, k, stride, pad, groups int) *te.Tensor {
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	cg, og := C/groups, O/groups
	w := m.w("conv", O, cg, k, k)
	Ho, Wo := (H+2*pad-k)/stride+1, (W+2*pad-k)/stride+1
	return m.te("conv", shp(N, O, Ho, Wo), func(ax []te.Index) te.Expr {
		return red(te.Sum, []string{"c", "kh", "kw"}, []int{cg, k, k}, func(r []te.Index) te.Expr {
			h := ax[2].Scale(stride).Add(r[1]).AddConst(-pad)
			ww := ax[3].Scale(stride).Add(r[2]).AddConst(-pad)
			ch := ax[1].Div(og).Scale(cg).Add(r[0])
			load := ld(x, ax[0], ch, h, ww)
			if pad > 0 {
				in := and(bin(te.Ge, ix(h), ci(0)), bin(te.Lt, ix(h), ci(H)), bin(te.Ge, ix(ww), ci(0)), bin(te.Lt, ix(ww), ci(W)))
				load = sel(in, load, cf(0))
			}
			return mul(load, ld(w, ax[1], r[0], r[1], r[2]))
		})
	})
}

// bn is inference batch normalisation, one element-wise TE.
func (m *model) bn(x *te.Tensor) *te.Tensor {
	C := x.Shape[1]
	mean, vr, g, b := m.w("mean", C), m.w("var", C), m.w("g", C), m.w("b", C)
	return m.te("bn", x.Shape, func(ax []te.Index) te.Expr {
		ch := ax[1]
		n := mul(sub(ld(x, ax...), ld(mean, ch)), un(te.Rsqrt, add(ld(vr, ch), cf(1e-5))))
		return add(mul(n, ld(g, ch)), ld(b, ch))
	})
}

// resnext is ResNeXt (32×4d) with the given blocks per stage on size×size
// images.
func resnext(blocks []int, size int) *te.Program {
	m := newModel("resnext")
	x := m.input("image", 1, 3, size, size)
	x = m.relu(m.bn(m.conv2d(x, 64, 7, 2, 3, 1)))
	x = m.te("maxpool", shp(1, 64, x.Shape[2]/2, x.Shape[3]/2), func(ax []te.Index) te.Expr {
		return red(te.ReduceMax, []string{"kh", "kw"}, []int{2, 2}, func(r []te.Index) te.Expr {
			return ld(x, ax[0], ax[1], ax[2].Scale(2).Add(r[0]), ax[3].Scale(2).Add(r[1]))
		})
	})
	width, out := 128, 256
	for s, nb := range blocks {
		for bi := range nb {
			done := m.enter(fmt.Sprintf("stage%d[%d]", s, bi))
			stride := 1
			if bi == 0 && s > 0 {
				stride = 2
			}
			y := m.relu(m.bn(m.conv2d(x, width, 1, 1, 0, 1)))
			y = m.relu(m.bn(m.conv2d(y, width, 3, stride, 1, 32)))
			y = m.bn(m.conv2d(y, out, 1, 1, 0, 1))
			short := x
			if bi == 0 {
				short = m.bn(m.conv2d(x, out, 1, stride, 0, 1))
			}
			x = m.relu(m.add2(y, short))
			done()
		}
		width, out = width*2, out*2
	}
	return m.outputs(x)
}

// swin is the Swin Transformer: patch embedding, stages of blocks with
// (shifted) window attention, patch merging between stages.
func swin(depths, heads []int, embed, img, patch, ws int) *te.Program {
	m := newModel("swin")
	x0 := m.input("image", 3, img, img)
	R := img / patch
	// patch embedding: gather the patches ([R·R, 3·p·p], div and mod), then a linear.
	pd := 3 * patch * patch
	pt := m.te("patches", shp(R*R, pd), func(ax []te.Index) te.Expr {
		tok, f := ax[0], ax[1]
		return ld(x0, f.Div(patch*patch), tok.Div(R).Scale(patch).Add(f.Div(patch).Mod(patch)), tok.Mod(R).Scale(patch).Add(f.Mod(patch)))
	})
	x := m.layernorm(m.linear(pt, embed))
	C := embed
	for s, depth := range depths {
		for bi := range depth {
			done := m.enter(fmt.Sprintf("stage%d[%d]", s, bi))
			shift := 0
			if bi%2 == 1 && R > ws {
				shift = ws / 2
			}
			x = m.swinBlock(x, R, C, heads[s], ws, shift)
			done()
		}
		if s < len(depths)-1 {
			done := m.enter(fmt.Sprintf("merge%d", s))
			// patch merging: [R·R, C] -> [R/2·R/2, 4C] -> layernorm -> [.., 2C]
			h := R / 2
			src := x
			mg := m.te("pmerge", shp(h*h, 4*C), func(ax []te.Index) te.Expr {
				tok, f := ax[0], ax[1]
				q := f.Div(C) // which of the four neighbours
				row := tok.Div(h).Scale(2).Add(q.Mod(2))
				col := tok.Mod(h).Scale(2).Add(q.Div(2))
				return ld(src, row.Scale(R).Add(col), f.Mod(C))
			})
			x = m.linear(m.layernorm(mg), 2*C)
			R, C = h, 2*C
			done()
		}
	}
	return m.outputs(x)
}

// swinBlock is one Swin block on x [R·R, C] with windows of ws×ws shifted by
// shift.
func (m *model) swinBlock(x *te.Tensor, R, C, nh, ws, shift int) *te.Tensor {
	nw := (R / ws) * (R / ws)
	n := ws * ws
	dh := C / nh
	h := m.layernorm(x)
	// roll and window partition in one gather: [nW·n, C]
	win := m.te("window", shp(nw*n, C), func(ax []te.Index) te.Expr {
		w, p := ax[0].Div(n), ax[0].Mod(n)
		row := w.Div(R / ws).Scale(ws).Add(p.Div(ws)).AddConst(shift).Mod(R)
		col := w.Mod(R / ws).Scale(ws).Add(p.Mod(ws)).AddConst(shift).Mod(R)
		return ld(h, row.Scale(R).Add(col), ax[1])
	})
	qkv := m.linear(win, 3*C)
	split := func(part int, transposed bool) *te.Tensor {
		if transposed {
			return m.te("k", shp(nw*nh, dh, n), func(ax []te.Index) te.Expr {
				return ld(qkv, ax[0].Div(nh).Scale(n).Add(ax[2]), ax[0].Mod(nh).Scale(dh).Add(ax[1]).AddConst(part*C))
			})
		}
		return m.te("qv", shp(nw*nh, n, dh), func(ax []te.Index) te.Expr {
			return ld(qkv, ax[0].Div(nh).Scale(n).Add(ax[1]), ax[0].Mod(nh).Scale(dh).Add(ax[2]).AddConst(part*C))
		})
	}
	sc := m.bmm(split(0, false), split(1, true), 0.125)
	bias := m.w("relbias", nh, n, n)
	sc = m.te("bias", sc.Shape, func(ax []te.Index) te.Expr { return add(ld(sc, ax...), ld(bias, ax[0].Mod(nh), ax[1], ax[2])) })
	if shift > 0 {
		mask := m.w("mask", nw, n, n)
		sc = m.te("mask", sc.Shape, func(ax []te.Index) te.Expr { return add(ld(sc, ax...), ld(mask, ax[0].Div(nh), ax[1], ax[2])) })
	}
	ctx := m.bmm(m.softmax(sc), split(2, false), 1)
	// merge heads, reverse the windows and the roll: [R·R, C]
	back := m.te("unwindow", shp(R*R, C), func(ax []te.Index) te.Expr {
		row := ax[0].Div(R).AddConst(R - shift).Mod(R)
		col := ax[0].Mod(R).AddConst(R - shift).Mod(R)
		w := row.Div(ws).Scale(R / ws).Add(col.Div(ws))
		p := row.Mod(ws).Scale(ws).Add(col.Mod(ws))
		return ld(ctx, w.Scale(nh).Add(ax[1].Div(dh)), p, ax[1].Mod(dh))
	})
	x = m.add2(x, m.linear(back, C))
	f := m.linear(m.unary(te.Erf, m.linear(m.layernorm(x), 4*C)), C)
	return m.add2(x, f)
}

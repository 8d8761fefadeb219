package lower

import "tec/te"

// The test programs, each small enough to simulate in milliseconds and shaped
// to take every path of the lowering (tails of tiles, blocks larger than
// the work).

func matmulBias(M, K, N int) *te.Program {
	b := newBuilder("matmul_bias")
	x := b.input("x", te.F32, M, K)
	w := b.param("w", te.F32, K, N)
	bias := b.param("b", te.F32, N)
	y := b.f32("y", shp(M, N), func(a []te.Index) te.Expr {
		return add(sum1(K, func(k te.Index) te.Expr { return mul(ld(x, a[0], k), ld(w, k, a[1])) }), ld(bias, a[1]))
	})
	return b.outputs(y)
}

func batchMatmul(B, M, K, N int) *te.Program {
	b := newBuilder("bmm")
	x := b.input("x", te.F32, B, M, K)
	w := b.input("w", te.F32, B, K, N)
	y := b.f32("y", shp(B, M, N), func(a []te.Index) te.Expr {
		return sum1(K, func(k te.Index) te.Expr { return mul(ld(x, a[0], a[1], k), ld(w, a[0], k, a[2])) })
	})
	return b.outputs(y)
}

func softmax(M, N int) *te.Program {
	b := newBuilder("softmax")
	x := b.input("x", te.F32, M, N)
	mx := b.f32("mx", shp(M), func(a []te.Index) te.Expr {
		return red(te.ReduceMax, []int{N}, func(k []te.Index) te.Expr { return ld(x, a[0], k[0]) })
	})
	e := b.f32("e", shp(M, N), func(a []te.Index) te.Expr { return un(te.Exp, sub(ld(x, a[0], a[1]), ld(mx, a[0]))) })
	s := b.f32("s", shp(M), func(a []te.Index) te.Expr { return sum1(N, func(k te.Index) te.Expr { return ld(e, a[0], k) }) })
	y := b.f32("y", shp(M, N), func(a []te.Index) te.Expr { return div(ld(e, a[0], a[1]), ld(s, a[0])) })
	return b.outputs(y)
}

func layernorm(M, N int) *te.Program {
	b := newBuilder("layernorm")
	x := b.input("x", te.F32, M, N)
	g := b.param("g", te.F32, N)
	bb := b.param("b", te.F32, N)
	mu := b.f32("mu", shp(M), func(a []te.Index) te.Expr {
		return div(sum1(N, func(k te.Index) te.Expr { return ld(x, a[0], k) }), cf(float64(N)))
	})
	va := b.f32("var", shp(M), func(a []te.Index) te.Expr {
		return div(sum1(N, func(k te.Index) te.Expr {
			d := sub(ld(x, a[0], k), ld(mu, a[0]))
			return mul(d, d)
		}), cf(float64(N)))
	})
	y := b.f32("y", shp(M, N), func(a []te.Index) te.Expr {
		return add(mul(mul(sub(ld(x, a[0], a[1]), ld(mu, a[0])), un(te.Rsqrt, add(ld(va, a[0]), cf(1e-5)))), ld(g, a[1])), ld(bb, a[1]))
	})
	return b.outputs(y)
}

// conv2d is PyTorch's conv2d on NCHW with weight [O, C/groups, KH, KW],
// written as the standard library writes it.
func conv2d(N, C, H, W, O, KH, KW, stride, pad, groups int) *te.Program {
	b := newBuilder("conv2d")
	CG, OG := C/groups, O/groups
	OH, OW := (H+2*pad-KH)/stride+1, (W+2*pad-KW)/stride+1
	x := b.input("x", te.F32, N, C, H, W)
	w := b.param("w", te.F32, O, CG, KH, KW)
	y := b.f32("y", shp(N, O, OH, OW), func(a []te.Index) te.Expr {
		return red(te.Sum, []int{CG, KH, KW}, func(k []te.Index) te.Expr {
			h := a[2].Scale(stride).Add(k[1]).AddConst(-pad)
			ww := a[3].Scale(stride).Add(k[2]).AddConst(-pad)
			inb := and(bin(te.Ge, ix(h), ci(0)), bin(te.Lt, ix(h), ci(H)), bin(te.Ge, ix(ww), ci(0)), bin(te.Lt, ix(ww), ci(W)))
			ch := a[1].Div(OG).Scale(CG).Add(k[0])
			return sel(inb, mul(ld(x, a[0], ch, h, ww), ld(w, a[1], k[0], k[1], k[2])), cf(0))
		})
	})
	return b.outputs(y)
}

func depthwise(N, C, H, W, KH, KW, stride, pad int) *te.Program {
	b := newBuilder("depthwise")
	OH, OW := (H+2*pad-KH)/stride+1, (W+2*pad-KW)/stride+1
	x := b.input("x", te.F32, N, C, H, W)
	w := b.param("w", te.F32, C, 1, KH, KW)
	y := b.f32("y", shp(N, C, OH, OW), func(a []te.Index) te.Expr {
		return red(te.Sum, []int{KH, KW}, func(k []te.Index) te.Expr {
			h := a[2].Scale(stride).Add(k[0]).AddConst(-pad)
			ww := a[3].Scale(stride).Add(k[1]).AddConst(-pad)
			inb := and(bin(te.Ge, ix(h), ci(0)), bin(te.Lt, ix(h), ci(H)), bin(te.Ge, ix(ww), ci(0)), bin(te.Lt, ix(ww), ci(W)))
			return sel(inb, mul(ld(x, a[0], a[1], h, ww), ld(w, a[1], c(0), k[0], k[1])), cf(0))
		})
	})
	return b.outputs(y)
}

func lstmCell(B, H int) *te.Program {
	b := newBuilder("lstm_cell")
	x := b.input("x", te.F32, B, H)
	h := b.input("h", te.F32, B, H)
	cc := b.input("c", te.F32, B, H)
	W := b.param("W", te.F32, 4, H, H)
	U := b.param("U", te.F32, 4, H, H)
	bias := b.param("bias", te.F32, 4, H)
	g := b.f32("g", shp(4, B, H), func(a []te.Index) te.Expr {
		return add(add(
			sum1(H, func(k te.Index) te.Expr { return mul(ld(x, a[1], k), ld(W, a[0], k, a[2])) }),
			sum1(H, func(k te.Index) te.Expr { return mul(ld(h, a[1], k), ld(U, a[0], k, a[2])) })),
			ld(bias, a[0], a[2]))
	})
	gate := func(q int, a []te.Index) te.Expr { return ld(g, c(q), a[0], a[1]) }
	c2 := b.f32("c2", shp(B, H), func(a []te.Index) te.Expr {
		return add(mul(un(te.Sigmoid, gate(2, a)), ld(cc, a[0], a[1])), mul(un(te.Sigmoid, gate(0, a)), un(te.Tanh, gate(1, a))))
	})
	h2 := b.f32("h2", shp(B, H), func(a []te.Index) te.Expr {
		return mul(un(te.Sigmoid, gate(3, a)), un(te.Tanh, ld(c2, a[0], a[1])))
	})
	return b.outputs(h2, c2)
}

// reductions reduces over two axes with every kind, small (a thread per
// output) and large (a block per output), and a reduction nested in another
// and one inside a select.
func reductions(M, N1, N2 int) *te.Program {
	b := newBuilder("reductions")
	x := b.input("x", te.F32, M, N1, N2)
	var outs []*te.Tensor
	for _, op := range []te.ReduceOp{te.Sum, te.ReduceMax, te.ReduceMin, te.Prod} {
		outs = append(outs, b.f32(op.String(), shp(M), func(a []te.Index) te.Expr {
			return red(op, []int{N1, N2}, func(k []te.Index) te.Expr {
				v := ld(x, a[0], k[0], k[1])
				if op == te.Prod {
					return add(cf(1), mul(cf(0.1), v))
				}
				return v
			})
		}))
	}
	outs = append(outs, b.f32("nested", shp(M, N1), func(a []te.Index) te.Expr {
		return add(un(te.Exp, red(te.ReduceMax, []int{N2}, func(k []te.Index) te.Expr { return ld(x, a[0], a[1], k[0]) })),
			sum1(N2, func(k te.Index) te.Expr {
				return mul(ld(x, a[0], a[1], k), sum1(N1, func(j te.Index) te.Expr { return ld(x, a[0], j, k) }))
			}))
	}))
	outs = append(outs, b.f32("selred", shp(M, N1), func(a []te.Index) te.Expr {
		return sel(bin(te.Lt, ix(a[1]), ci(N1/2)),
			sum1(N2, func(k te.Index) te.Expr { return ld(x, a[0], a[1], k) }),
			red(te.ReduceMin, []int{N2}, func(k []te.Index) te.Expr { return ld(x, a[0], a[1], k[0]) }))
	}))
	outs = append(outs, b.compute("count", te.I32, shp(M), func(a []te.Index) te.Expr {
		return red(te.Sum, []int{N1, N2}, func(k []te.Index) te.Expr {
			return &te.Cast{To: te.I32, X: bin(te.Gt, ld(x, a[0], k[0], k[1]), cf(0))}
		})
	}))
	return b.outputs(outs...)
}

// dtypes stores in f16 and bf16, computes in f32, and uses i32 and bool
// tensors and a data-dependent select.
func dtypes(M, K, N int) *te.Program {
	b := newBuilder("dtypes")
	x := b.input("x", te.F16, M, K)
	w := b.param("w", te.BF16, K, N)
	y := b.compute("y", te.F16, shp(M, N), func(a []te.Index) te.Expr {
		return sum1(K, func(k te.Index) te.Expr { return mul(ld(x, a[0], k), ld(w, k, a[1])) })
	})
	mask := b.compute("mask", te.Bool, shp(M, N), func(a []te.Index) te.Expr { return bin(te.Gt, ld(y, a[0], a[1]), cf(0)) })
	relu := b.compute("relu", te.BF16, shp(M, N), func(a []te.Index) te.Expr {
		return sel(ld(mask, a[0], a[1]), ld(y, a[0], a[1]), mul(cf(0.01), ld(y, a[0], a[1])))
	})
	idx := b.compute("idx", te.I32, shp(M, N), func(a []te.Index) te.Expr {
		return add(bin(te.Mod, mul(ix(a[0]), ci(3)), ci(5)), bin(te.Div, sub(ix(a[1]), ci(7)), ci(2)))
	})
	cast := b.f32("cast", shp(M, N), func(a []te.Index) te.Expr {
		return add(&te.Cast{To: te.F32, X: ld(idx, a[0], a[1])}, &te.Cast{To: te.F16, X: mul(ld(relu, a[0], a[1]), cf(3.3))})
	})
	return b.outputs(y, mask, relu, idx, cast)
}

// reshapes moves data with div/mod indexes: a reshape, a transpose, a
// padding select and a strided slice.
func reshapes(A, B, C int) *te.Program {
	b := newBuilder("reshapes")
	x := b.input("x", te.F32, A, B*C)
	r := b.f32("r", shp(A*B, C), func(a []te.Index) te.Expr {
		f := a[0].Scale(C).Add(a[1])
		return ld(x, f.Div(B*C), f.Mod(B*C))
	})
	t := b.f32("t", shp(C, A*B), func(a []te.Index) te.Expr { return ld(r, a[1], a[0]) })
	pad := b.f32("pad", shp(C, A*B+4), func(a []te.Index) te.Expr {
		j := a[1].AddConst(-2)
		return sel(and(bin(te.Ge, ix(j), ci(0)), bin(te.Lt, ix(j), ci(A*B))), ld(t, a[0], j), cf(-1))
	})
	slice := b.f32("slice", shp(C, (A*B+4)/2), func(a []te.Index) te.Expr { return ld(pad, a[0], a[1].Scale(2)) })
	return b.outputs(r, t, pad, slice)
}

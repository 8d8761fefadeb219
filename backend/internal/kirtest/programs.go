package kirtest

import (
	"tec/te"
)

// Programs returns small TE programs, by name, for golden tests of the
// emitters: "softmax" (with the row maximum subtracted), "matmul" and
// "conv" (a valid 3×3 convolution), "gather" (an embedding lookup and
// an argmax over it), "argmax" (argmax and argmin over rows long enough
// for a block per row) and "update" (a cache updated in place at a
// run-time position, te.Update), built in Go so that the back end's tests
// need not import the front end.
func Programs() map[string]*te.Program {
	return map[string]*te.Program{"softmax": softmax(), "matmul": matmul(), "conv": conv(), "gather": gather(), "argmax": argmax(), "update": update(), "pool": pool()}
}

// update reads a cache kc, y[i, j] = kc[i, j, 0] + kc[i, j, 3], and
// updates it in place: kc/update[i, j] = x[i, j] * 2 is written to
// kc[i, pos[i], j]. The positions must lie in [0, 8).
func update() *te.Program {
	b := &builder{p: &te.Program{Name: "update"}}
	pos := b.add(&te.Tensor{Name: "pos", Kind: te.Input, DType: te.I32, Shape: []int{2}})
	x := b.placeholder("x", te.Input, 2, 4)
	kc := b.placeholder("kc", te.Input, 2, 8, 4)
	y := b.compute("y", []int{2, 8}, func(ax []te.Index) te.Expr {
		return &te.Binary{Op: te.Add, X: ld(kc, ax[0], ax[1], te.Const(0)), Y: ld(kc, ax[0], ax[1], te.Const(3))}
	})
	u := b.compute("kc/update", []int{2, 4}, func(ax []te.Index) te.Expr {
		return &te.Binary{Op: te.Mul, X: ld(x, ax[0], ax[1]), Y: &te.ConstExpr{Value: 2, DType: te.F32}}
	})
	u.Update = &te.Update{Target: kc, Index: []te.Index{te.VarIndex(u.Axes[0]), {}, te.VarIndex(u.Axes[1])},
		Gather: []te.Expr{nil, ld(pos, te.VarIndex(u.Axes[0])), nil}}
	b.p.Outputs = []*te.Tensor{y, kc}
	return b.p
}

// gather is e[s, d] = wte[ids[s] + 1, d] and best[s] = argmax[d](e[s, d]).
func gather() *te.Program {
	b := &builder{p: &te.Program{Name: "gather"}}
	ids := b.add(&te.Tensor{Name: "ids", Kind: te.Input, DType: te.I32, Shape: []int{5}})
	wte := b.placeholder("wte", te.Param, 12, 8)
	e := b.compute("e", []int{5, 8}, func(ax []te.Index) te.Expr {
		return &te.Load{Tensor: wte, Index: []te.Index{te.Const(1), ax[1]}, Gather: []te.Expr{ld(ids, ax[0]), nil}}
	})
	best := b.add(&te.Tensor{Name: "best", Kind: te.Compute, DType: te.I32, Shape: []int{5}})
	s := te.NewVar("s", 5)
	d := te.NewVar("d", 8)
	best.Axes = []*te.Var{s}
	best.Body = reduce(te.Argmax, []*te.Var{d}, ld(e, te.VarIndex(s), te.VarIndex(d)))
	b.p.Outputs = []*te.Tensor{e, best}
	return b.p
}

// argmax is best[r] = argmax[k](x[r, k]) and low[r] = argmin[k](n[r, k])
// over rows of 100 f32 and i32 values.
func argmax() *te.Program {
	b := &builder{p: &te.Program{Name: "argmax"}}
	x := b.placeholder("x", te.Input, 3, 100)
	n := b.add(&te.Tensor{Name: "n", Kind: te.Input, DType: te.I32, Shape: []int{3, 100}})
	var outs []*te.Tensor
	for i, op := range []te.ReduceOp{te.Argmax, te.Argmin} {
		in := []*te.Tensor{x, n}[i]
		t := b.add(&te.Tensor{Name: []string{"best", "low"}[i], Kind: te.Compute, DType: te.I32, Shape: []int{3}})
		r, k := te.NewVar("r", 3), te.NewVar("k", 100)
		t.Axes = []*te.Var{r}
		t.Body = reduce(op, []*te.Var{k}, ld(in, te.VarIndex(r), te.VarIndex(k)))
		outs = append(outs, t)
	}
	b.p.Outputs = outs
	return b.p
}

type builder struct{ p *te.Program }

func (b *builder) add(t *te.Tensor) *te.Tensor {
	t.ID = len(b.p.Tensors)
	if t.Span.Line == 0 {
		t.Span = te.Span{File: b.p.Name + ".te", Line: 2 + t.ID, Col: 3}
	}
	b.p.Tensors = append(b.p.Tensors, t)
	return t
}

func (b *builder) placeholder(name string, kind te.Kind, shape ...int) *te.Tensor {
	return b.add(&te.Tensor{Name: name, Kind: kind, DType: te.F32, Shape: shape})
}

// compute defines name[axes] = body(axes).
func (b *builder) compute(name string, shape []int, body func(ax []te.Index) te.Expr) *te.Tensor {
	t := &te.Tensor{Name: name, Kind: te.Compute, DType: te.F32, Shape: shape}
	ax := make([]te.Index, len(shape))
	for d, n := range shape {
		v := te.NewVar(string(rune('i'+d)), n)
		t.Axes = append(t.Axes, v)
		ax[d] = te.VarIndex(v)
	}
	t.Body = body(ax)
	return b.add(t)
}

func ld(t *te.Tensor, idx ...te.Index) te.Expr { return &te.Load{Tensor: t, Index: idx} }

func reduce(op te.ReduceOp, axes []*te.Var, body te.Expr) te.Expr {
	return &te.Reduce{Op: op, Axes: axes, Body: body}
}

func softmax() *te.Program {
	b := &builder{p: &te.Program{Name: "softmax"}}
	x := b.placeholder("x", te.Input, 4, 8)
	m := b.compute("m", []int{4}, func(ax []te.Index) te.Expr {
		j := te.NewVar("j", 8)
		return reduce(te.ReduceMax, []*te.Var{j}, ld(x, ax[0], te.VarIndex(j)))
	})
	e := b.compute("e", []int{4, 8}, func(ax []te.Index) te.Expr {
		return &te.Unary{Op: te.Exp, X: &te.Binary{Op: te.Sub, X: ld(x, ax...), Y: ld(m, ax[0])}}
	})
	s := b.compute("s", []int{4}, func(ax []te.Index) te.Expr {
		j := te.NewVar("j", 8)
		return reduce(te.Sum, []*te.Var{j}, ld(e, ax[0], te.VarIndex(j)))
	})
	y := b.compute("y", []int{4, 8}, func(ax []te.Index) te.Expr {
		return &te.Binary{Op: te.Div, X: ld(e, ax...), Y: ld(s, ax[0])}
	})
	b.p.Outputs = []*te.Tensor{y}
	return b.p
}

func matmul() *te.Program {
	b := &builder{p: &te.Program{Name: "matmul"}}
	a := b.placeholder("a", te.Input, 32, 48)
	w := b.placeholder("w", te.Param, 48, 40)
	y := b.compute("y", []int{32, 40}, func(ax []te.Index) te.Expr {
		k := te.NewVar("k", 48)
		return reduce(te.Sum, []*te.Var{k}, &te.Binary{Op: te.Mul, X: ld(a, ax[0], te.VarIndex(k)), Y: ld(w, te.VarIndex(k), ax[1])})
	})
	b.p.Outputs = []*te.Tensor{y}
	return b.p
}

func conv() *te.Program {
	b := &builder{p: &te.Program{Name: "conv"}}
	x := b.placeholder("x", te.Input, 3, 10, 10)
	w := b.placeholder("w", te.Param, 4, 3, 3, 3)
	y := b.compute("y", []int{4, 8, 8}, func(ax []te.Index) te.Expr {
		c, kh, kw := te.NewVar("c", 3), te.NewVar("kh", 3), te.NewVar("kw", 3)
		in := ld(x, te.VarIndex(c), ax[1].Add(te.VarIndex(kh)), ax[2].Add(te.VarIndex(kw)))
		wt := ld(w, ax[0], te.VarIndex(c), te.VarIndex(kh), te.VarIndex(kw))
		return reduce(te.Sum, []*te.Var{c, kh, kw}, &te.Binary{Op: te.Mul, X: in, Y: wt})
	})
	r := b.compute("r", []int{4, 8, 8}, func(ax []te.Index) te.Expr {
		return &te.Binary{Op: te.Max, X: ld(y, ax...), Y: &te.ConstExpr{Value: 0, DType: te.F32}}
	})
	b.p.Outputs = []*te.Tensor{r}
	return b.p
}

// pool is a thread's reductions as backend/lower unrolls them
// (schedule.ReduceUnroll): y[c] = sum[h, w](x[c, h, w]) / 49 over a 7×7
// window (two rows in a body), and d[i] = sum[j](exp(s[i, j] - m[i]))
// with m[i] = max[j](s[i, j]) over rows of 49 (16 points in a body).
func pool() *te.Program {
	b := &builder{p: &te.Program{Name: "pool"}}
	x := b.placeholder("x", te.Input, 3, 7, 7)
	sc := b.placeholder("s", te.Input, 3, 49)
	y := b.compute("y", []int{3}, func(ax []te.Index) te.Expr {
		h, w := te.NewVar("h", 7), te.NewVar("w", 7)
		sum := reduce(te.Sum, []*te.Var{h, w}, ld(x, ax[0], te.VarIndex(h), te.VarIndex(w)))
		return &te.Binary{Op: te.Div, X: sum, Y: &te.ConstExpr{Value: 49, DType: te.F32}}
	})
	m := b.compute("m", []int{3}, func(ax []te.Index) te.Expr {
		j := te.NewVar("j", 49)
		return reduce(te.ReduceMax, []*te.Var{j}, ld(sc, ax[0], te.VarIndex(j)))
	})
	d := b.compute("d", []int{3}, func(ax []te.Index) te.Expr {
		j := te.NewVar("j", 49)
		e := &te.Unary{Op: te.Exp, X: &te.Binary{Op: te.Sub, X: ld(sc, ax[0], te.VarIndex(j)), Y: ld(m, ax[0])}}
		return reduce(te.Sum, []*te.Var{j}, e)
	})
	b.p.Outputs = []*te.Tensor{y, d}
	return b.p
}

// RowStats returns a program of the maximum and the sum of each row of
// x[4, 300]: rows long enough for a block per row, whose threads combine
// their partials with warp shuffles.
func RowStats() *te.Program {
	b := &builder{p: &te.Program{Name: "rowstats"}}
	x := b.placeholder("x", te.Input, 4, 300)
	m := b.compute("m", []int{4}, func(ax []te.Index) te.Expr {
		j := te.NewVar("j", 300)
		return reduce(te.ReduceMax, []*te.Var{j}, ld(x, ax[0], te.VarIndex(j)))
	})
	s := b.compute("s", []int{4}, func(ax []te.Index) te.Expr {
		j := te.NewVar("j", 300)
		return reduce(te.Sum, []*te.Var{j}, &te.Binary{Op: te.Sub, X: ld(x, ax[0], te.VarIndex(j)), Y: ld(m, ax[0])})
	})
	b.p.Outputs = []*te.Tensor{s}
	return b.p
}

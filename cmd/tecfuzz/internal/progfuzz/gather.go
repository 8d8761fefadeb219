package progfuzz

import (
	"fmt"
	"slices"
	"strings"
)

// gather looks a table up along one of its dimensions by ids read at run
// time: eN[i, j, l] = t[l, ids[i, j] + c]. The ids are an i32 input of
// rank 1 or 2 that Feeds fills inside the table (numeric.GatherRanges),
// sometimes with a constant offset; the table is any float tensor in scope
// (an input, a param or a stage the gather reads after it is written). A
// gather copies elements: its magnitude and error are the table's.
func (g *gen) gather() {
	table := g.any()
	d := g.intn(len(table.dims))
	rest := slices.Concat(table.dims[:d], table.dims[d+1:])
	rank := 1 + g.intn(2)
	if len(rest)+rank > 5 {
		rank = 1
	}
	if len(rest)+rank > 5 {
		g.elementwise()
		return
	}
	var idDims []dim
	for {
		idDims = g.randDims(rank)
		n := 1
		for _, x := range slices.Concat(idDims, rest) {
			n *= x.n
		}
		if n <= maxElems {
			break
		}
		rank = 1
	}
	ids := &tensor{name: g.fresh("ids"), dims: idDims, dt: "i32", mag: float64(table.dims[d].n)}
	g.decls = append(g.decls, fmt.Sprintf("input %s: %s", ids.name, ids.shapeText()))
	vs := vars(rank + len(rest))
	at := fmt.Sprintf("%s[%s]", ids.name, strings.Join(vs[:rank], ", "))
	if c := 1 + g.intn(2); table.dims[d].n > c && g.chance(0.3) {
		at = fmt.Sprintf("%s + %d", at, c)
	}
	g.lookup(table, d, at, idDims, vs)
}

// lookup defines eN[vs] = table[..., at, ...]: the gathered dimension d of
// table indexed by at, the ids' dimensions idDims first in eN, then the
// table's other dimensions in order.
func (g *gen) lookup(table *tensor, d int, at string, idDims []dim, vs []string) *tensor {
	rank := len(idDims)
	idx := make([]string, len(table.dims))
	k := rank
	for a := range table.dims {
		if a == d {
			idx[a] = at
			continue
		}
		idx[a] = vs[k]
		k++
	}
	dims := slices.Concat(idDims, table.dims[:d], table.dims[d+1:])
	e := &tensor{name: g.fresh("e"), dims: dims, dt: "f32", mag: table.mag, err: table.err}
	lhs := e.name
	if len(dims) > 0 {
		lhs += "[" + strings.Join(vs[:len(dims)], ", ") + "]"
	}
	return g.define(e, fmt.Sprintf("%s = %s[%s]", lhs, table.name, strings.Join(idx, ", ")))
}

// argIndex defines aN = argmax (or argmin) over the trailing axes of an
// input or param, whose values are exact, so that the reference and the
// simulator see the same ties and choose the same first position; and
// mostly gathers with it: a computed index, taken modulo the table's
// dimension where the positions could pass it.
func (g *gen) argIndex() {
	var srcs []*tensor
	for _, t := range g.floats(func(t *tensor) bool { return t.placeholder && len(t.dims) >= 2 }) {
		srcs = append(srcs, t)
	}
	var src *tensor
	if len(srcs) == 0 {
		src = g.placeholder(g.randDims(2+g.intn(2)), "f32", g.chance(0.3))
	} else {
		src = pick(g, srcs)
	}
	r := len(src.dims)
	k := 1 + g.intn(r-1) // reduce the axes from k on
	vs := vars(r)
	L := 1
	for _, x := range src.dims[k:] {
		L *= x.n
	}
	op := pick(g, []string{"argmax", "argmin"})
	a := &tensor{name: g.fresh("a"), dims: src.dims[:k], dt: "i32", mag: float64(L)}
	g.define(a, fmt.Sprintf("%s[%s] = %s[%s](%s[%s])", a.name, strings.Join(vs[:k], ", "), op,
		strings.Join(vs[k:], ", "), src.name, strings.Join(vs, ", ")))
	if g.chance(0.3) {
		g.mustOut = append(g.mustOut, a)
		return
	}
	table := g.any()
	d := g.intn(len(table.dims))
	rest := len(table.dims) - 1
	if k+rest > 5 {
		g.mustOut = append(g.mustOut, a)
		return
	}
	n := 1
	for _, x := range slices.Concat(a.dims, table.dims[:d], table.dims[d+1:]) {
		n *= x.n
	}
	if n > maxElems {
		g.mustOut = append(g.mustOut, a)
		return
	}
	gvs := vars(k + rest)
	at := fmt.Sprintf("%s[%s]", a.name, strings.Join(gvs[:k], ", "))
	if V := table.dims[d].n; L > V {
		at = fmt.Sprintf("%s %% %s", at, table.dims[d].paren())
	}
	g.lookup(table, d, at, a.dims, gvs)
}

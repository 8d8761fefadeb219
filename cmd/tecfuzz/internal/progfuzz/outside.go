package progfuzz

import (
	"fmt"
	"slices"
	"strings"
)

// The program kinds of this file come from outside testing (issue 23):
// index arithmetic whose values pass 2^31 on the way to an index in
// bounds, params declared in a loop, a masked contraction planned beside a
// matrix-vector stage (on the small-memory random GPUs of Configs), and
// long chains of one operation.

// bigMultipliers are factors that carry an index past 2^31 (and 2^32)
// before a modulo brings it back: products at 32 bits would wrap.
var bigMultipliers = []int{1500000001, 2147483647, 3000000001, 4294967297, 65537 * 65536, 33554432 * 3}

// largeIndex defines a tensor that reads another at (v * M + c) % d on one
// axis, M one of bigMultipliers, or at (v * M + w * M2 + c) % d over two
// axes: the flat offsets of large tensors, folded into a small one.
func (g *gen) largeIndex() {
	src := g.any()
	a := g.intn(len(src.dims))
	d := src.dims[a]
	vs := vars(len(src.dims))
	idx := fmt.Sprintf("(%s * %d + %d) %% %s", vs[a], pick(g, bigMultipliers), g.intn(1000), d.paren())
	if b := g.intn(len(src.dims)); b != a && g.chance(0.5) {
		idx = fmt.Sprintf("(%s * %d + %s * %d + %d) %% %s", vs[a], pick(g, bigMultipliers),
			vs[b], pick(g, bigMultipliers), g.intn(1000), d.paren())
	}
	if g.chance(0.3) { // a floored division of a negative product
		idx = fmt.Sprintf("((0 - %s * %d) / %d) %% %s", vs[a], pick(g, bigMultipliers), 1+g.intn(1<<20), d.paren())
	}
	idxs := slices.Clone(vs)
	idxs[a] = idx
	y := &tensor{name: g.fresh("t"), dims: src.dims, dt: "f32", mag: src.mag, err: src.err}
	g.define(y, fmt.Sprintf("%s[%s] = %s[%s]%s", y.name, strings.Join(vs, ", "), src.name, strings.Join(idxs, ", "),
		g.whereAll(vs, src.dims, 1)))
}

// loopParams is the "Params declared in a loop" example of
// docs/language.md: a param declared in a loop's body is one param per
// step (w.0, w.1, ...), each scaling a running value.
func (g *gen) loopParams() {
	src := g.any()
	S := 1 + g.intn(3)
	h, w := g.fresh("h"), g.fresh("wl")
	y := &tensor{name: g.fresh("t"), dims: src.dims, dt: "f32", mag: src.mag}
	// Each step multiplies by a param element (at most 1) and adds one:
	// the magnitude grows by one a step, and each step rounds once.
	for range S {
		y.mag++
	}
	y.err = src.err + float64(S)*2*y.mag
	g.define(y, fmt.Sprintf(`%s = %s * 1.0
  for s in 0..%d {
    param %s: %s
    %s = %s * %s + 1.0
  }
  %s = %s * 1.0`, h, src.name, S, w, (&tensor{dims: src.dims, dt: "f32"}).shapeText(),
		h, h, w, y.name, h))
}

// maskedMatVec is a matrix-vector projection followed by a masked batched
// contraction over a cache, as a decode step's query and scores are: the
// two stages meet in one kernel at -O3 and up, where their shared arrays
// must fit the GPU's block (issue 23 found a plan that counted fewer
// bytes than the kernel declared).
func (g *gen) maskedMatVec() {
	B := g.newDim(pick(g, []int{1, 2, 4}))
	H := g.newDim(pick(g, []int{1, 2}))
	E := g.newDim(pick(g, []int{8, 16}))
	F := g.newDim(pick(g, []int{32, 64, 128}))
	T := g.newDim(pick(g, []int{8, 16, 24}))
	if F.n*H.n*E.n > maxElems || B.n*H.n*T.n*E.n > maxElems {
		return
	}
	x := g.placeholder([]dim{B, F}, "f32", false)
	w := g.placeholder([]dim{F, {H.n * E.n, fmt.Sprintf("%s * %s", H.paren(), E.paren())}}, "f32", true)
	w.mag = paramMag(w.dims)
	kc := g.placeholder([]dim{B, H, T, E}, "f32", false)
	pos := g.fresh("pos")
	g.decls = append(g.decls, fmt.Sprintf("input %s: i32[%s]", pos, B.s))
	ps := make([]string, B.n)
	for i := range ps {
		ps[i] = fmt.Sprint(g.intn(T.n))
	}
	g.feeds = append(g.feeds, fmt.Sprintf("# feed %s %s", pos, strings.Join(ps, " ")))
	Ff, Ef := float64(F.n), float64(E.n)
	q := &tensor{name: g.fresh("q"), dims: []dim{B, H, E}, dt: "f32", mag: Ff * w.mag}
	q.err = Ff*Ff*w.mag + q.mag
	g.define(q, fmt.Sprintf("%s[b, h, e] = sum[f](%s[b, f] * %s[f, h * %s + e]) where h in 0..%s, e in 0..%s",
		q.name, x.name, w.name, E.paren(), H.s, E.s))
	sc := &tensor{name: g.fresh("t"), dims: []dim{B, H, T}, dt: "f32", mag: max(3, Ef*q.mag)}
	sc.err = Ef*q.err + Ef*Ef*q.mag + sc.mag
	g.define(sc, fmt.Sprintf("%s[b, h, t] = select(t <= %s[b], sum[e](%s[b, h, e] * %s[b, h, t, e]), -3.0)",
		sc.name, pos, q.name, kc.name))
}

// longChain defines a sum of a thousand or more terms of one operation,
// x + x + ... + x as generated code and tools write them: the compiler's
// passes must stay linear in the chain's length. Such a program takes
// seconds over its configurations (2,500 terms: 7 s of CPU), so the kind
// is rare.
func (g *gen) longChain() {
	src := g.any()
	n := pick(g, []int{1000, 1500})
	vs := vars(len(src.dims))
	term := fmt.Sprintf("%s[%s]", src.name, strings.Join(vs, ", "))
	terms := make([]string, n)
	for i := range terms {
		terms[i] = term
	}
	// The partial sums grow to n times the magnitude, each rounded once.
	nf := float64(n)
	y := &tensor{name: g.fresh("t"), dims: src.dims, dt: "f32", mag: nf * src.mag}
	y.err = nf*src.err + nf*y.mag
	g.define(y, fmt.Sprintf("%s[%s] = %s%s", y.name, strings.Join(vs, ", "), strings.Join(terms, " + "),
		g.whereAll(vs, src.dims, 1)))
}

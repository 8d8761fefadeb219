package transform

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"tec/analysis"
	"tec/te"
)

// Horizontal returns p with independent TEs concatenated (paper §6.1).
//
// Two rewrites run, both producing contractions that partition and the
// lowering tile as one:
//
//   - Output concatenation (Fig. 3): independent TEs t_1 … t_n, each
//     f_i(sum(X_i · Y_i)) with an element-wise epilogue f_i (a bias, an
//     activation, or nothing), whose shapes agree except on one axis and
//     whose reductions have the same extents, become one TE H of the sums,
//     concatenated on that axis, whose factors select the member's operand
//     by predicates on the output index. The axis is one that the X_i do
//     not use where the X_i are then equal, so that a shared input is
//     loaded once; otherwise the first axis, as in the paper's figure.
//     Each t_i becomes f_i of its slice of H, which the vertical transform
//     inlines into t_i's consumers.
//   - Reduction concatenation: a TE whose body adds several sums of
//     products over one reduction axis each (x·W + h·U in an LSTM cell)
//     becomes one sum over the concatenated axis, with predicates on the
//     reduction index.
//
// Members of a group are pairwise independent, but that alone does not keep
// the program acyclic once every group is one TE: fusing y with d and b with
// c in a → y → b, c → d, where y and c are independent, makes y's group wait
// for c's and c's for y's. A group is taken only if, with the groups taken
// before it each seen as one node, no path leads from a member back to a
// member; a candidate that would close such a cycle is left out. New TEs get
// names that no tensor of the program has.
//
// A group is found by one sweep of the graph from its leader that stops once
// every later candidate is reached (see grouper), and a group of one is
// never searched for cycles, so chains of statements whose products could
// all be concatenated cost time linear in their length.
func Horizontal(p *te.Program) (*te.Program, error) {
	nu := map[*te.Tensor]*te.Tensor{}
	var ts []*te.Tensor
	// First pass: concatenate the reductions inside each TE.
	for _, t := range p.Tensors {
		if t.Kind != te.Compute {
			nu[t] = t
			ts = append(ts, t)
			continue
		}
		body := (&rewriter{load: redirect(nu)}).expr(t.Body)
		u := copyTensor(t, concatReductions(body))
		nu[t] = u
		ts = append(ts, u)
	}
	outs := make([]*te.Tensor, len(p.Outputs))
	for i, t := range p.Outputs {
		outs[i] = nu[t]
	}
	q := rebuild(p.Name, ts, outs)
	g, err := analysis.NewGraph(q)
	if err != nil {
		return nil, fmt.Errorf("horizontal: %w", err)
	}
	// Second pass: group independent sums of products.
	var cands []*te.Tensor
	for _, t := range q.Tensors {
		if t.Kind == te.Compute && isSumOfProducts(singleTopSum(t.Body)) {
			cands = append(cands, t)
		}
	}
	done := map[*te.Tensor]bool{}
	repl := map[*te.Tensor]*te.Tensor{} // member -> its slice of H
	var hs []*te.Tensor
	fused := newFusion(g)
	names := newTensorNamer(q)
	groups := newGrouper(g, cands)
	for _, t := range cands {
		if done[t] {
			continue
		}
		group := groups.independentGroup(t, done)
		if group = fused.acyclic(group); len(group) < 2 {
			continue
		}
		h, members := concat(group, names)
		if h == nil {
			continue // the members' shapes differ on more than one axis
		}
		for k, m := range group {
			done[m] = true
			repl[m] = members[k]
		}
		fused.add(group)
		hs = append(hs, h)
	}
	if len(hs) == 0 {
		return q, nil
	}
	// Rewrite loads: of a member, to its slice; of anything rewritten, to
	// the new tensor.
	final := map[*te.Tensor]*te.Tensor{}
	visiting := map[*te.Tensor]bool{}
	var cycle *te.Tensor
	var resolve func(t *te.Tensor) *te.Tensor
	resolve = func(t *te.Tensor) *te.Tensor {
		if v, ok := final[t]; ok {
			return v
		}
		if t.Kind != te.Compute {
			final[t] = t
			return t
		}
		if visiting[t] {
			cycle = t
			return t
		}
		visiting[t] = true
		src := t
		if s, ok := repl[t]; ok {
			src = s
		}
		body := (&rewriter{load: func(l *te.Load) te.Expr {
			if v := resolve(l.Tensor); v != l.Tensor {
				return &te.Load{Tensor: v, Index: l.Index, Gather: l.Gather}
			}
			return nil
		}}).expr(src.Body)
		v := copyTensor(src, body)
		final[t] = v
		return v
	}
	var out []*te.Tensor
	for _, t := range q.Tensors {
		out = append(out, resolve(t))
	}
	for i := range outs {
		outs[i] = resolve(outs[i])
	}
	if cycle != nil {
		return nil, fmt.Errorf("horizontal: internal error: fusion made %s depend on itself", cycle.Name)
	}
	return rebuild(p.Name, out, outs), nil
}

// fusion is the groups of TEs that the horizontal transform has fused so
// far, each to become one TE.
type fusion struct {
	g       *analysis.Graph
	groupOf map[*te.Tensor][]*te.Tensor
	// spans are the fused groups' spans of positions in the graph's
	// topological order, by their first position.
	spans []posSpan
}

// posSpan is the least and the greatest position of a group's TEs.
type posSpan struct{ lo, hi int }

func newFusion(g *analysis.Graph) *fusion {
	return &fusion{g: g, groupOf: map[*te.Tensor][]*te.Tensor{}}
}

// add records group as fused.
func (f *fusion) add(group []*te.Tensor) {
	sp := posSpan{lo: math.MaxInt, hi: -1}
	for _, m := range group {
		f.groupOf[m] = group
		p := f.pos(m)
		sp.lo, sp.hi = min(sp.lo, p), max(sp.hi, p)
	}
	i, _ := slices.BinarySearchFunc(f.spans, sp.lo, func(s posSpan, lo int) int { return cmp.Compare(s.lo, lo) })
	f.spans = slices.Insert(f.spans, i, sp)
}

func (f *fusion) pos(t *te.Tensor) int {
	p, _ := f.g.Pos(t)
	return p
}

// horizon returns a position beyond which no TE reaches a member of a
// group whose last position is last. Along an edge of the graph the
// position rises; only a jump within a fused group can lower it, and a
// group that straddles the horizon moves it up to the group's end. So no
// path from beyond the fixpoint comes back to a member.
func (f *fusion) horizon(last int) int {
	for _, sp := range f.spans {
		if sp.lo > last {
			break
		}
		last = max(last, sp.hi)
	}
	return last
}

// acyclic returns group if fusing it keeps the program acyclic, else the
// members, first first, that can be fused without closing a cycle.
func (f *fusion) acyclic(group []*te.Tensor) []*te.Tensor {
	if len(group) < 2 || !f.closesCycle(group) {
		// One TE alone is no cycle: its group would keep only itself.
		return group
	}
	kept := group[:1:1]
	for _, u := range group[1:] {
		if !f.closesCycle(append(kept, u)) {
			kept = append(kept, u)
		}
	}
	return kept
}

// closesCycle reports whether fusing members, pairwise independent TEs, into
// one TE would make it depend on itself: whether a path leads from a member
// to a member, where reaching a TE of a fused group goes on from every TE of
// that group.
//
// The search goes no further than the horizon of the members' last
// position: without it, each search swept everything downstream of the
// members, which made the transform quadratic in the cells of an unrolled
// model.
func (f *fusion) closesCycle(members []*te.Tensor) bool {
	in := map[*te.Tensor]bool{}
	last := 0
	for _, m := range members {
		in[m] = true
		last = max(last, f.pos(m))
	}
	horizon := f.horizon(last)
	seen := map[*te.Tensor]bool{}
	var stack []*te.Tensor
	push := func(t *te.Tensor) {
		node := f.groupOf[t]
		if node == nil {
			node = []*te.Tensor{t}
		}
		for _, u := range node {
			if !seen[u] && f.pos(u) <= horizon {
				seen[u] = true
				stack = append(stack, u)
			}
		}
	}
	for _, m := range members {
		for _, c := range f.g.Consumers(m) {
			push(c)
		}
	}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if in[t] {
			return true
		}
		for _, c := range f.g.Consumers(t) {
			push(c)
		}
	}
	return false
}

// tensorNamer gives out tensor names that no tensor of a program, and no
// name given out before, has.
type tensorNamer struct{ used map[string]bool }

func newTensorNamer(p *te.Program) *tensorNamer {
	n := &tensorNamer{used: map[string]bool{}}
	for _, t := range p.Tensors {
		n.used[t.Name] = true
	}
	return n
}

// fresh returns base if it is free, else the first free base.1, base.2, ….
func (n *tensorNamer) fresh(base string) string {
	s := base
	for i := 1; n.used[s]; i++ {
		s = fmt.Sprintf("%s.%d", base, i)
	}
	n.used[s] = true
	return s
}

// redirect returns a load rewriter that points loads at the new tensors.
func redirect(nu map[*te.Tensor]*te.Tensor) func(*te.Load) te.Expr {
	return func(l *te.Load) te.Expr {
		if v, ok := nu[l.Tensor]; ok && v != l.Tensor {
			return &te.Load{Tensor: v, Index: l.Index, Gather: l.Gather}
		}
		return nil
	}
}

func axisIndexes(axes []*te.Var) []te.Index {
	ix := make([]te.Index, len(axes))
	for d, a := range axes {
		ix[d] = te.VarIndex(a)
	}
	return ix
}

// isSumOfProducts reports whether e is sum[k...](X * Y) of f32 values.
func isSumOfProducts(e te.Expr) bool {
	r, ok := e.(*te.Reduce)
	if !ok || r.Op != te.Sum || te.TypeOf(r) != te.F32 {
		return false
	}
	m, ok := r.Body.(*te.Binary)
	return ok && m.Op == te.Mul && !te.HasReduce(m)
}

// singleTopSum returns the only reduction of e if there is exactly one and
// it is not under a select, else nil.
func singleTopSum(e te.Expr) te.Expr {
	var rs []*te.Reduce
	te.Walk(e, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Reduce:
			rs = append(rs, x)
			return false
		case *te.Select:
			if te.HasReduce(x) {
				rs = append(rs, nil, nil)
			}
			return false
		}
		return true
	})
	if len(rs) != 1 {
		return nil
	}
	return rs[0]
}

// replaceExpr returns e with the node old replaced by new (by identity).
func replaceExpr(e, old, new te.Expr) te.Expr {
	return te.Replace(e, func(x te.Expr) te.Expr {
		if x == old {
			return new
		}
		return nil
	})
}

// compatible reports whether t and u can be concatenated on some axis:
// same rank, shapes that differ on at most one axis, equal reduction
// extents.
func compatible(t, u *te.Tensor) bool {
	if len(t.Shape) != len(u.Shape) || t.DType != u.DType {
		return false
	}
	diff := 0
	for d := range t.Shape {
		if t.Shape[d] != u.Shape[d] {
			diff++
		}
	}
	rt, ru := singleTopSum(t.Body).(*te.Reduce), singleTopSum(u.Body).(*te.Reduce)
	if diff > 1 || len(rt.Axes) != len(ru.Axes) {
		return false
	}
	for i := range rt.Axes {
		if rt.Axes[i].Extent != ru.Axes[i].Extent {
			return false
		}
	}
	return true
}

// concat builds the concatenation H of group and the TEs that replace its
// members (each its epilogue of its slice of H), or returns nil if no one
// axis is the only one on which the members' shapes differ.
func concat(group []*te.Tensor, names *tensorNamer) (*te.Tensor, []*te.Tensor) {
	first := group[0]
	rank := len(first.Shape)
	// Candidate axes: those where the shapes may differ, preferring ones
	// that no X uses with equal X's.
	var axes []int
	for d := range rank {
		ok := true
		for _, m := range group {
			for e := range rank {
				if e != d && m.Shape[e] != first.Shape[e] {
					ok = false
				}
			}
		}
		if ok {
			axes = append(axes, d)
		}
	}
	bestShared := false
	var bestH *te.Tensor
	var bestMembers []*te.Tensor
	for _, d := range axes {
		h, ms, shared := build(group, d)
		if bestH == nil || (shared && !bestShared) {
			bestShared, bestH, bestMembers = shared, h, ms
		}
	}
	if bestH != nil {
		bestH.Name = names.fresh(bestH.Name)
	}
	return bestH, bestMembers
}

// build concatenates group on axis d; shared reports whether the X
// operands coincide (one load of a shared input).
func build(group []*te.Tensor, d int) (*te.Tensor, []*te.Tensor, bool) {
	first := group[0]
	shape := append([]int(nil), first.Shape...)
	offs := make([]int, len(group))
	total := 0
	for i, m := range group {
		offs[i] = total
		total += m.Shape[d]
	}
	shape[d] = total
	name := "hcat"
	for _, m := range group {
		name += "_" + m.Name
	}
	if len(name) > 48 {
		name = fmt.Sprintf("hcat_%s_%d", first.Name, len(group))
	}
	// H holds the sums unrounded (f32, as isSumOfProducts requires): each
	// member rounds once, to its own dtype, after its epilogue.
	h := &te.Tensor{Name: name, Kind: te.Compute, DType: te.F32, Shape: shape, Span: first.Span, Scope: first.Scope}
	for e, n := range shape {
		h.Axes = append(h.Axes, te.NewVar(first.Axes[e].Name, n))
	}
	r0 := singleTopSum(first.Body).(*te.Reduce)
	ks := make([]*te.Var, len(r0.Axes))
	for i, a := range r0.Axes {
		ks[i] = te.NewVar(a.Name, a.Extent)
	}
	var xs, ys []te.Expr
	for i, m := range group {
		r := singleTopSum(m.Body).(*te.Reduce)
		sub := map[*te.Var]te.Index{}
		for e, a := range m.Axes {
			x := te.VarIndex(h.Axes[e])
			if e == d {
				x = x.AddConst(-offs[i])
			}
			sub[a] = x
		}
		for j, a := range r.Axes {
			sub[a] = te.VarIndex(ks[j])
		}
		mul := r.Body.(*te.Binary)
		xs = append(xs, (&rewriter{sub: sub}).expr(mul.X))
		ys = append(ys, (&rewriter{sub: sub}).expr(mul.Y))
	}
	pick := func(es []te.Expr) (te.Expr, bool) {
		same := true
		text := te.FormatExpr(es[0])
		for _, e := range es[1:] {
			if same = te.FormatExpr(e) == text; !same {
				break
			}
		}
		if same {
			return es[0], true
		}
		out := es[len(es)-1]
		for i := len(es) - 2; i >= 0; i-- {
			cond := &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: te.VarIndex(h.Axes[d])}, Y: &te.ConstExpr{Value: float64(offs[i+1]), DType: te.I32}}
			out = &te.Select{Cond: cond, Then: es[i], Else: out}
		}
		return out, false
	}
	x, shared := pick(xs)
	y, _ := pick(ys)
	h.Body = &te.Reduce{Op: te.Sum, Axes: ks, Body: &te.Binary{Op: te.Mul, X: x, Y: y}}
	var sl []*te.Tensor
	for i, m := range group {
		// The member becomes its epilogue applied to its slice of H.
		idx := make([]te.Index, len(m.Shape))
		for e, a := range m.Axes {
			idx[e] = te.VarIndex(a)
			if e == d {
				idx[e] = idx[e].AddConst(offs[i])
			}
		}
		body := replaceExpr(m.Body, singleTopSum(m.Body), &te.Load{Tensor: h, Index: idx})
		sl = append(sl, copyTensor(m, body))
	}
	return h, sl, shared
}

// concatReductions rewrites, bottom-up, every sum of two or more top-level
// added sums of products with one reduction axis each into one sum over the
// concatenated axis.
func concatReductions(e te.Expr) te.Expr {
	var terms []te.Expr
	var flatten func(x te.Expr)
	flatten = func(x te.Expr) {
		if b, ok := x.(*te.Binary); ok && b.Op == te.Add {
			flatten(b.X)
			flatten(b.Y)
			return
		}
		terms = append(terms, x)
	}
	flatten(e)
	var sums []*te.Reduce
	var rest []te.Expr
	for _, x := range terms {
		if r, ok := x.(*te.Reduce); ok && isSumOfProducts(r) && len(r.Axes) == 1 {
			sums = append(sums, r)
			continue
		}
		rest = append(rest, x)
	}
	if len(sums) < 2 {
		return e
	}
	total := 0
	for _, r := range sums {
		total += r.Axes[0].Extent
	}
	k := te.NewVar(sums[0].Axes[0].Name, total)
	var xs, ys []te.Expr
	var offs []int
	off := 0
	for _, r := range sums {
		sub := map[*te.Var]te.Index{r.Axes[0]: te.VarIndex(k).AddConst(-off)}
		mul := r.Body.(*te.Binary)
		xs = append(xs, (&rewriter{sub: sub}).expr(mul.X))
		ys = append(ys, (&rewriter{sub: sub}).expr(mul.Y))
		offs = append(offs, off)
		off += r.Axes[0].Extent
	}
	chain := func(es []te.Expr) te.Expr {
		out := es[len(es)-1]
		for i := len(es) - 2; i >= 0; i-- {
			cond := &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: te.VarIndex(k)}, Y: &te.ConstExpr{Value: float64(offs[i+1]), DType: te.I32}}
			out = &te.Select{Cond: cond, Then: es[i], Else: out}
		}
		return out
	}
	var out te.Expr = &te.Reduce{Op: te.Sum, Axes: []*te.Var{k}, Body: &te.Binary{Op: te.Mul, X: chain(xs), Y: chain(ys)}}
	for _, x := range rest {
		out = &te.Binary{Op: te.Add, X: out, Y: x}
	}
	return out
}

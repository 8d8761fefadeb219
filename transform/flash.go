package transform

import (
	"fmt"
	"math"
	"slices"

	"tec/te"
)

// Flash-decoding: a softmax-weighted reduction over a long axis,
//
//	mx[r] = max[t](sc[r, t])
//	pr[r, t] = exp(sc[r, t] - mx[r])
//	den[r] = sum[t](pr[r, t])
//	ctx[r, e] = sum[t](pr[r, t] * v[r, t, e]) / den[r]
//
// has as many rows r as a decode step has heads, each reducing the whole
// context: a few blocks stream the cache while the others idle.
// SplitSoftmax splits the axis t into C chunks of S = T/C positions, rows
// of their own, and merges them after (Dao et al., "Flash-Decoding for
// long-context inference", 2023; the online-softmax identity of Milakov &
// Gimelshein, 2018):
//
//	mx/chunk[r, c] = max[j](sc[r, c*S + j])                                    m_c
//	den/chunk[r, c] = sum[j](exp(sc[r, c*S + j] - m_c))                        l_c
//	ctx/chunk[r, c, e] = sum[j](exp(sc[r, c*S + j] - m_c) * v[r, c*S + j, e])  o_c
//	mx[r] = max[c](mx/chunk[r, c])                                m
//	den[r] = sum[c](select(m_c > -inf, l_c * exp(m_c - m), 0))
//	ctx[r, e] = sum[c](select(m_c > -inf, o_c[e] * exp(m_c - m), 0)) / den[r]
//
// The weights pr are computed inside the partials against their chunk's
// max (stored in pr's type, as transform.Vertical would inline them), so
// that pr itself is gone. Every tensor stays an ordinary TE, so that every level, the reference
// evaluator and the simulator see the split. A chunk whose positions are
// all masked (-inf, past a decode step's pos[b]) has m_c = -inf and
// exp(-inf - -inf) = NaN partials: the select drops it from the merge
// (at least one chunk is live wherever the unsplit softmax is defined).
// The partials are f32 whatever the precision; the reductions over t
// still skip positions past a run-time mask (contraction.ZeroPast follows
// the -inf through pr's new subtraction).
//
// The scores may be split too (Split.Scores), sc/chunk[r, c, j] =
// sc[r, c*S + j], when nothing else reads them: a chunk's scores, m_c, l_c
// and o_c are then all rows (r, c), one block's chain of stages behind
// block barriers, as hand-written flash-decoding kernels compute a chunk,
// where the unsplit scores are tiles of their own behind a grid sync; and
// the merges are one stage, each recomputing the merged max and the
// denominator it reads (a few loads of the m_c and l_c, computed once
// per element: te.InvariantReductions), one grid sync after the partials
// where the merged max and the sums that read it took two.

// SoftmaxSite is a softmax-weighted reduction that SplitSoftmax can split:
// a max over one axis of a score tensor, the element-wise weights
// exp(score - max) that read it, and the sums over that axis that read
// only those weights, linearly.
type SoftmaxSite struct {
	// Max is the max over the axis (mx), Scores the tensor it reduces (sc).
	Max, Scores *te.Tensor
	// Length is the extent of the reduced axis (T).
	Length int
	// Weights are the tensors exp(Scores - Max) (pr).
	Weights []*te.Tensor
	// Sums are the tensors whose one reduction sums Weights over the
	// axis, times a factor that does not read them (den, ctx).
	Sums []*te.Tensor
	// OwnScores reports that Scores is computed and read only by Max and
	// Weights, so that a split may chunk it too (Split.Scores).
	OwnScores bool

	dim     int                      // the axis's dimension in Scores
	weights map[*te.Tensor]*weight   // by tensor
	sums    map[*te.Tensor]*sumShape // by tensor
}

// weight is how a weight tensor reads the scores and the max.
type weight struct {
	scores, max *te.Load // the loads of exp(scores - max)
	axis        *te.Var  // the weight's own axis along the reduced one
}

// sumShape is how a sum reads a weight.
type sumShape struct {
	reduce *te.Reduce // the sum over the axis: its one reduction
	w      *te.Load   // its load of the weight
	of     *weight
}

// SoftmaxSites returns the softmax-weighted reductions of p that
// SplitSoftmax can split, in program order.
func SoftmaxSites(p *te.Program) []*SoftmaxSite {
	readers := map[*te.Tensor][]*te.Tensor{}
	for _, t := range p.Tensors {
		if t.Body == nil {
			continue
		}
		for _, u := range te.Inputs(t.Body) {
			readers[u] = append(readers[u], t)
		}
	}
	outputs := map[*te.Tensor]bool{}
	for _, t := range p.Outputs {
		outputs[t] = true
	}
	var sites []*SoftmaxSite
	for _, t := range p.Tensors {
		if s := softmaxSite(t, readers, outputs); s != nil {
			sites = append(sites, s)
		}
	}
	return sites
}

// softmaxSite returns the site whose max is mx, or nil.
func softmaxSite(mx *te.Tensor, readers map[*te.Tensor][]*te.Tensor, outputs map[*te.Tensor]bool) *SoftmaxSite {
	r, ok := mx.Body.(*te.Reduce)
	if mx.Kind != te.Compute || mx.Update != nil || !ok || r.Op != te.ReduceMax || len(r.Axes) != 1 {
		return nil
	}
	l, ok := r.Body.(*te.Load)
	if !ok || l.IsGather() {
		return nil
	}
	dim := axisDim(l, r.Axes[0])
	if dim < 0 || r.Axes[0].Extent != l.Tensor.Shape[dim] {
		return nil
	}
	s := &SoftmaxSite{Max: mx, Scores: l.Tensor, Length: r.Axes[0].Extent, dim: dim,
		weights: map[*te.Tensor]*weight{}, sums: map[*te.Tensor]*sumShape{}}
	for _, pr := range readers[mx] {
		w := s.weightOf(pr)
		if w == nil || outputs[pr] || pr.Update != nil {
			return nil
		}
		s.Weights = append(s.Weights, pr)
		s.weights[pr] = w
		for _, u := range readers[pr] {
			if s.sums[u] != nil {
				continue
			}
			sh := sumOf(u, pr, w)
			if sh == nil {
				return nil
			}
			s.Sums = append(s.Sums, u)
			s.sums[u] = sh
		}
	}
	if len(s.Sums) == 0 {
		return nil
	}
	sc := s.Scores
	s.OwnScores = sc.Kind == te.Compute && sc.Update == nil && !outputs[sc] &&
		!slices.ContainsFunc(readers[sc], func(u *te.Tensor) bool { return u != mx && s.weights[u] == nil })
	return s
}

// axisDim returns the one dimension of l indexed by v alone, or -1 when v
// indexes none, several or in another form.
func axisDim(l *te.Load, v *te.Var) int {
	dim := -1
	for d, x := range l.Index {
		if !x.Uses(v) {
			continue
		}
		if u, ok := x.AsVar(); !ok || u != v || dim >= 0 {
			return -1
		}
		dim = d
	}
	return dim
}

// weightOf returns how pr reads the site's scores and max when its body is
// exp(scores[g] - max[h]) with g the max's row h and, along the axis, an
// axis of pr's own; nil otherwise.
func (s *SoftmaxSite) weightOf(pr *te.Tensor) *weight {
	if pr.Kind != te.Compute {
		return nil
	}
	e, ok := pr.Body.(*te.Unary)
	if !ok || e.Op != te.Exp {
		return nil
	}
	d, ok := e.X.(*te.Binary)
	if !ok || d.Op != te.Sub {
		return nil
	}
	sc, ok1 := d.X.(*te.Load)
	m, ok2 := d.Y.(*te.Load)
	if !ok1 || !ok2 || sc.Tensor != s.Scores || m.Tensor != s.Max || sc.IsGather() || m.IsGather() {
		return nil
	}
	a, ok := sc.Index[s.dim].AsVar()
	if !ok || !slices.Contains(pr.Axes, a) {
		return nil
	}
	// scores[g] must be the row max[h] reads: g = the max's load of the
	// scores with the max's axes at h, and the axis at a.
	rowOf := s.rowSub(m.Index)
	want := s.Max.Body.(*te.Reduce).Body.(*te.Load)
	for k, x := range sc.Index {
		if k == s.dim {
			continue
		}
		if x.Uses(a) || !x.Simplify().Equal(want.Index[k].Substitute(rowOf).Simplify()) {
			return nil
		}
	}
	for _, x := range m.Index {
		if x.Uses(a) {
			return nil
		}
	}
	return &weight{scores: sc, max: m, axis: a}
}

// rowSub maps the max's axes to the indexes h.
func (s *SoftmaxSite) rowSub(h []te.Index) func(*te.Var) (te.Index, bool) {
	return func(v *te.Var) (te.Index, bool) {
		for i, a := range s.Max.Axes {
			if a == v {
				return h[i], true
			}
		}
		return te.Index{}, false
	}
}

// sumOf returns how u sums the weight pr over the axis: u has one
// reduction, a sum over one axis k, whose body is pr[…k…] or pr[…k…] times
// a factor that does not read pr, pr read nowhere else; nil otherwise.
func sumOf(u, pr *te.Tensor, w *weight) *sumShape {
	if u.Kind != te.Compute || u.Update != nil {
		return nil
	}
	var reds []*te.Reduce
	loads := 0
	te.Walk(u.Body, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Reduce:
			reds = append(reds, x)
		case *te.Load:
			if x.Tensor == pr {
				loads++
			}
		}
		return true
	})
	if len(reds) != 1 || loads != 1 {
		return nil
	}
	r := reds[0]
	if r.Op != te.Sum || len(r.Axes) != 1 {
		return nil
	}
	l := weightLoad(r.Body, pr)
	if l == nil || l.IsGather() {
		return nil
	}
	k := r.Axes[0]
	ai := slices.Index(pr.Axes, w.axis)
	if v, ok := l.Index[ai].AsVar(); !ok || v != k {
		return nil
	}
	for d, x := range l.Index {
		if d != ai && x.Uses(k) {
			return nil
		}
	}
	return &sumShape{reduce: r, w: l, of: w}
}

// weightLoad returns the load of pr when e is that load or a product with
// it as a factor.
func weightLoad(e te.Expr, pr *te.Tensor) *te.Load {
	if l, ok := e.(*te.Load); ok && l.Tensor == pr {
		return l
	}
	b, ok := e.(*te.Binary)
	if !ok || b.Op != te.Mul {
		return nil
	}
	if l, ok := b.X.(*te.Load); ok && l.Tensor == pr {
		return l
	}
	if l, ok := b.Y.(*te.Load); ok && l.Tensor == pr {
		return l
	}
	return nil
}

// ChunkCounts returns the chunk counts C > 1 that split the site's axis
// into equal chunks of at least minChunk positions, at most maxChunks of
// them, in increasing order.
func (s *SoftmaxSite) ChunkCounts(minChunk, maxChunks int) []int {
	var cs []int
	for c := 2; c <= maxChunks && s.Length/c >= minChunk; c++ {
		if s.Length%c == 0 {
			cs = append(cs, c)
		}
	}
	return cs
}

// Subprogram returns a program of the site alone: its scores (when
// computed), max, weights and sums (see Subprogram), with the sums as
// outputs. The cost model prices a split on it.
func (s *SoftmaxSite) Subprogram() *te.Program {
	own := []*te.Tensor{}
	if s.Scores.Kind == te.Compute {
		own = append(own, s.Scores)
	}
	own = append(own, s.Max)
	own = append(own, s.Weights...)
	own = append(own, s.Sums...)
	return Subprogram(own, s.Sums)
}

// Subprogram returns a program of the compute tensors own alone, with
// the element-wise tensors they read (a decode step's cache after the
// step's update, which transform.Vertical inlines into them), reading
// everything else as inputs (or params) of the same names, shapes and
// types, with outputs (of own) as its outputs: what the cost model prices
// a rewrite of them on.
func Subprogram(own, outputs []*te.Tensor) *te.Program {
	own = slices.Clone(own)
	seen := map[*te.Tensor]bool{}
	for _, t := range own {
		seen[t] = true
	}
	for _, t := range slices.Clone(own) {
		for _, u := range te.Inputs(t.Body) {
			if !seen[u] && u.Kind == te.Compute && u.Update == nil && !te.HasReduce(u.Body) {
				seen[u] = true
				own = append(own, u)
			}
		}
	}
	nu := map[*te.Tensor]*te.Tensor{}
	p := &te.Program{Name: outputs[0].Name}
	add := func(t *te.Tensor) {
		t.ID = len(p.Tensors)
		p.Tensors = append(p.Tensors, t)
	}
	relink := func(l *te.Load) te.Expr {
		if n := nu[l.Tensor]; n != nil {
			l.Tensor = n
			return nil
		}
		ph := &te.Tensor{Name: l.Tensor.Name, Kind: te.Input, DType: l.Tensor.DType, Shape: l.Tensor.Shape}
		if l.Tensor.Kind == te.Param {
			ph.Kind = te.Param
		}
		nu[l.Tensor] = ph
		add(ph)
		l.Tensor = ph
		return nil
	}
	slices.SortFunc(own, func(a, b *te.Tensor) int { return a.ID - b.ID })
	var computed []*te.Tensor
	for _, t := range own {
		r := rewriter{load: relink}
		u := copyTensor(t, r.expr(t.Body))
		u.Update = nil
		nu[t] = u
		computed = append(computed, u)
	}
	for _, u := range computed {
		add(u)
	}
	for _, t := range outputs {
		p.Outputs = append(p.Outputs, nu[t])
	}
	return rebuild(p.Name, p.Tensors, p.Outputs)
}

// A Split says how SplitSoftmax splits a site.
type Split struct {
	// Chunks is the number of chunks (1: the site stays as it is).
	Chunks int
	// Scores splits the scores too, where the site owns them
	// (SoftmaxSite.OwnScores): scores/chunk[..., c, j, ...] =
	// scores[..., c*S + j, ...], which the partials read, and the merges
	// each one stage (the merged max and denominator recomputed where
	// they are read, see inlineMerges). A chunk's scores, max and partial
	// sums are then rows of one tile each, which the partitioner gives
	// one block (a chain of block barriers instead of grid syncs), and
	// the query heads that share a key/value head are not grouped.
	Scores bool
	// Group makes the query heads that share a key/value head the rows
	// of the scores' tiles (GroupRows: sc[b, n, t] becomes sc[b, n / G,
	// n % G, t], its elements where they were), so that a tile loads
	// each key once for the G heads, where a tile per head loaded it G
	// times. It applies where the site's scores have such rows
	// (SoftmaxSite.Groupable) and are not split (Scores), with the site
	// split in chunks or not.
	Group bool
}

// Groupable reports whether the site owns its scores (OwnScores) and
// they have rows that share the loads of a factor (SharedRows), which
// Split.Group groups.
func (s *SoftmaxSite) Groupable() bool {
	_, g := SharedRows(s.Scores)
	return s.OwnScores && g > 1
}

// SplitSoftmax returns p with each of its softmax sites split as split
// says (see the note above and Split); a site given 1 chunk stays as it
// is, but for its scores' rows grouped where Split.Group says, and a count
// that does not divide its axis is an error. split is called once for
// each site.
func SplitSoftmax(p *te.Program, split func(*SoftmaxSite) Split) (*te.Program, error) {
	splits := map[*te.Tensor]Split{} // by max
	group := map[*te.Tensor]bool{}   // scores to group
	sites := SoftmaxSites(p)
	for _, s := range sites {
		sp := split(s)
		splits[s.Max] = sp
		if sp.Group && !sp.Scores && s.Groupable() {
			group[s.Scores] = true
			if sp.Chunks <= 1 {
				// unsplit, the sums too (split, their partials are
				// grouped: partialSum)
				for _, u := range s.Sums {
					group[u] = true
				}
			}
		}
	}
	if len(group) > 0 {
		// Grouped, every site must still be one to split; else the
		// sites are split ungrouped rather than some not at all.
		q, nu := groupRows(p, func(t *te.Tensor) (int, int) {
			if !group[t] {
				return 0, 0
			}
			return SharedRows(t)
		})
		if len(SoftmaxSites(q)) == len(sites) {
			moved := make(map[*te.Tensor]Split, len(splits))
			for t, sp := range splits {
				moved[nu[t]] = sp
			}
			p, splits = q, moved
		}
	}
	byTensor := map[*te.Tensor]*chunked{}      // by max, weight and sum
	chunkedScores := map[*te.Tensor]*chunked{} // by scores, where Split.Scores
	found := false
	for _, s := range SoftmaxSites(p) {
		sp := splits[s.Max]
		c := sp.Chunks
		if c <= 1 {
			continue
		}
		if s.Length%c != 0 {
			return nil, fmt.Errorf("flash-decoding: %d chunks do not divide %s's %d positions", c, s.Max.Name, s.Length)
		}
		ch := &chunked{site: s, c: c, size: s.Length / c, groups: map[*te.Tensor][2]int{}}
		if ch.scores = sp.Scores && s.OwnScores; ch.scores {
			chunkedScores[s.Scores] = ch
		}
		byTensor[s.Max] = ch
		for _, t := range s.Weights {
			byTensor[t] = ch
		}
		for _, t := range s.Sums {
			byTensor[t] = ch
		}
		found = true
	}
	if !found {
		return p, nil
	}
	nu := map[*te.Tensor]*te.Tensor{}
	relink := func(e te.Expr) te.Expr {
		r := rewriter{load: func(l *te.Load) te.Expr {
			if ch := chunkedScores[l.Tensor]; ch != nil {
				return ch.scoresLoad(l)
			}
			if n := nu[l.Tensor]; n != nil {
				l.Tensor = n
			}
			return nil
		}}
		return r.expr(e)
	}
	var ts []*te.Tensor
	for _, t := range p.Tensors {
		ch := byTensor[t]
		switch {
		case t.Kind != te.Compute:
			ts = append(ts, t)
			continue
		case chunkedScores[t] != nil:
			ch := chunkedScores[t]
			ch.scoresChunk = ch.chunkScores(relink)
			ts = append(ts, ch.scoresChunk)
		case ch == nil:
			u := copyTensor(t, relink(t.Body))
			nu[t] = u
			ts = append(ts, u)
		case t == ch.site.Max:
			ch.chunkMax = ch.partialMax(relink)
			u := copyTensor(t, ch.mergedMax())
			nu[t] = u
			ts = append(ts, ch.chunkMax)
			ch.merges = append(ch.merges, u)
		case ch.site.weights[t] != nil:
			// read only by the sums, whose partials compute it against
			// the chunk's max
		default:
			part := ch.partialSum(t, relink)
			u := copyTensor(t, relink(ch.mergedSum(t, part)))
			nu[t] = u
			ts = append(ts, part)
			// The merges after the site's last partial: one grid sync
			// before them all, and the merged max's before the sums'.
			if ch.merges = append(ch.merges, u); len(ch.merges) == 1+len(ch.site.Sums) {
				if ch.scores {
					ch.inlineMerges()
				}
				ts = append(ts, ch.merges...)
			}
		}
	}
	outs := make([]*te.Tensor, len(p.Outputs))
	for i, t := range p.Outputs {
		if outs[i] = nu[t]; outs[i] == nil {
			outs[i] = t
		}
	}
	return rebuild(p.Name, ts, outs), nil
}

// chunked is one site's split into c chunks of size positions.
type chunked struct {
	site     *SoftmaxSite
	c, size  int
	chunkMax *te.Tensor // m_c, the max's axes then the chunk
	// merges are the merged max and sums made so far, placed after the
	// last partial
	merges []*te.Tensor
	// groups[u] is the axis of sum u split into groups, and their size
	// (groupOf); size 0 when none.
	groups map[*te.Tensor][2]int
	// scores says that the scores are chunked too: scoresChunk, the
	// scores with their axis split into the chunk and the position in it,
	// so that a chunk's scores, max and partial sums are rows of one
	// tile each (see Split.Scores).
	scores      bool
	scoresChunk *te.Tensor
}

// inlineMerges recomputes, in each merge, the merges before it that it
// reads (the merged max in the sums, the denominator in the context),
// so that the merges are one stage after the partials' and those it
// inlines are gone unless something else reads them: with the scores
// chunked, a chunk's partials are one block's chain, and the merge
// then costs one grid sync, not one more for each merge that reads
// another.
func (ch *chunked) inlineMerges() {
	done := map[*te.Tensor]bool{}
	for _, u := range ch.merges {
		r := rewriter{load: func(l *te.Load) te.Expr {
			if v := l.Tensor; done[v] {
				return substitute(v, v.Body, l.Index)
			}
			return nil
		}}
		// u is this split's own tensor, which its readers already load
		u.Body = r.expr(u.Body)
		done[u] = true
	}
}

// chunkScores returns the scores with the site's axis split in two, the
// chunk c and the position j in it: scores/chunk[..., c, j, ...] =
// scores[..., c*size + j, ...].
func (ch *chunked) chunkScores(relink func(te.Expr) te.Expr) *te.Tensor {
	sc, d := ch.site.Scores, ch.site.dim
	axes, sub := freshAxes(sc.Axes)
	c := te.NewVar("c", ch.c)
	j := te.NewVar("j", ch.size)
	sub[sc.Axes[d]] = te.VarIndex(c).Scale(ch.size).Add(te.VarIndex(j))
	r := rewriter{sub: sub}
	axes = slices.Replace(axes, d, d+1, c, j)
	shape := slices.Replace(slices.Clone(sc.Shape), d, d+1, ch.c, ch.size)
	return &te.Tensor{Name: sc.Name + "/chunk", Kind: te.Compute, DType: sc.DType,
		Shape: shape, Axes: axes, Body: relink(r.expr(sc.Body)), Span: sc.Span, Scope: sc.Scope}
}

// scoresLoad returns the load of the chunked scores for the load l of the
// scores: its index along the axis, x, becomes x / size and x mod size.
func (ch *chunked) scoresLoad(l *te.Load) te.Expr {
	d := ch.site.dim
	x := l.Index[d].Simplify()
	idx := slices.Replace(slices.Clone(l.Index), d, d+1, x.Div(ch.size).Simplify(), x.Mod(ch.size).Simplify())
	return &te.Load{Tensor: ch.scoresChunk, Index: idx}
}

// negInf returns the constant -inf.
func negInf() te.Expr { return &te.ConstExpr{Value: math.Inf(-1), DType: te.F32} }

// partialMax returns m_c[r, c] = max[j](scores[r, c*size + j]).
func (ch *chunked) partialMax(relink func(te.Expr) te.Expr) *te.Tensor {
	mx := ch.site.Max
	axes, sub := freshAxes(mx.Axes)
	c := te.NewVar("c", ch.c)
	j := te.NewVar("j", ch.size)
	l := mx.Body.(*te.Reduce).Body.(*te.Load)
	sub[mx.Body.(*te.Reduce).Axes[0]] = te.VarIndex(c).Scale(ch.size).Add(te.VarIndex(j))
	r := rewriter{sub: sub}
	body := &te.Reduce{Op: te.ReduceMax, Axes: []*te.Var{j}, Body: relink(r.expr(l))}
	return &te.Tensor{Name: mx.Name + "/chunk", Kind: te.Compute, DType: mx.DType,
		Shape: append(slices.Clone(mx.Shape), ch.c), Axes: append(axes, c), Body: body,
		Span: mx.Span, Scope: mx.Scope}
}

// mergedMax returns the max's new body: max[c](m_c[r, c]).
func (ch *chunked) mergedMax() te.Expr {
	c := te.NewVar("c", ch.c)
	idx := append(varIndexes(ch.site.Max.Axes), te.VarIndex(c))
	return &te.Reduce{Op: te.ReduceMax, Axes: []*te.Var{c}, Body: &te.Load{Tensor: ch.chunkMax, Index: idx}}
}

// inlineWeight returns, for a load l of a weight inside a partial sum
// (its index over the chunk c already substituted), the weight's value
// against m_c: exp(scores - m_c[row, c]), stored in the weight's type as
// the weight would have been (transform.Vertical's rule).
func (ch *chunked) inlineWeight(l *te.Load, c *te.Var) te.Expr {
	pr := l.Tensor
	w := ch.site.weights[pr]
	sub := map[*te.Var]te.Index{}
	for i, a := range pr.Axes {
		sub[a] = l.Index[i]
	}
	r := rewriter{sub: sub}
	sc := r.expr(w.scores)
	row := make([]te.Index, len(w.max.Index))
	for i, x := range w.max.Index {
		row[i] = r.index(x).Simplify()
	}
	m := &te.Load{Tensor: ch.chunkMax, Index: append(row, te.VarIndex(c))}
	var e te.Expr = &te.Unary{Op: te.Exp, X: &te.Binary{Op: te.Sub, X: sc, Y: m}}
	if pr.DType != te.F32 {
		e = &te.Cast{To: pr.DType, X: e}
	}
	return e
}

// chunkAt returns the position of the chunk axis among the partial sum's
// axes: after the last of u's axes that its weight's row depends on.
func (ch *chunked) chunkAt(u *te.Tensor) int {
	at := 0
	for _, x := range ch.maxIndex(u) {
		for _, v := range x.Vars() {
			if i := slices.Index(u.Axes, v); i >= at {
				at = i + 1
			}
		}
	}
	return at
}

// maxIndex returns the row of m_c (without the chunk) that sum u's
// weight load reads, over u's variables.
func (ch *chunked) maxIndex(u *te.Tensor) []te.Index {
	sh := ch.site.sums[u]
	pr := sh.w.Tensor
	sub := map[*te.Var]te.Index{}
	for i, a := range pr.Axes {
		sub[a] = sh.w.Index[i]
	}
	r := rewriter{sub: sub}
	out := make([]te.Index, len(sh.of.max.Index))
	for i, x := range sh.of.max.Index {
		out[i] = r.index(x).Simplify()
	}
	return out
}

// partialSum returns sum u's partial over each chunk, u's axes with the
// chunk c inserted at chunkAt(u): the body of u's reduction with its axis
// at c*size + j, summed over j, in f32. Where the factor beside the
// weight reads an axis n of u only as n / G (grouped-query attention:
// G query heads share a key/value head), n becomes two axes, n / G and,
// right after the chunk, n % G: the G rows then share each load of the
// factor as rows of one matrix-vector tile (see groupOf).
func (ch *chunked) partialSum(u *te.Tensor, relink func(te.Expr) te.Expr) *te.Tensor {
	sh := ch.site.sums[u]
	axes, sub := freshAxes(u.Axes)
	shape := slices.Clone(u.Shape)
	c := te.NewVar("c", ch.c)
	j := te.NewVar("j", ch.size)
	sub[sh.reduce.Axes[0]] = te.VarIndex(c).Scale(ch.size).Add(te.VarIndex(j))
	var h *te.Var
	gi, g := groupOf(u, sh)
	if ch.scores {
		// a chunk's scores are one row of its tile: so must the sums'
		// be, each query head a tile of its own
		gi, g = 0, 0
	}
	if g > 1 {
		a := u.Axes[gi]
		axes[gi] = te.NewVar(a.Name, a.Extent/g)
		h = te.NewVar(a.Name+"_g", g)
		shape[gi] = a.Extent / g
		sub[a] = te.VarIndex(axes[gi]).Scale(g).Add(te.VarIndex(h))
	}
	r := rewriter{sub: sub, load: func(l *te.Load) te.Expr {
		for d, x := range l.Index {
			l.Index[d] = x.Simplify()
		}
		if ch.site.weights[l.Tensor] != nil {
			return ch.inlineWeight(l, c)
		}
		return nil
	}}
	body := &te.Reduce{Op: te.Sum, Axes: []*te.Var{j}, Body: relink(r.expr(sh.reduce.Body))}
	at := ch.chunkAt(u)
	axes, shape = slices.Insert(axes, at, c), slices.Insert(shape, at, ch.c)
	if h != nil {
		axes, shape = slices.Insert(axes, at+1, h), slices.Insert(shape, at+1, g)
	}
	ch.groups[u] = [2]int{gi, g}
	return &te.Tensor{Name: u.Name + "/chunk", Kind: te.Compute, DType: te.F32,
		Shape: shape, Axes: axes, Body: body, Span: u.Span, Scope: u.Scope}
}

// groupOf returns an axis of u (its position) and a group size G > 1 such
// that the loads of u's reduction other than the weight read that axis n
// only as n / G, or G = 0 when there is none. The weight's rows then run
// over n while the factor's run over n / G.
func groupOf(u *te.Tensor, sh *sumShape) (int, int) {
	for ai, a := range u.Axes {
		g, ok := 0, true
		te.Walk(sh.reduce.Body, func(x te.Expr) bool {
			l, isLoad := x.(*te.Load)
			if !isLoad || l.Tensor == sh.w.Tensor || !ok {
				return ok
			}
			for _, ix := range l.Index {
				for _, t := range ix.Terms {
					switch {
					case t.Atom.Op == te.AtomVar && t.Atom.Var == a:
						ok = false
					case t.Atom.Op == te.AtomDiv && t.Atom.Arg.Equal(te.VarIndex(a)):
						if g != 0 && g != t.Atom.Divisor {
							ok = false
						}
						g = t.Atom.Divisor
					case t.Atom.Op != te.AtomVar && t.Atom.Arg.Uses(a):
						ok = false
					}
				}
			}
			return ok
		})
		if ok && g > 1 && g <= maxGroup && a.Extent%g == 0 {
			return ai, g
		}
	}
	return 0, 0
}

// maxGroup bounds the rows that grouping gives a partial's tiles (the
// partitioner's matrix-vector tiles take at most 8).
const maxGroup = 8

// mergedSum returns u's new body: its reduction replaced by the sum over
// the chunks of the live partials rescaled to the merged max,
// select(m_c > -inf, part * exp(m_c - m), 0), over the original tensors
// but m_c and part.
func (ch *chunked) mergedSum(u, part *te.Tensor) te.Expr {
	sh := ch.site.sums[u]
	c := te.NewVar("c", ch.c)
	row := ch.maxIndex(u)
	mc := &te.Load{Tensor: ch.chunkMax, Index: append(slices.Clone(row), te.VarIndex(c))}
	m := &te.Load{Tensor: ch.site.Max, Index: row}
	pidx := varIndexes(u.Axes)
	at := ch.chunkAt(u)
	pidx = slices.Insert(pidx, at, te.VarIndex(c))
	if gr := ch.groups[u]; gr[1] > 1 {
		n := te.VarIndex(u.Axes[gr[0]])
		pidx[gr[0]] = n.Div(gr[1])
		pidx = slices.Insert(pidx, at+1, n.Mod(gr[1]))
	}
	scaled := &te.Binary{Op: te.Mul, X: &te.Load{Tensor: part, Index: pidx},
		Y: &te.Unary{Op: te.Exp, X: &te.Binary{Op: te.Sub, X: mc, Y: m}}}
	live := &te.Binary{Op: te.Gt, X: mc, Y: negInf()}
	merged := &te.Reduce{Op: te.Sum, Axes: []*te.Var{c},
		Body: &te.Select{Cond: live, Then: scaled, Else: &te.ConstExpr{Value: 0, DType: te.F32}}}
	return replaceExpr(u.Body, sh.reduce, merged)
}

// freshAxes returns new variables like axes and the substitution of them
// for axes.
func freshAxes(axes []*te.Var) ([]*te.Var, map[*te.Var]te.Index) {
	out := make([]*te.Var, len(axes))
	sub := map[*te.Var]te.Index{}
	for i, a := range axes {
		out[i] = te.NewVar(a.Name, a.Extent)
		sub[a] = te.VarIndex(out[i])
	}
	return out, sub
}

// varIndexes returns the index of each variable.
func varIndexes(vs []*te.Var) []te.Index {
	out := make([]te.Index, len(vs))
	for i, v := range vs {
		out[i] = te.VarIndex(v)
	}
	return out
}

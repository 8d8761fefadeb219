package partition

import (
	"math"
	"slices"

	"tec/schedule"
	"tec/te"
)

// A matrix-vector stage (schedule.Schedule.MatVec) with one row computes, in tile
// t, its output columns [t·W, (t+1)·W): a run of W elements, like a Rows
// stage's tile. Its consumers in a decode step read it at columns that
// depend on theirs in ways readsRows does not describe: RoPE reads the
// columns of its head in a slice of a concatenated projection, and its
// partner ±DH/2 under a select on the head's index; SwiGLU reads gate and
// up at its own column, in two slices of one concatenation. fitDeps finds
// such dependences by evaluating the consumer's loads of the producer at
// every point of the consumer, following selects whose conditions depend
// on indices alone, and fits them to TileDep's form: consumer elements
// sharing their first l axes read producer elements [Offset + p·Span,
// Offset + (p+1)·Span) for their prefix p, checked at every point. A
// consumer that reads every column (another matrix-vector stage) fits no
// narrow span and keeps its grid sync.

// maxFitPoints bounds the consumer points fitDeps evaluates.
const maxFitPoints = 1 << 16

// matVecWidth returns the columns of a tile of u, and its rows, when u
// is a matrix-vector stage of rows × cols with no batch, whose tile t
// computes its columns [t·W, (t+1)·W) of every row.
func matVecWidth(u *te.Tensor, s *schedule.Schedule) (w, rows int, ok bool) {
	mv := s.MatVec
	if s.Kind != schedule.Contraction || mv == nil || s.EpilogueOf != nil || mv.Wide != 1 || s.Tiles != mv.NT || len(u.Shape) != 2 {
		return 0, 0, false
	}
	if u.Shape[0] != s.TileM || u.Shape[1] != s.Tiles*mv.Width() {
		return 0, 0, false
	}
	return mv.Width(), s.TileM, true
}

// matVecDeps returns the dependences of stage y's tiles on the
// matrix-vector stage u (see the top of this file), one per slice of u
// that y reads, with the producer tiles grouped so that a tile of y waits
// on as few counters as it can; group is u's group if an earlier
// dependence fixed it, else 0.
func matVecDeps(pl *Plan, y *te.Tensor, sy *schedule.Schedule, u *te.Tensor, su *schedule.Schedule, group int) ([]TileDep, bool) {
	best, ok := matVecFit(pl, y, sy, u, su)
	return grouped(best, group), ok
}

// matVecFit is the package's matVecFit for pl's threads, remembered in
// pl.fits while that is set. The dependences are a copy the caller may
// group.
func (pl *Plan) matVecFit(y *te.Tensor, sy *schedule.Schedule, u *te.Tensor, su *schedule.Schedule) ([]TileDep, bool) {
	key := fitKey{y, u, sy, su}
	r, known := pl.fits[key]
	if !known {
		r.deps, r.ok = matVecFit(pl, y, sy, u, su)
		if pl.fits != nil {
			pl.fits[key] = r
		}
	}
	return slices.Clone(r.deps), r.ok
}

// matVecFit returns the dependences of matVecDeps before grouping: the
// fit of y's reads of u that waits on the fewest producer tiles. Finding
// it evaluates every read of y, so callers that try several groups fit
// once and group copies (see preferredGroups).
func matVecFit(pl *Plan, y *te.Tensor, sy *schedule.Schedule, u *te.Tensor, su *schedule.Schedule) ([]TileDep, bool) {
	w, rows, ok := matVecWidth(u, su)
	if !ok {
		return nil, false
	}
	ty, cy, ok := tiling(y, sy, pl.Threads)
	if !ok {
		return nil, false
	}
	// With several rows, y must read u in the row of its first index
	// only; its elements then count within their row, and u's by column.
	row := 0
	if rows > 1 {
		if len(y.Shape) < 2 || y.Shape[0] != rows || !readsRows(y, u, 1) {
			return nil, false
		}
		row = y.NumElements() / rows
	}
	reads, ok := pl.readPoints(y, u, rows > 1, false)
	if !ok {
		return nil, false
	}
	base := TileDep{Producer: u, Tile: ty, N: y.NumElements(), Width: w, Tiles: su.Tiles, Row: row, Chunks: cy}
	// The fit that reads the fewest producer tiles: all loads together,
	// or each load apart.
	var best []TileDep
	if d, ok := fitReads(base, y, reads, nil); ok {
		best = []TileDep{d}
	}
	// One dependence per load of u (a slice of a concatenation each).
	var each []TileDep
	for _, ld := range loadsOf(y, u) {
		d, ok := fitReads(base, y, reads, ld)
		if !ok {
			each = nil
			break
		}
		if !containsDep(each, d) {
			each = append(each, d)
		}
	}
	if each != nil && (best == nil || waits(each) < waits(best)) {
		best = each
	}
	return best, best != nil
}

// grouped gives deps the group of producer tiles per counter: group, or
// where it is 0 the best for the first dependence.
func grouped(deps []TileDep, group int) []TileDep {
	if len(deps) > 0 && group == 0 {
		group = bestGroup(deps[0])
	}
	for i := range deps {
		deps[i].Group = group
	}
	return deps
}

// waits returns the most waits of a consumer tile on deps (the most
// producer tiles it reads, before grouping).
func waits(deps []TileDep) int {
	n := 0
	for _, d := range deps {
		n += d.Most()
	}
	return n
}

// containsDep reports whether deps holds d.
func containsDep(deps []TileDep, d TileDep) bool {
	for _, x := range deps {
		if x == d {
			return true
		}
	}
	return false
}

// bestGroup returns the tiles per counter, a power of two no larger than
// the most tiles a consumer tile reads, that makes the fewest waits per
// consumer tile, the smallest such.
func bestGroup(d TileDep) int {
	d.Group = 1
	most := d.Most()
	best, fewest := 1, most
	for g := 2; g <= most; g *= 2 {
		d.Group = g
		if m := d.Most(); m < fewest {
			best, fewest = g, m
		}
	}
	return best
}

// readPoints returns every read of u by y, or false where y's reads of u
// depend on data, or y has too many points. byColumn records u's element
// by its column (its last index), not its flat index. A load under a
// reduction whose indexes do not use the reduction's axes reads at the
// consumer point's own element. One whose indexes do reads at every point
// of the reduction's range: with ranges set, where its indexes are affine
// in the reduction's axes (plain terms, no division), the reads at the
// corners of that range bound them, and readPoints records those;
// otherwise it fails (a row statistic of a matrix-vector stage reads all
// its columns, which a grid sync serves better than one counter that
// every tile signals).
//
// The reads of every producer of y are found in one walk of y's points
// (pointReads) and, while the plan's counters are placed, remembered:
// a stage that reads the T steps of an unrolled scan was walked once per
// step, which made placing counters quadratic in T (issue 23).
func (pl *Plan) readPoints(y, u *te.Tensor, byColumn, ranges bool) ([]read, bool) {
	key := readKey{y, byColumn, ranges}
	rs, known := pl.reads[key]
	if !known {
		rs = pointReads(y, byColumn, ranges)
		if pl.reads != nil {
			pl.reads[key] = rs
		}
	}
	if !rs.ok || rs.bad[u] {
		return nil, false
	}
	reads := rs.reads[u]
	return reads, len(reads) > 0
}

// pointReads returns every read of every compute tensor by y, point by
// point, as readPoints describes them.
func pointReads(y *te.Tensor, byColumn, ranges bool) readSet {
	n := y.NumElements()
	if n > maxFitPoints || len(y.Axes) != len(y.Shape) {
		return readSet{}
	}
	rs := readSet{reads: map[*te.Tensor][]read{}, bad: map[*te.Tensor]bool{}, ok: true}
	env := map[*te.Var]int{}
	val := func(v *te.Var) int {
		x, ok := env[v]
		if !ok {
			return -1 << 40
		}
		return x
	}
	// What does not change from point to point is found once: whether a
	// reduction reads a compute tensor, and a load's corner variables
	// under the reductions around it (named by the chain of those
	// reductions).
	readsCompute := map[*te.Reduce]bool{}
	type frame struct {
		outer int
		red   *te.Reduce
	}
	frames := map[frame]int{}
	type cornerKey struct {
		load  *te.Load
		frame int
	}
	type cornerSet struct {
		vars   []*te.Var
		affine bool
	}
	corners := map[cornerKey]cornerSet{}
	ranging := map[*te.Var]bool{} // axes of the reductions around
	chains := map[*te.Select]*selectChain{}
	at, cur := 0, 0
	var visit func(e te.Expr)
	visit = func(e te.Expr) {
		te.Walk(e, func(x te.Expr) bool {
			switch x := x.(type) {
			case *te.Select:
				ch, seen := chains[x]
				if !seen {
					ch = chainOf(x)
					chains[x] = ch
				}
				if ch != nil {
					if v, known := indexValue(ch.x, val); known {
						visit(ch.pick(v))
						return false
					}
				}
				if c, known := indexCond(x.Cond, val); known {
					if c {
						visit(x.Then)
					} else {
						visit(x.Else)
					}
					return false
				}
			case *te.Reduce:
				in, seen := readsCompute[x]
				if !seen {
					in = slices.ContainsFunc(te.Inputs(x.Body), func(t *te.Tensor) bool { return t.Kind == te.Compute })
					readsCompute[x] = in
				}
				if !in {
					return false
				}
				f := frame{cur, x}
				id, known := frames[f]
				if !known {
					id = len(frames) + 1
					frames[f] = id
				}
				outer := cur
				cur = id
				for _, a := range x.Axes {
					ranging[a] = true
				}
				visit(x.Body)
				for _, a := range x.Axes {
					delete(ranging, a)
				}
				cur = outer
				return false
			case *te.Load:
				u := x.Tensor
				if u.Kind != te.Compute || rs.bad[u] {
					return true
				}
				if x.IsGather() {
					rs.bad[u] = true
					return true
				}
				key := cornerKey{x, cur}
				cs, known := corners[key]
				if !known {
					cs.vars, cs.affine = rangingVars(x, env, ranging)
					corners[key] = cs
				}
				if !cs.affine || len(cs.vars) > 0 && !ranges {
					rs.bad[u] = true
					return true
				}
				r := read{at: at, lo: math.MaxInt, hi: math.MinInt, load: x}
				for c := range 1 << len(cs.vars) {
					for i, v := range cs.vars {
						env[v] = 0
						if c>>i&1 == 1 {
							env[v] = v.Extent - 1
						}
					}
					elem := 0
					for d, ix := range x.Index {
						elem = elem*u.Shape[d] + ix.Eval(val)
					}
					if byColumn && len(u.Shape) > 0 { // a scalar's one element is its column 0
						elem %= u.Shape[len(u.Shape)-1]
					}
					r.lo, r.hi = min(r.lo, elem), max(r.hi, elem)
				}
				rs.reads[u] = append(rs.reads[u], r)
				for _, v := range cs.vars {
					delete(env, v)
				}
			}
			return true
		})
	}
	for at = range n {
		rest := at
		for d := len(y.Shape) - 1; d >= 0; d-- {
			env[y.Axes[d]] = rest % y.Shape[d]
			rest /= y.Shape[d]
		}
		visit(y.Body)
	}
	return rs
}

// maxCornerVars bounds the reduction axes one load's index may range
// over in readPoints (its corners are 2 to that power).
const maxCornerVars = 4

// rangingVars returns the axes of the reductions around load x (ranging)
// that its indexes use, and whether every other variable they use is bound
// in env and the reduction axes appear only as plain terms, so that the
// load's element is affine in them.
func rangingVars(x *te.Load, env map[*te.Var]int, ranging map[*te.Var]bool) ([]*te.Var, bool) {
	var corners []*te.Var
	for _, ix := range x.Index {
		for _, v := range ix.Vars() {
			if _, bound := env[v]; bound {
				continue
			}
			if !ranging[v] {
				return nil, false
			}
			if !slices.Contains(corners, v) {
				corners = append(corners, v)
			}
		}
		for _, t := range ix.Terms {
			if t.Atom.Op != te.AtomVar && slices.ContainsFunc(t.Atom.Arg.Vars(), func(v *te.Var) bool { return ranging[v] }) {
				return nil, false
			}
		}
	}
	return corners, len(corners) <= maxCornerVars
}

// loadsOf returns y's loads of u.
func loadsOf(y, u *te.Tensor) []*te.Load {
	var out []*te.Load
	te.Walk(y.Body, func(x te.Expr) bool {
		if ld, ok := x.(*te.Load); ok && ld.Tensor == u {
			out = append(out, ld)
		}
		return true
	})
	return out
}

// A selectChain is a chain of selects on thresholds of one index,
// select(x < limits[0], thens[0], select(x < limits[1], thens[1], ...
// last)), with limits ascending: a horizontal concatenation of many
// tensors (transform.Horizontal) or a stack of an unrolled loop's steps
// selects its part so. pick finds the branch at a point by binary search,
// where walking the chain would take time linear in its length at every
// point (issue 23: an unrolled scan of T steps was quadratic in T).
type selectChain struct {
	x      te.Expr
	limits []int
	thens  []te.Expr
	last   te.Expr
}

// minChain is the shortest chain of selects that chainOf describes.
const minChain = 4

// chainOf returns the chain of selects that s begins, or nil if s does not
// begin one of at least minChain selects.
func chainOf(s *te.Select) *selectChain {
	ch := &selectChain{}
	var e te.Expr = s
	for {
		x, ok := e.(*te.Select)
		if !ok {
			break
		}
		b, ok := x.Cond.(*te.Binary)
		if !ok || b.Op != te.Lt && b.Op != te.Le {
			break
		}
		ix, ok := b.X.(*te.IndexExpr)
		k, isConst := b.Y.(*te.ConstExpr)
		if !ok || !isConst || k.Value != float64(int(k.Value)) {
			break
		}
		if ch.x == nil {
			ch.x = ix
		} else if !ix.Index.Equal(ch.x.(*te.IndexExpr).Index) {
			break
		}
		limit := int(k.Value)
		if b.Op == te.Le {
			limit++ // x <= k is x < k+1
		}
		if n := len(ch.limits); n > 0 && limit < ch.limits[n-1] {
			break
		}
		ch.limits = append(ch.limits, limit)
		ch.thens = append(ch.thens, x.Then)
		e = x.Else
	}
	if len(ch.limits) < minChain {
		return nil
	}
	// The chain ends where its pattern does: the rest is its last branch.
	ch.last = e
	return ch
}

// pick returns the branch the chain selects where its index is v.
func (ch *selectChain) pick(v int) te.Expr {
	i, _ := slices.BinarySearchFunc(ch.limits, v, func(limit, v int) int {
		if limit <= v {
			return -1
		}
		return 1
	})
	if i < len(ch.limits) {
		return ch.thens[i]
	}
	return ch.last
}

// fitReads fits the reads (those of load ld, or all where ld is nil) to
// base with the most leading axes of y it can: the consumer elements of
// prefix p read within [Offset + p·Span, Offset + (p+1)·Span), which
// lies in the producer, or failing that within [Offset + (p/Div)·Span,
// Offset + (p/Div+1)·Span) for Div consecutive prefixes that read alike
// (see TileDep.Div).
func fitReads(base TileDep, y *te.Tensor, reads []read, ld *te.Load) (TileDep, bool) {
	for l := len(y.Shape); l >= 0; l-- {
		prefix := product(y.Axes[l:])
		lo, hi := map[int]int{}, map[int]int{}
		var ps []int
		for _, r := range reads {
			if ld != nil && r.load != ld {
				continue
			}
			at := r.at
			if base.Row > 0 {
				at %= base.Row
			}
			p := at / prefix
			if _, seen := lo[p]; !seen {
				lo[p], hi[p] = r.lo, r.hi
				ps = append(ps, p)
			}
			lo[p], hi[p] = min(lo[p], r.lo), max(hi[p], r.hi)
		}
		if len(ps) == 0 {
			return TileDep{}, false
		}
		slices.Sort(ps)
		n := base.N
		if base.Row > 0 {
			n = base.Row
		}
		for _, div := range []int{1, sameRun(ps, lo, hi)} {
			if div < 1 || div > 1 && (ps[0] != 0 || te.CeilDiv(n, prefix)%div != 0) {
				continue
			}
			if span, off, ok := fitSpan(ps, lo, hi, div, te.CeilDiv(n, prefix)/div, base.Width*base.Tiles); ok {
				d := base
				d.Prefix, d.Span, d.Offset = prefix, span, off
				if div > 1 {
					d.Div = div
				}
				return d, true
			}
		}
	}
	return TileDep{}, false
}

// sameRun returns how many prefixes from the first of ps (sorted) read
// the same range, or 0 if that is all of them.
func sameRun(ps []int, lo, hi map[int]int) int {
	for i, p := range ps {
		if p != ps[0]+i {
			return 0
		}
		if lo[p] != lo[ps[0]] || hi[p] != hi[ps[0]] {
			return i
		}
	}
	return 0
}

// fitSpan fits the ranges [lo[p], hi[p]] of prefixes ps, each prefix p
// taken as q = p/div, to [off + q·span, off + (q+1)·span) for q < groups,
// within the producer's size elements, and returns span and off.
func fitSpan(ps []int, lo, hi map[int]int, div, groups, size int) (span, off int, ok bool) {
	q0 := ps[0] / div
	for _, p := range ps {
		q0 = min(q0, p/div)
	}
	loQ := lo[ps[0]]
	for _, p := range ps {
		if p/div == q0 {
			loQ = min(loQ, lo[p])
		}
	}
	hiQ := loQ
	for _, p := range ps {
		if p/div == q0 {
			hiQ = max(hiQ, hi[p])
		}
	}
	span = hiQ - loQ + 1
	for _, p := range ps {
		if q := p / div; q != q0 {
			if (lo[p]-loQ)%(q-q0) != 0 {
				span = 0
				break
			}
			span = (lo[p] - loQ) / (q - q0)
			break
		}
	}
	if span < 1 {
		return 0, 0, false
	}
	off = loQ - q0*span
	ok = off >= 0 && off+groups*span <= size
	for _, p := range ps {
		q := p / div
		ok = ok && lo[p] >= off+q*span && hi[p] < off+(q+1)*span
	}
	return span, off, ok
}

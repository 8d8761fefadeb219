package lang

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// resolveRanges gives every index variable and reduction axis of a definition
// its extent: from a where clause, or from the accesses that use it directly
// as an index, which must agree. It reports the variables whose range cannot be
// known and returns false if there were any.
func (c *checker) resolveRanges(ec *elemCtx) bool {
	ok := true
	for _, iv := range ec.vars {
		if iv.fixed {
			continue
		}
		if iv.where != nil {
			iv.v.Extent = iv.where.extent
			continue
		}
		if len(iv.uses) == 0 {
			c.errorAt(iv.file, iv.span, "range", fmt.Sprintf(`add "where %s in 0..n" to the statement, with n the number of values %s takes`, iv.name, iv.name),
				"cannot infer the range of %s: it is not used alone as an index", iv.name)
			iv.v.Extent = 1
			ok = false
			continue
		}
		first := iv.uses[0]
		iv.v.Extent = first.size
		for _, u := range iv.uses[1:] {
			if u.size != first.size {
				d := c.errorAt(u.file, u.span, "range", fmt.Sprintf(`state the range with "where %s in 0..n"; the accesses are then proven against it`, iv.name),
					"the uses of %s disagree on its range: as %s it ranges over 0..%d, but as %s over 0..%d", iv.name, u.what, u.size, first.what, first.size)
				related(d, first.file, first.span, "%s is %s here, of size %d", iv.name, first.what, first.size)
				ok = false
				break
			}
		}
	}
	return ok
}

// interval is an inclusive range of ints; lo > hi means empty. MinInt and
// MaxInt stand for no bound.
type interval struct{ lo, hi int }

var unbounded = interval{math.MinInt, math.MaxInt}

// factInterval returns the values ix may take when ix op 0 holds.
func factInterval(op string) (interval, bool) {
	switch op {
	case "<":
		return interval{math.MinInt, -1}, true
	case "<=":
		return interval{math.MinInt, 0}, true
	case ">":
		return interval{1, math.MaxInt}, true
	case ">=":
		return interval{0, math.MaxInt}, true
	case "==":
		return interval{0, 0}, true
	}
	return interval{}, false
}

// shift returns iv + d, keeping unbounded ends unbounded.
func (iv interval) shift(d int) interval {
	r := iv
	if r.lo != math.MinInt {
		r.lo = satAdd(r.lo, d)
	}
	if r.hi != math.MaxInt {
		r.hi = satAdd(r.hi, d)
	}
	return r
}

func (iv interval) meet(o interval) interval {
	return interval{max(iv.lo, o.lo), min(iv.hi, o.hi)}
}

func satAdd(a, b int) int {
	r := a + b
	switch {
	case a > 0 && b > 0 && r < 0:
		return math.MaxInt - 1
	case a < 0 && b < 0 && r >= 0:
		return math.MinInt + 1
	}
	return r
}

// floorDivInt and ceilDivInt divide by a positive d.
func floorDivInt(a, d int) int { return te.FloorDiv(a, d) }
func ceilDivInt(a, d int) int  { return -te.FloorDiv(-a, d) }

// varBound narrows the range of the single variable of ix = coef·v + k from
// the fact that ix lies in in. It returns false if ix is not of that form.
func varBound(ix te.Index, in interval) (*te.Var, interval, bool) {
	if len(ix.Terms) != 1 || ix.Terms[0].Atom.Op != te.AtomVar {
		return nil, interval{}, false
	}
	coef, k := ix.Terms[0].Coef, ix.Const
	v := ix.Terms[0].Atom.Var
	// coef·v in in - k
	r := in.shift(-k)
	if coef < 0 {
		coef = -coef
		r = interval{negBound(r.hi), negBound(r.lo)}
	}
	out := unbounded
	if r.lo != math.MinInt {
		out.lo = ceilDivInt(r.lo, coef)
	}
	if r.hi != math.MaxInt {
		out.hi = floorDivInt(r.hi, coef)
	}
	return v, out, true
}

func negBound(b int) int {
	switch b {
	case math.MinInt:
		return math.MaxInt
	case math.MaxInt:
		return math.MinInt
	}
	return -b
}

// maxModulus bounds the divisor of the modular facts that narrow ranges
// (residueSet's work and memory grow with it); a fact with a larger divisor
// is ignored, which is sound.
const maxModulus = 1 << 12

// residueSet reads a modular fact, ix = c·((v + b) mod m) + k compared with
// 0, as the residues of v modulo m that satisfy it: allowed[u] reports
// whether v mod m == u is possible. It returns false if ix is not of that
// form. (d % 2 == 0 allows the even values of d, d % 4 != 3 all but those
// that are 3 modulo 4.)
func residueSet(ix te.Index, op string) (v *te.Var, allowed []bool, ok bool) {
	if len(ix.Terms) != 1 || ix.Terms[0].Atom.Op != te.AtomMod {
		return nil, nil, false
	}
	c, k, at := ix.Terms[0].Coef, ix.Const, ix.Terms[0].Atom
	arg, m := *at.Arg, at.Divisor
	if len(arg.Terms) != 1 || arg.Terms[0].Coef != 1 || arg.Terms[0].Atom.Op != te.AtomVar || m > maxModulus {
		return nil, nil, false
	}
	v, b := arg.Terms[0].Atom.Var, arg.Const
	allowed = make([]bool, m)
	for t := 0; t < m; t++ { // t = (v + b) mod m, so v mod m = (t - b) mod m
		allowed[te.FloorMod(t-b, m)] = compareInts(op, c*t+k, 0)
	}
	return v, allowed, true
}

// narrowToResidues returns the least and greatest values of r that every
// residue set allows (each value's residue modulo len(set) is allowed), or
// an empty interval if there are none. The sets together repeat with the
// least common multiple of their moduli; when it exceeds maxModulus, r is
// narrowed only as far as a search of that many values goes.
func narrowToResidues(r interval, sets [][]bool) interval {
	if len(sets) == 0 || r.lo > r.hi || r.lo == math.MinInt || r.hi == math.MaxInt {
		return r
	}
	period := 1
	for _, s := range sets {
		if period = period / gcd(period, len(s)) * len(s); period > maxModulus {
			period = 0 // unknown
			break
		}
	}
	ok := func(x int) bool {
		for _, s := range sets {
			if !s[te.FloorMod(x, len(s))] {
				return false
			}
		}
		return true
	}
	limit := period
	if limit == 0 {
		limit = maxModulus
	}
	lo := r.lo
	for n := 0; !ok(lo); n++ {
		if lo == r.hi || n == limit {
			if period == 0 && lo < r.hi {
				return r // gave up: r is still a sound range
			}
			return interval{1, 0}
		}
		lo++
	}
	hi := r.hi
	for !ok(hi) { // ends at lo at the latest
		hi--
	}
	return interval{lo, hi}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// factVar returns the variable that fact f bounds, alone or through a
// modulo, if any.
func factVar(f fact) (*te.Var, bool) {
	if in, ok := factInterval(f.op); ok {
		if w, _, ok := varBound(f.ix, in); ok {
			return w, true
		}
	}
	w, _, ok := residueSet(f.ix, f.op)
	return w, ok
}

// indexRange returns the range of ix under the facts. dead reports that the
// facts contradict each other, so the access is never made.
//
// A variable's range is narrowed by the facts that bound it linearly
// (i - 1 >= 0) and then by the modular facts (i % 2 == 0): under both,
// i in 0..N has the range 2..N-1 or 2..N-2, whichever end is even.
func indexRange(ix te.Index, facts *factList) (iv interval, dead bool) {
	rng := func(v *te.Var) (int, int) {
		r := interval{0, v.Extent - 1}
		for f := facts; f != nil; f = f.next {
			in, ok := factInterval(f.f.op)
			if !ok {
				continue
			}
			if w, b, ok := varBound(f.f.ix, in); ok && w == v {
				r = r.meet(b)
			}
		}
		var sets [][]bool
		for f := facts; f != nil; f = f.next {
			if w, allowed, ok := residueSet(f.f.ix, f.f.op); ok && w == v {
				sets = append(sets, allowed)
			}
		}
		r = narrowToResidues(r, sets)
		return r.lo, r.hi
	}
	for f := facts; f != nil; f = f.next {
		if w, ok := factVar(f.f); ok {
			if lo, hi := rng(w); lo > hi {
				return interval{}, true
			}
		}
	}
	for _, v := range ix.Vars() {
		if lo, hi := rng(v); lo > hi {
			return interval{}, true
		}
	}
	lo, hi := ix.Bounds(rng)
	r := interval{lo, hi}
	for f := facts; f != nil; f = f.next {
		in, ok := factInterval(f.f.op)
		if !ok {
			continue
		}
		if d, ok := ix.Sub(f.f.ix).IsConst(); ok {
			r = r.meet(in.shift(d))
		}
	}
	return r, r.lo > r.hi
}

// checkBounds proves every recorded access of a definition in bounds. It
// first proves every value its indexes compute exact — within ±maxExact for
// every value of the variables, so that neither the proof's own arithmetic
// nor an evaluator's can wrap or round — and then the indexes in bounds.
func (c *checker) checkBounds(ec *elemCtx) {
	for _, ld := range ec.loads {
		if !c.checkExact(ld) {
			continue
		}
		for d, ix := range ld.ix {
			r, dead := indexRange(ix, ld.facts)
			if dead {
				break
			}
			size := ld.shape[d]
			if r.lo >= 0 && r.hi < size {
				continue
			}
			c.boundsError(ec, ld, d, r)
			break
		}
	}
}

func (c *checker) boundsError(ec *elemCtx, ld *pendingLoad, d int, r interval) {
	ix := ld.ix[d]
	text := ix.String()
	if d < len(ld.texts) && ld.texts[d] != "" {
		text = ld.texts[d]
	}
	size := ld.shape[d]
	var where string
	if r.lo < 0 {
		where = fmt.Sprintf("it can be %d, below 0", r.lo)
	} else {
		where = fmt.Sprintf("it can be %d, past the end", r.hi)
	}
	msg := fmt.Sprintf("index %s of %s is out of bounds: %s ranges over %d..%d, but dimension %d has size %d (%s)",
		text, ld.name, text, r.lo, r.hi+1, d, size, where)
	var guard []string
	if r.lo < 0 {
		guard = append(guard, text+" >= 0")
	}
	if r.hi >= size {
		guard = append(guard, fmt.Sprintf("%s < %d", text, size))
	}
	access := ld.name + "[" + strings.Join(ld.texts, ", ") + "]"
	hint := fmt.Sprintf("to read past the edge on purpose (padding), guard the access: select(%s, %s, 0.0)", strings.Join(guard, " && "), access)
	if ld.write {
		hint = fmt.Sprintf("an update writes only inside its input, so the slot needs %s for every value of the variables", strings.Join(guard, " and "))
	}
	if v, ok := ix.AsVar(); ok {
		if iv := ec.byVar[v]; iv != nil && iv.where != nil {
			hint = fmt.Sprintf("the range of %s comes from \"where %s in 0..%d\"; should it be 0..%d?", iv.name, iv.name, iv.where.extent, size)
		}
	}
	c.errorAt(ld.file, ld.span, "bounds", hint, "%s", msg)
}

// extentRange is the range of a variable over its whole extent.
func extentRange(v *te.Var) (int, int) { return 0, v.Extent - 1 }

// checkExact reports the first index of ld, or computed sub-expression of
// one, whose values may leave ±maxExact when the variables range over their
// extents, and returns whether there was none.
func (c *checker) checkExact(ld *pendingLoad) bool {
	for d, ix := range ld.ix {
		var p *indexPart
		if d < len(ld.parts) {
			p = ld.parts[d]
		}
		if bad := inexactPart(p); bad != nil {
			c.exactError(bad.file, bad.span, bad.ix)
			return false
		}
		if _, _, ok := ix.ExactBounds(extentRange, maxExact); !ok {
			c.exactError(ld.file, ld.span, ix)
			return false
		}
	}
	return true
}

// inexactPart returns the first part under p, innermost first, whose values
// may leave ±maxExact, or nil.
func inexactPart(p *indexPart) *indexPart {
	if p == nil {
		return nil
	}
	for _, a := range p.args {
		if bad := inexactPart(a); bad != nil {
			return bad
		}
	}
	if _, _, ok := p.ix.ExactBounds(extentRange, maxExact); !ok {
		return p
	}
	return nil
}

// exactError reports that the index arithmetic at span, which computes ix,
// may exceed maxExact.
func (c *checker) exactError(file string, span syntax.Span, ix te.Index) {
	c.errorAt(file, span, "bounds", exactHint, "index arithmetic %s exceeds 2^53: %s", c.text(file, span), exactRange(ix))
}

// exactRange describes the range of ix over its variables' extents.
func exactRange(ix te.Index) string {
	lo, hi := bigBounds(ix)
	var vars []string
	for _, v := range ix.Vars() {
		vars = append(vars, fmt.Sprintf("%s in 0..%d", v.Name, v.Extent))
	}
	what := "it is " + hi.String()
	if lo.Cmp(hi) != 0 {
		what = fmt.Sprintf("it ranges over %s..%s", lo, hi)
	}
	if len(vars) > 0 {
		what += " for " + strings.Join(vars, ", ")
	}
	return what
}

// bigBounds returns the least and greatest values of ix over its variables'
// extents (inclusive), as Index.Bounds does but without overflow: for
// messages.
func bigBounds(ix te.Index) (lo, hi *big.Int) {
	lo, hi = big.NewInt(int64(ix.Const)), big.NewInt(int64(ix.Const))
	for _, t := range ix.Terms {
		var alo, ahi *big.Int
		switch t.Atom.Op {
		case te.AtomVar:
			alo, ahi = big.NewInt(0), big.NewInt(int64(t.Atom.Var.Extent-1))
		case te.AtomDiv:
			l, h := bigBounds(*t.Atom.Arg)
			d := big.NewInt(int64(t.Atom.Divisor))
			// Div rounds towards negative infinity, as floor division does
			// for a positive divisor.
			alo, ahi = new(big.Int).Div(l, d), new(big.Int).Div(h, d)
		default:
			alo, ahi = big.NewInt(0), big.NewInt(int64(t.Atom.Divisor-1))
		}
		c := big.NewInt(int64(t.Coef))
		if t.Coef < 0 {
			alo, ahi = ahi, alo
		}
		lo.Add(lo, new(big.Int).Mul(c, alo))
		hi.Add(hi, new(big.Int).Mul(c, ahi))
	}
	return lo, hi
}

// checkExactValues reports the index values of body (i32 values computed
// from index variables, as in f32(i * 4) or select(i * 4 < n, ...)) whose
// range, over the variables' extents, may leave ±maxExact, as checkExact
// does for the indexes of accesses. span is the definition's.
func (c *checker) checkExactValues(file string, span syntax.Span, body te.Expr) {
	walkDAG(body, func(e te.Expr) {
		x, ok := e.(*te.IndexExpr)
		if !ok {
			return
		}
		if _, _, ok := x.Index.ExactBounds(extentRange, maxExact); !ok {
			c.errorAt(file, span, "bounds", exactHint, "index arithmetic %s exceeds 2^53: %s", x.Index, exactRange(x.Index))
		}
	})
}

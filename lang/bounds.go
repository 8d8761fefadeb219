package lang

import (
	"fmt"
	"math"
	"strings"

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

// indexRange returns the range of ix under the facts. dead reports that the
// facts contradict each other, so the access is never made.
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
		return r.lo, r.hi
	}
	for f := facts; f != nil; f = f.next {
		in, ok := factInterval(f.f.op)
		if !ok {
			continue
		}
		if w, _, ok := varBound(f.f.ix, in); ok {
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

// checkBounds proves every recorded access of a definition in bounds.
func (c *checker) checkBounds(ec *elemCtx) {
	for _, ld := range ec.loads {
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
	if v, ok := ix.AsVar(); ok {
		if iv := ec.byVar[v]; iv != nil && iv.where != nil {
			hint = fmt.Sprintf("the range of %s comes from \"where %s in 0..%d\"; should it be 0..%d?", iv.name, iv.name, iv.where.extent, size)
		}
	}
	c.errorAt(ld.file, ld.span, "bounds", hint, "%s", msg)
}

package report

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"tec/backend/kir"
)

// This file predicts the shared-memory wavefronts and bank conflicts of
// the warp-level shared-memory accesses (kir.Banks's rule): at each point
// of an access's domain outside its lanes, the lanes that satisfy its
// conditions are grouped into warps and phases as they run, and their
// addresses, which the index gives as a function of the domain, into
// wavefronts. An index the domain does not determine (a loaded value) is
// not counted, and the counts are not exact; nor where a condition
// depends on data (it is assumed to hold) or the domain is sampled. The
// threads of a loop from a variable start run its iterations together,
// each at its own value.

// bankAccess is one warp-level shared-memory access: width elements of
// size bytes per lane at index, or, with matrices > 0, an LdMatrix's
// rows.
type bankAccess struct {
	index       kir.Expr
	size, width int
	matrices    int
}

// sharedAccess adds the wavefronts of a at every point of the current
// domain that satisfies the conditions.
func (c *counter) sharedAccess(a bankAccess) {
	var b strings.Builder
	b.WriteString(c.key())
	fmt.Fprintf(&b, "|%d,%d,%d|", a.size, a.width, a.matrices)
	c.canon(&b, a.index)
	key := b.String()
	m, ok := c.bankMemo[key]
	if !ok {
		m = c.enumerateBanks(a)
		c.bankMemo[key] = m
	}
	c.banks.Add(m.banks)
	c.banksExact = c.banksExact && m.exact
}

// bankCount is a memoised count of wavefronts and whether it is exact.
type bankCount struct {
	banks kir.Banks
	exact bool
}

// laneDim returns the position in the domain of the dimension that gives
// a point's thread: the thread index, or the variable of a block- or
// thread-stride loop that replaced it.
func (c *counter) laneDim() (int, bool) {
	for i, d := range c.dims {
		if d.lanes || d.v == nil && d.reg == kir.ThreadIdx {
			return i, true
		}
	}
	return 0, false
}

// enumerateBanks counts the wavefronts of a over the current domain.
func (c *counter) enumerateBanks(a bankAccess) bankCount {
	li, ok := c.laneDim()
	deps := map[int]bool{}
	index, iok := c.compile(a.index, deps)
	if !ok || !iok {
		return bankCount{exact: false}
	}
	exact := true
	var cs []condition
	for _, k := range c.conds {
		f, ok := c.compile(k.e, deps)
		if !ok {
			exact = false // data-dependent: assume it holds
			continue
		}
		cs = append(cs, condition{f: f, neg: k.neg})
	}
	// A loop from a variable start runs iteration i at start + i·stride,
	// its value computed per lane (laneBanks).
	starts := make([]func([]float64) float64, len(c.dims))
	for i, d := range c.dims {
		if d.start == nil {
			continue
		}
		f, ok := c.compile(d.start, deps)
		if !ok {
			return bankCount{exact: false}
		}
		starts[i], deps[i] = f, true
	}
	mult := int64(1)
	var outer []int // the dimensions enumerated around the lanes
	// extent is a dimension's values, or iterations from a variable start.
	extent := func(d dim) int64 {
		if d.start != nil {
			return int64((d.hi + d.stride - 1) / d.stride)
		}
		return int64(d.size())
	}
	for i, d := range c.dims {
		switch {
		case i == li:
		case deps[i]:
			outer = append(outer, i)
		default:
			mult *= extent(d)
		}
	}
	size := int64(1)
	for _, i := range outer {
		size *= extent(c.dims[i])
	}
	lanes := c.dims[li]
	n := size
	if per := max(int64(c.cfg.EnumLimit)/max(int64(lanes.size()), 1), 1); size > per {
		n, exact = per, false
	}
	rng := rand.New(rand.NewPCG(2, uint64(size)))
	point := make([]float64, len(c.dims))
	iters := make([]int, len(c.dims)) // of the loops from variable starts
	var got kir.Banks
	for j := range n {
		q := j
		if n < size {
			q = rng.Int64N(size)
		}
		for k := len(outer) - 1; k >= 0; k-- {
			d, n := c.dims[outer[k]], extent(c.dims[outer[k]])
			if d.start != nil {
				iters[outer[k]] = int(q % n)
			} else {
				point[outer[k]] = float64(d.lo + int(q%n)*d.step)
			}
			q /= n
		}
		c.laneBanks(a, index, cs, li, starts, iters, point, &got)
	}
	if n < size {
		scale := float64(size) / float64(n)
		got.Wavefronts = int64(float64(got.Wavefronts)*scale + 0.5)
		got.Conflicts = int64(float64(got.Conflicts)*scale + 0.5)
	}
	got.Wavefronts *= mult
	got.Conflicts *= mult
	return bankCount{banks: got, exact: exact}
}

// laneBanks adds to got the wavefronts of access a at one point of the
// dimensions around the lanes: the lane dimension li runs through its
// values, each the thread t of a warp and of an instance (for a block- or
// thread-stride loop's variable, its iteration), in order. A loop from a
// variable start (starts[i] not nil) is at iteration iters[i], its value
// the lane's start plus iters[i] steps; a lane past its end is inactive.
func (c *counter) laneBanks(a bankAccess, index func([]float64) float64, cs []condition, li int, starts []func([]float64) float64, iters []int, point []float64, got *kir.Banks) {
	d := c.dims[li]
	bytes := a.size * a.width
	per := kir.PhaseLanes(bytes)
	if a.matrices > 0 {
		per = kir.WarpSize
	}
	var ph kir.BankPhase
	var rows [kir.WarpSize]int64 // an LdMatrix's row addresses, by lane
	seen := false                // an LdMatrix's warp has active lanes
	flush := func() {
		for j := range a.matrices {
			if !seen {
				break
			}
			for r := range 8 {
				ph.Add(rows[8*j+r]*2, kir.VecBytes)
			}
			ph.Flush(got)
		}
		seen = false
		ph.Flush(got)
	}
	cur := -1
	for v := d.lo; v < d.hi; v += d.step {
		t, inst := v, 0
		if d.lanes {
			t, inst = (v-d.lo)%c.threads, (v-d.lo)/c.threads
		}
		if key := inst*c.threads + t/per*per; key != cur {
			flush()
			cur = key
		}
		point[li] = float64(v)
		active := true
		for i, f := range starts {
			if f != nil {
				point[i] = f(point) + float64(iters[i]*c.dims[i].stride)
				active = active && point[i] < float64(c.dims[i].hi)
			}
		}
		for _, k := range cs {
			if (k.f(point) != 0) == k.neg {
				active = false
				break
			}
		}
		if !active {
			continue
		}
		at := int64(index(point))
		if a.matrices > 0 {
			rows[t%kir.WarpSize], seen = at, true
			continue
		}
		ph.Add(at*int64(a.size), int64(bytes))
	}
	flush()
}

// shared counts a warp-level access of width elements per lane to buf at
// index where buf is a shared array.
func (c *counter) shared(buf *kir.Buffer, index kir.Expr, width int) {
	if buf.Space == kir.Shared {
		c.sharedAccess(bankAccess{index: index, size: buf.DType.Size(), width: width})
	}
}

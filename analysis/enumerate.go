package analysis

import (
	"fmt"
	"slices"

	"tec/te"
)

// Size returns the number of points of the relation's iteration space, the
// product of the extents of Vars, guards ignored.
func (m *Map) Size() int {
	n := 1
	for _, v := range m.Vars() {
		n *= v.Extent
	}
	return n
}

// Eval returns the element of In that the relation maps the point vals to;
// vals holds one value per variable of Vars, in that order. It panics if
// len(vals) is wrong or the map is opaque.
func (m *Map) Eval(vals []int) []int {
	vars := m.Vars()
	if len(vals) != len(vars) {
		panic(fmt.Sprintf("analysis: Map.Eval: %d values for %d variables", len(vals), len(vars)))
	}
	val := valuation(vars, vals)
	out := make([]int, len(m.Index))
	for d, x := range m.Index {
		out[d] = x.Eval(val)
	}
	return out
}

// Points calls f for every point of the relation's iteration space where the
// guards hold, in lexicographic order of Vars (the last varies fastest), with
// the variables' values and the element of In that the point reads. It stops
// when f returns false. The slices are reused between calls. Points is meant
// for small spaces: tests check relations against direct evaluation with it.
func (m *Map) Points(f func(vals, index []int) bool) {
	if len(m.Foreign) > 0 {
		panic(fmt.Sprintf("analysis: Map.Points of opaque map %s", m))
	}
	vars := m.Vars()
	vals := make([]int, len(vars))
	index := make([]int, len(m.Index))
	val := valuation(vars, vals)
	for _, v := range vars {
		if v.Extent <= 0 {
			return
		}
	}
	for {
		ok := true
		for _, c := range m.Guards {
			if !c.Holds(val) {
				ok = false
				break
			}
		}
		if ok {
			for d, x := range m.Index {
				index[d] = x.Eval(val)
			}
			if !f(vals, index) {
				return
			}
		}
		// Advance the odometer.
		k := len(vals) - 1
		for ; k >= 0; k-- {
			vals[k]++
			if vals[k] < vars[k].Extent {
				break
			}
			vals[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// valuation returns the function that gives each of vars its value in vals
// (which may change between calls).
func valuation(vars []*te.Var, vals []int) func(*te.Var) int {
	return func(v *te.Var) int {
		if k := slices.Index(vars, v); k >= 0 {
			return vals[k]
		}
		panic(fmt.Sprintf("analysis: variable %s is not bound", v.Name))
	}
}

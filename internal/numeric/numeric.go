// Package numeric fills arrays with reproducible data and compares arrays within
// a tolerance. The CLI uses it to fill inputs and params that the user did not
// supply and to check outputs against expected ones; the test suites use it to
// compare every stage of the compiler against the reference evaluator.
package numeric

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"

	"tec/te"
)

// Fill says how to fill an array that the caller did not supply.
type Fill int

// The fills.
const (
	Zeros  Fill = iota // every element 0
	Ones               // every element 1
	Random             // uniform random, reproducible from a seed and the tensor's name
)

// ParseFill parses "zeros", "ones" or "random".
func ParseFill(s string) (Fill, error) {
	switch s {
	case "zeros":
		return Zeros, nil
	case "ones":
		return Ones, nil
	case "random":
		return Random, nil
	}
	return 0, fmt.Errorf("unknown fill %q (want zeros, ones or random)", s)
}

// String returns the fill's name.
func (f Fill) String() string { return [...]string{"zeros", "ones", "random"}[f] }

// NewFilled returns an array for tensor t filled according to f.
//
// Random values are uniform in [-1, 1). For a param of rank 2 or more they are
// scaled by 1/√(size/largest dimension), an estimate of 1/√fan-in that keeps
// deep models' activations in range. Integer tensors get integers in [0, 8);
// bool tensors get 0 or 1. The values depend only on seed and t.Name, so one
// tensor's values do not change when others are added or removed.
func NewFilled(t *te.Tensor, f Fill, seed uint64) *te.Array {
	return NewFilledIndex(t, f, seed, [2]int{0, 8})
}

// NewFilledIndex is NewFilled where random integers are drawn from the
// first 8 values of [r[0], r[1]) instead of [0, 8): the range of a gather's
// index tensor (GatherRanges), so that random ids stay in their tables.
func NewFilledIndex(t *te.Tensor, f Fill, seed uint64, r [2]int) *te.Array {
	lo, n := r[0], max(min(r[1]-r[0], 8), 1)
	a := te.NewArray(t.DType, t.Shape)
	switch f {
	case Ones:
		for i := range a.Data {
			a.Data[i] = 1
		}
	case Random:
		h := fnv.New64a()
		h.Write([]byte(t.Name))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		scale := 1.0
		if t.Kind == te.Param && len(t.Shape) >= 2 {
			largest := 1
			for _, d := range t.Shape {
				largest = max(largest, d)
			}
			scale = 1 / math.Sqrt(float64(t.NumElements()/largest))
		}
		for i := range a.Data {
			switch t.DType {
			case te.I32:
				a.Data[i] = float64(lo + rng.IntN(n))
			case te.Bool:
				a.Data[i] = float64(rng.IntN(2))
			default:
				a.Data[i] = te.Round(t.DType, (2*rng.Float64()-1)*scale)
			}
		}
	}
	return a
}

// Tolerance bounds the difference allowed between a value and its expected
// value: |got - want| <= Atol + Rtol·|want|, as numpy.allclose.
type Tolerance struct {
	Rtol, Atol float64
}

// Mismatch describes how an array differs from the expected one.
type Mismatch struct {
	// Index is the first element (in row-major order) outside the tolerance.
	Index     []int
	Got, Want float64
	// Count is the number of elements outside the tolerance.
	Count int
	// MaxAbs and MaxRel are the largest absolute and relative differences.
	MaxAbs, MaxRel float64
}

// Compare returns nil if got equals want within tol, element by element (NaN
// equals only NaN, an infinity only the same infinity), and otherwise a
// Mismatch. Arrays of different shapes are an error.
func Compare(got, want *te.Array, tol Tolerance) (*Mismatch, error) {
	if !te.SameShape(got.Shape, want.Shape) {
		return nil, fmt.Errorf("shape %s, want %s", FormatIndex(got.Shape), FormatIndex(want.Shape))
	}
	var m Mismatch
	first := -1
	for i, w := range want.Data {
		g := got.Data[i]
		diff := math.Abs(g - w)
		ok := diff <= tol.Atol+tol.Rtol*math.Abs(w)
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			ok = math.IsNaN(w) && math.IsNaN(g)
			diff = math.Inf(1)
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			ok = g == w
			if ok {
				diff = 0
			}
		}
		if !ok {
			m.Count++
			if first < 0 {
				first = i
			}
		}
		if diff > m.MaxAbs || math.IsNaN(diff) {
			m.MaxAbs = diff
		}
		if w != 0 && diff/math.Abs(w) > m.MaxRel {
			m.MaxRel = diff / math.Abs(w)
		}
	}
	if m.Count == 0 {
		return nil, nil
	}
	m.Index = unravel(first, want.Shape)
	m.Got, m.Want = got.Data[first], want.Data[first]
	return &m, nil
}

// String describes the mismatch for a person, e.g.
// "[3, 1]: got 0.5, want 0.25; 7 of 64 elements differ (max abs diff 0.25, max rel diff 1)".
func (m *Mismatch) String() string {
	return fmt.Sprintf("%s: got %.9g, want %.9g; %d elements differ (max abs diff %.3g, max rel diff %.3g)",
		FormatIndex(m.Index), m.Got, m.Want, m.Count, m.MaxAbs, m.MaxRel)
}

// FormatIndex formats a multi-index as "[i, j, k]".
func FormatIndex(idx []int) string {
	parts := make([]string, len(idx))
	for i, v := range idx {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func unravel(flat int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = flat % shape[d]
			flat /= shape[d]
		}
	}
	return idx
}

// Stats summarises an array's values.
type Stats struct {
	Min, Max, Mean float64
	// NaNs and Infs count the non-finite elements, which Min, Max and Mean skip.
	NaNs, Infs int
}

// Summarize returns the statistics of a's elements.
func Summarize(a *te.Array) Stats {
	s := Stats{Min: math.Inf(1), Max: math.Inf(-1)}
	n := 0
	for _, v := range a.Data {
		switch {
		case math.IsNaN(v):
			s.NaNs++
			continue
		case math.IsInf(v, 0):
			s.Infs++
			continue
		}
		s.Min = min(s.Min, v)
		s.Max = max(s.Max, v)
		s.Mean += v
		n++
	}
	if n == 0 {
		s.Min, s.Max = 0, 0
	} else {
		s.Mean /= float64(n)
	}
	return s
}

// GatherRanges returns, for each placeholder that a gather of p reads its
// index from directly (wte[ids[s] + c, d]), or an in-place update its slot
// (update kc[b, pos[b], e] = ...), the values [lo, hi) that keep every such
// gather and update in range; a placeholder with no such value is left
// out.
func GatherRanges(p *te.Program) map[*te.Tensor][2]int {
	out := map[*te.Tensor][2]int{}
	narrow := func(l *te.Load) {
		for d := range l.Index {
			src, off, isLoad := offsetLoad(l.Gathered(d))
			c, isConst := l.Index[d].IsConst()
			if !isLoad || !isConst || src.Tensor.Kind == te.Compute {
				continue
			}
			c += off
			r, seen := out[src.Tensor]
			if !seen {
				r = [2]int{math.MinInt, math.MaxInt}
			}
			r[0], r[1] = max(r[0], -c), min(r[1], l.Tensor.Shape[d]-c)
			out[src.Tensor] = r
		}
	}
	for _, t := range p.Tensors {
		if t.Update != nil {
			narrow(t.Update.Dest())
		}
		if t.Body == nil {
			continue
		}
		te.Walk(t.Body, func(e te.Expr) bool {
			if l, ok := e.(*te.Load); ok {
				narrow(l)
			}
			return true
		})
	}
	for t, r := range out {
		if r[0] >= r[1] {
			delete(out, t)
		}
	}
	return out
}

// offsetLoad splits a gather's run-time index into the load of an index
// tensor and a constant added to it: ids[s], ids[s] + 2, 2 + ids[s] or
// ids[s] - 2 (the front end may keep the constant there rather than in the
// static part of the index).
func offsetLoad(e te.Expr) (*te.Load, int, bool) {
	switch e := e.(type) {
	case *te.Load:
		return e, 0, true
	case *te.Binary:
		if e.Op != te.Add && e.Op != te.Sub {
			return nil, 0, false
		}
		l, lok := e.X.(*te.Load)
		c, cok := e.Y.(*te.ConstExpr)
		if !lok || !cok {
			if e.Op == te.Sub {
				return nil, 0, false
			}
			l, lok = e.Y.(*te.Load)
			c, cok = e.X.(*te.ConstExpr)
		}
		if !lok || !cok || c.Value != math.Trunc(c.Value) {
			return nil, 0, false
		}
		if e.Op == te.Sub {
			return l, -int(c.Value), true
		}
		return l, int(c.Value), true
	}
	return nil, 0, false
}

// SeededFeeds returns values for every placeholder of p from one seeded
// generator, in the placeholders' order: uniform in [-1, 1) rounded to the
// placeholder's dtype, except variances of batch normalisation (names ending
// in "var"), uniform in [0.5, 1.5), and the index tensors of gathers,
// uniform integers that every gather reading them keeps in range. The test
// suites feed models with it, so that a model's feeds are the same in every
// suite.
func SeededFeeds(p *te.Program, seed uint64) map[string]*te.Array {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := map[string]*te.Array{}
	ranges := GatherRanges(p)
	for _, t := range p.Placeholders() {
		a := te.NewArray(t.DType, t.Shape)
		r, isIndex := ranges[t]
		for i := range a.Data {
			v := 2*rng.Float64() - 1
			switch {
			case isIndex:
				v = float64(r[0] + int(rng.Float64()*float64(r[1]-r[0])))
			case strings.HasSuffix(t.Name, "var"):
				v = 0.5 + rng.Float64()
			}
			a.Data[i] = te.Round(t.DType, v)
		}
		out[t.Name] = a
	}
	return out
}

// ConformFeeds returns the feeds in of a program rounded to the dtypes of
// the placeholders of q, the same program at another precision (package
// precision), as tec run rounds f32 params to f16 or bf16 ones. Feeds of
// q's dtype are shared, not copied.
func ConformFeeds(in map[string]*te.Array, q *te.Program) map[string]*te.Array {
	out := map[string]*te.Array{}
	for _, t := range q.Placeholders() {
		a := in[t.Name]
		if a.DType != t.DType {
			b := te.NewArray(t.DType, t.Shape)
			for i, v := range a.Data {
				b.Data[i] = te.Round(t.DType, v)
			}
			a = b
		}
		out[t.Name] = a
	}
	return out
}

// RelError returns max |got - want| / max |want| over the elements, the
// error relative to the output's magnitude: it stays finite where an
// element is near zero. Where both hold the same infinity or both NaN at an element, the
// element differs by nothing; NaN against a number makes the result NaN.
func RelError(got, want *te.Array) float64 {
	var diff, scale float64
	for i, w := range want.Data {
		g := got.Data[i]
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			scale = max(scale, math.Abs(w))
		}
		if g == w || (math.IsNaN(g) && math.IsNaN(w)) {
			continue
		}
		if math.IsNaN(g) || math.IsNaN(w) {
			return math.NaN()
		}
		diff = max(diff, math.Abs(g-w))
	}
	if scale == 0 {
		return diff
	}
	return diff / scale
}

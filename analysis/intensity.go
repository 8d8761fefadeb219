package analysis

import (
	"fmt"
	"slices"

	"tec/te"
)

// DefaultThreshold is the ratio of arithmetic operations to elements read and
// written at and above which a TE is compute-intensive (Souffle §5.3).
const DefaultThreshold = 3.0

// Class is a TE's intensity class.
type Class int

// The classes.
const (
	MemoryIntensive Class = iota
	ComputeIntensive
)

// String returns "memory-intensive" or "compute-intensive".
func (c Class) String() string {
	if c == ComputeIntensive {
		return "compute-intensive"
	}
	return "memory-intensive"
}

// Short returns "MI" or "CI".
func (c Class) Short() string {
	if c == ComputeIntensive {
		return "CI"
	}
	return "MI"
}

// MarshalText encodes the class as its String.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText decodes a class written by MarshalText.
func (c *Class) UnmarshalText(b []byte) error {
	for _, k := range []Class{MemoryIntensive, ComputeIntensive} {
		if k.String() == string(b) {
			*c = k
			return nil
		}
	}
	return fmt.Errorf("analysis: unknown intensity class %q", b)
}

// Intensity is the compute-memory ratio of one TE:
//
//	Ratio = Ops / (Read + Written)
//
// Ops counts the arithmetic operations of the whole TE: the operations of
// the body for one output element, times the output's elements, where
//
//   - a unary or binary operation (arithmetic, comparison, logic, max, min,
//     pow, and transcendental functions alike) counts 1;
//   - a select counts 1 plus its condition plus the dearer of its branches,
//     except where its condition loads nothing: a choice by index alone
//     (padding, concatenation, stack) is index arithmetic, and counts its
//     dearer branch alone (stack of 8 tensors, three levels of such
//     selects, was 6 operations per element copied: compute-intensive);
//   - a reduction over N points counts N times (its body + 1), the 1 being
//     the combining operation, so sum[k](a*b) over K is 2K, as for FLOPs;
//   - loads, constants, casts and index arithmetic count 0.
//
// Written is the output's element count. Read sums, over the distinct
// tensors the body loads, an upper bound of the distinct elements it reads:
// the least of the tensor's size, the size of the bounding box of all its
// accesses (each index's range over the variables' extents, clipped to the
// shape), and the sum over its accesses of the number of points of the
// variables each access uses. The bound is exact for whole-tensor reads,
// slices, broadcasts and strided reads.
type Intensity struct {
	Ops     int64
	Read    int64
	Written int64
	Ratio   float64
	Class   Class
}

// intensityOf measures t, whose distinct accesses are accs.
func intensityOf(t *te.Tensor, accs []*Access, threshold float64) Intensity {
	in := Intensity{
		Ops:     opsPerElement(t.Body) * int64(t.NumElements()),
		Written: int64(t.NumElements()),
	}
	for k, a := range accs {
		if !slices.ContainsFunc(accs[:k], func(b *Access) bool { return b.In == a.In }) {
			in.Read += footprint(a.In, accs[k:])
		}
	}
	if n := in.Read + in.Written; n > 0 {
		in.Ratio = float64(in.Ops) / float64(n)
	}
	if in.Ratio >= threshold {
		in.Class = ComputeIntensive
	}
	return in
}

// opsPerElement counts the arithmetic operations of e as Intensity says.
func opsPerElement(e te.Expr) int64 {
	switch e := e.(type) {
	case *te.Unary:
		return 1 + opsPerElement(e.X)
	case *te.Binary:
		return 1 + opsPerElement(e.X) + opsPerElement(e.Y)
	case *te.Select:
		branch := max(opsPerElement(e.Then), opsPerElement(e.Else))
		if !te.HasLoad(e.Cond) {
			return branch
		}
		return 1 + opsPerElement(e.Cond) + branch
	case *te.Cast:
		return opsPerElement(e.X)
	case *te.Reduce:
		n := int64(1)
		for _, v := range e.Axes {
			n *= int64(v.Extent)
		}
		return n * (1 + opsPerElement(e.Body))
	}
	return 0
}

// footprint bounds the distinct elements of t that the accesses to it among
// accs read.
func footprint(t *te.Tensor, accs []*Access) int64 {
	size := int64(t.NumElements())
	rank := len(t.Shape)
	var buf [2 * 8]int
	bounds := buf[:0]
	if 2*rank > len(buf) {
		bounds = make([]int, 0, 2*rank)
	}
	for d := range rank {
		bounds = append(bounds, t.Shape[d], -1) // lo, hi
	}
	var points int64
	var vbuf [8]*te.Var
	for _, a := range accs {
		if a.In != t {
			continue
		}
		if len(a.Foreign) > 0 || len(a.Index) != rank {
			return size // opaque: assume the whole tensor
		}
		for d, x := range a.Index {
			l, h := x.ExtentBounds()
			bounds[2*d] = min(bounds[2*d], max(l, 0))
			bounds[2*d+1] = max(bounds[2*d+1], min(h, t.Shape[d]-1))
		}
		p := int64(1)
		for _, v := range appendVars(vbuf[:0], a.Index...) {
			p *= int64(v.Extent)
		}
		points += p
	}
	box := int64(1)
	for d := range rank {
		box *= int64(max(bounds[2*d+1]-bounds[2*d]+1, 0))
	}
	return min(size, box, points)
}

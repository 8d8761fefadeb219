package analysis

import (
	"fmt"
	"testing"

	"tec/te"
)

// TestSelectIntensity checks how selects count toward a TE's operations:
// a choice by index alone (a stack, padding) is index arithmetic and
// costs nothing beyond its dearer branch, so that a pure copy is
// memory-intensive (issue 23: stack(ys) of 8 tensors, three levels of
// such selects, was 6 operations per element and compute-intensive); a
// choice on loaded data counts 1 plus its condition.
func TestSelectIntensity(t *testing.T) {
	const n = 8
	b := newBuilder("stack")
	var ys []*te.Tensor
	for k := range n {
		ys = append(ys, b.input(fmt.Sprintf("y%d", k), 16))
	}
	// stack(ys) as the library writes it: a binary tree of selects on the
	// stacked axis.
	var tree func(lo, hi int, i, j te.Index) te.Expr
	tree = func(lo, hi int, i, j te.Index) te.Expr {
		if hi-lo == 1 {
			return ld(ys[lo], j)
		}
		mid := (lo + hi) / 2
		return sel(bin(te.Lt, ix(i), ci(mid)), tree(lo, mid, i, j), tree(mid, hi, i, j))
	}
	stack := b.compute("stack", shp(n, 16), func(ax []te.Index) te.Expr { return tree(0, n, ax[0], ax[1]) })
	mask := b.input("mask", 16)
	masked := b.compute("masked", shp(16), func(ax []te.Index) te.Expr {
		return sel(bin(te.Gt, ld(mask, ax[0]), cf(0)), mul(ld(ys[0], ax[0]), cf(2)), cf(0))
	})
	a := mustAnalyze(t, b.outputs(stack, masked))
	tests := []struct {
		t     *te.Tensor
		ops   int64
		class Class
	}{
		{stack, 0, MemoryIntensive},
		{masked, (1 + 1 + 1) * 16, MemoryIntensive}, // select, >, *
	}
	for _, tt := range tests {
		in := a.TE(tt.t).Intensity
		if in.Ops != tt.ops || in.Class != tt.class {
			t.Errorf("%s: %d ops, %v; want %d, %v", tt.t.Name, in.Ops, in.Class, tt.ops, tt.class)
		}
	}
}

package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"tec/te"
)

// randomStep appends to b one random one-relies-on-one TE that reads x and
// moves its values without changing them.
func randomStep(rng *rand.Rand, b *builder, x *te.Tensor, name string) *te.Tensor {
	s := x.Shape
	r := len(s)
	d := rng.IntN(r)
	switch rng.IntN(8) {
	case 0: // permute
		perm := rng.Perm(r)
		out := make([]int, r)
		for k, p := range perm {
			out[k] = s[p]
		}
		return b.compute(name, out, func(ax []te.Index) te.Expr {
			idx := make([]te.Index, r)
			for k, p := range perm {
				idx[p] = ax[k]
			}
			return ld(x, idx...)
		})
	case 1: // reshape, row-major, to a random factorisation
		n := x.NumElements()
		out := randomShape(rng, n)
		return b.compute(name, out, func(ax []te.Index) te.Expr {
			var flat te.Index
			for k := range out {
				flat = flat.Scale(out[k]).Add(ax[k])
			}
			idx := make([]te.Index, r)
			stride := n
			for k := range r {
				stride /= s[k]
				idx[k] = flat.Div(stride)
				if k > 0 {
					idx[k] = idx[k].Mod(s[k])
				}
			}
			return ld(x, idx...)
		})
	case 2: // slice
		start := rng.IntN(s[d])
		stop := start + 1 + rng.IntN(s[d]-start)
		out := slices.Clone(s)
		out[d] = stop - start
		return b.compute(name, out, func(ax []te.Index) te.Expr {
			idx := slices.Clone(ax)
			idx[d] = ax[d].AddConst(start)
			return ld(x, idx...)
		})
	case 3: // strided slice
		st := 1 + rng.IntN(3)
		out := slices.Clone(s)
		out[d] = (s[d] + st - 1) / st
		return b.compute(name, out, func(ax []te.Index) te.Expr {
			idx := slices.Clone(ax)
			idx[d] = ax[d].Scale(st)
			return ld(x, idx...)
		})
	case 4: // flip
		return b.compute(name, slices.Clone(s), func(ax []te.Index) te.Expr {
			idx := slices.Clone(ax)
			idx[d] = ax[d].Scale(-1).AddConst(s[d] - 1)
			return ld(x, idx...)
		})
	case 5: // roll
		k := rng.IntN(2*s[d]+1) - s[d]
		return b.compute(name, slices.Clone(s), func(ax []te.Index) te.Expr {
			idx := slices.Clone(ax)
			idx[d] = ax[d].AddConst(k).Mod(s[d])
			return ld(x, idx...)
		})
	case 6: // broadcast along a new axis
		if r < 4 {
			out := slices.Insert(slices.Clone(s), d, 1+rng.IntN(3))
			return b.compute(name, out, func(ax []te.Index) te.Expr {
				return ld(x, slices.Delete(slices.Clone(ax), d, d+1)...)
			})
		}
	}
	// relu of positive values: two loads of one element, one under a select
	return b.compute(name, slices.Clone(s), func(ax []te.Index) te.Expr {
		return sel(bin(te.Gt, ld(x, ax...), cf(0)), ld(x, ax...), cf(0))
	})
}

// randomShape returns a random shape of 1 to 3 dimensions with n elements.
func randomShape(rng *rand.Rand, n int) []int {
	var out []int
	for rank := 1 + rng.IntN(3); rank > 1; rank-- {
		var divs []int
		for k := 1; k <= n; k++ {
			if n%k == 0 {
				divs = append(divs, k)
			}
		}
		f := divs[rng.IntN(len(divs))]
		out = append(out, f)
		n /= f
	}
	return append(out, n)
}

// TestRandomChains is a property test: for random chains of
// one-relies-on-one TEs, the composed map agrees with applying the maps one
// after the other, and with the reference evaluator, at every point.
func TestRandomChains(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 99))
		b := newBuilder(fmt.Sprintf("chain%d", seed))
		x := b.input("x", randomShape(rng, 1+rng.IntN(48))...)
		ts := []*te.Tensor{x}
		for k := range 1 + rng.IntN(6) {
			ts = append(ts, randomStep(rng, b, ts[len(ts)-1], fmt.Sprintf("t%d", k)))
		}
		p := b.outputs(ts[len(ts)-1])
		a := mustAnalyze(t, p)
		var maps []*Map // outermost first
		for k := len(ts) - 1; k > 0; k-- {
			x := a.TE(ts[k])
			if x.Dependence != OneToOne || len(x.Accesses) != 1 {
				t.Fatalf("seed %d: %s is %v with %d accesses", seed, ts[k].Name, x.Dependence, len(x.Accesses))
			}
			maps = append(maps, x.Accesses[0].Map)
		}
		m, err := ComposeChain(maps...)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		m.Points(func(vals, index []int) bool {
			step := slices.Clone(vals)
			for _, f := range maps {
				step = f.Eval(step)
			}
			if !slices.Equal(step, index) {
				t.Fatalf("seed %d: composed %s maps %v to %v, the steps to %v\n%s", seed, m, vals, index, step, p)
			}
			return true
		})
		checkGather(t, p, m, 0)
		if t.Failed() {
			t.Fatalf("seed %d: program\n%s", seed, p)
		}
	}
}

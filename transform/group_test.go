package transform

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"tec/analysis"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// sharedWeightDAG is a random program of n statements, each a product of
// an earlier statement (or the input) with the one weight w, so that every
// product is a candidate compatible with every other, or the sum of two
// earlier statements. With stride k above 0, every statement reads the one k
// before it: k interleaved chains (one as in the mixed family of
// bench/scaling), each a product and a sum in turn.
func sharedWeightDAG(rng *rand.Rand, n, stride int) *te.Program {
	const d = 4
	b := tb.New("dag")
	x := b.Input("x", d, d)
	w := b.Param("w", d, d)
	ts := []*te.Tensor{x}
	pick := func() *te.Tensor {
		if stride > 0 {
			return ts[max(0, len(ts)-stride)]
		}
		return ts[rng.IntN(len(ts))]
	}
	for i := range n {
		name := fmt.Sprintf("t%d", i)
		product := rng.IntN(2) == 0
		if stride > 0 {
			product = i/stride%2 == 0 // the chains keep in step
		}
		if product {
			ts = append(ts, b.Matmul(name, pick(), w))
			continue
		}
		a, c := pick(), ts[rng.IntN(len(ts))]
		ts = append(ts, b.Compute(name, tb.Shape(d, d), func(ax []te.Index) te.Expr {
			return tb.Bin(te.Add, tb.Ld(a, ax...), tb.Ld(c, ax...))
		}))
	}
	return b.Program(ts[1:]...)
}

// naiveGroups forms the greedy groups with a search of the graph per
// member and candidate: the definition that independentGroup implements.
func naiveGroups(g *analysis.Graph, cands []*te.Tensor) [][]*te.Tensor {
	reaches := func(from, to *te.Tensor) bool {
		seen := map[*te.Tensor]bool{}
		stack := []*te.Tensor{from}
		for len(stack) > 0 {
			t := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, c := range g.Consumers(t) {
				if c == to {
					return true
				}
				if !seen[c] {
					seen[c] = true
					stack = append(stack, c)
				}
			}
		}
		return false
	}
	done := map[*te.Tensor]bool{}
	var groups [][]*te.Tensor
	for i, t := range cands {
		if done[t] {
			continue
		}
		group := []*te.Tensor{t}
		for _, u := range cands[i+1:] {
			if done[u] || !compatible(t, u) {
				continue
			}
			if !slices.ContainsFunc(group, func(m *te.Tensor) bool { return reaches(m, u) }) {
				group = append(group, u)
			}
		}
		groups = append(groups, group)
		markDone(done, group)
	}
	return groups
}

// markDone marks a group of two or more as done, as Horizontal does with
// the groups it fuses.
func markDone(done map[*te.Tensor]bool, group []*te.Tensor) {
	if len(group) > 1 {
		for _, m := range group {
			done[m] = true
		}
	}
}

func candidates(p *te.Program) []*te.Tensor {
	var cands []*te.Tensor
	for _, t := range p.Tensors {
		if t.Kind == te.Compute && isSumOfProducts(singleTopSum(t.Body)) {
			cands = append(cands, t)
		}
	}
	return cands
}

// TestIndependentGroupMatchesSearch checks the sweep, and its stop at the
// spine, against a search of the graph per member and candidate on random
// programs, chains (where the sweep stops at once) and general DAGs.
func TestIndependentGroupMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 7))
	fused := 0
	for trial := range 200 {
		stride := max(0, trial%6-2) // random DAGs, one, two or three chains
		p := sharedWeightDAG(rng, 2+rng.IntN(30), stride)
		g, err := analysis.NewGraph(p)
		if err != nil {
			t.Fatal(err)
		}
		cands := candidates(p)
		want := naiveGroups(g, cands)
		gr := newGrouper(g, cands)
		done := map[*te.Tensor]bool{}
		var got [][]*te.Tensor
		for _, c := range cands {
			if done[c] {
				continue
			}
			group := gr.independentGroup(c, done)
			got = append(got, group)
			markDone(done, group)
			if len(group) > 1 {
				fused++
			}
		}
		if fmt.Sprint(names(got)) != fmt.Sprint(names(want)) {
			t.Fatalf("trial %d (stride %d):\n%s\ngot  %v\nwant %v", trial, stride, p, names(got), names(want))
		}
	}
	if fused < 100 {
		t.Errorf("%d groups of two or more in all trials, want at least 100: the programs test too little", fused)
	}
}

func names(groups [][]*te.Tensor) [][]string {
	var out [][]string
	for _, g := range groups {
		var ns []string
		for _, t := range g {
			ns = append(ns, t.Name)
		}
		out = append(out, ns)
	}
	return out
}

// TestIndependentGroupStopsWhenAllReached checks that on chains, one or
// several interleaved, where every product is compatible with every later
// one, forming all the groups visits a number of positions linear in the
// program's length: each sweep stops once every later candidate is reached
// instead of running to the last candidate (issue 17: quadratic time on the
// mixed family).
func TestIndependentGroupStopsWhenAllReached(t *testing.T) {
	const n = 2000
	for _, stride := range []int{1, 2, 3} {
		p := sharedWeightDAG(rand.New(rand.NewPCG(1, 2)), n, stride)
		g, err := analysis.NewGraph(p)
		if err != nil {
			t.Fatal(err)
		}
		cands := candidates(p)
		gr := newGrouper(g, cands)
		done := map[*te.Tensor]bool{}
		for _, c := range cands {
			if !done[c] {
				markDone(done, gr.independentGroup(c, done))
			}
		}
		if limit := 2 * len(cands); gr.swept > limit {
			t.Errorf("%d chains: swept %d positions for %d candidates in %d statements, want at most %d", stride, gr.swept, len(cands), n, limit)
		}
	}
}

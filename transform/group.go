package transform

import (
	"tec/analysis"
	"tec/te"
)

// grouper forms the greedy groups of independent candidates of the
// horizontal transform over one graph, in time linear in the graph per
// group and constant per group on a spine (below).
//
// Candidates come after the leader in topological order, so a candidate is
// independent of the earlier members exactly when no member reaches it. One
// sweep over the graph from the leader marks what the members reach, taking
// each compatible candidate the sweep meets unmarked, instead of a
// reachability query per member and candidate (each a search of the graph).
//
// The sweep stops at the first node that the members reach, or that is a
// member, and that is on the spine: a compute TE that feeds the next compute
// TE of the order, which is on the spine too, or the last compute TE. Every
// TE after a spine node is reached from it, so no later candidate could join
// and the group is the one a sweep to the last candidate would form. A
// program whose statements each feed the next (the mixed family of
// bench/scaling, where every product reads the same weight and so each
// candidate is compatible with all the others) thus costs a few steps per
// group instead of a sweep to the end of the program.
type grouper struct {
	g     *analysis.Graph
	order []*te.Tensor
	cand  []bool // cand[p]: order[p] is a candidate
	last  int    // the position of the last candidate
	spine []bool
	mark  []int // mark[p] == stamp: a member of the current group reaches p
	stamp int
	swept int // positions visited by the sweeps so far
}

// newGrouper returns a grouper of the candidates cands of g.
func newGrouper(g *analysis.Graph, cands []*te.Tensor) *grouper {
	order := g.Order()
	gr := &grouper{
		g:     g,
		order: order,
		cand:  make([]bool, len(order)),
		spine: spineOf(g),
		mark:  make([]int, len(order)),
	}
	for _, t := range cands {
		p := mustPos(g, t)
		gr.cand[p] = true
		gr.last = max(gr.last, p)
	}
	return gr
}

// spineOf returns, for each position of g, whether its TE is on the spine:
// a compute TE that is the last one of the order, or that feeds the next
// compute TE, which is on the spine. Every TE after a spine node is reached
// from it: only compute TEs have producers, so a path from it stays among
// compute TEs.
func spineOf(g *analysis.Graph) []bool {
	order := g.Order()
	spine := make([]bool, len(order))
	next := -1 // the position of the next compute TE
	for p := len(order) - 1; p >= 0; p-- {
		t := order[p]
		if t.Kind != te.Compute {
			continue
		}
		if next < 0 {
			spine[p] = true
		} else if spine[next] {
			for _, c := range g.Consumers(t) {
				if c == order[next] {
					spine[p] = true
					break
				}
			}
		}
		next = p
	}
	return spine
}

// independentGroup returns t and the candidates after it, in order, that
// are not done, are compatible with t and are independent of every member
// taken before them: the greedy group that t leads.
func (gr *grouper) independentGroup(t *te.Tensor, done map[*te.Tensor]bool) []*te.Tensor {
	group := []*te.Tensor{t}
	first := mustPos(gr.g, t)
	gr.stamp++
	stop := func(p int) bool {
		gr.spread(gr.order[p])
		return gr.spine[p]
	}
	gr.swept++
	if stop(first) {
		return group
	}
	for p := first + 1; p <= gr.last; p++ {
		gr.swept++
		x := gr.order[p]
		switch {
		case gr.mark[p] == gr.stamp:
		case gr.cand[p] && !done[x] && compatible(t, x):
			group = append(group, x)
		default:
			continue
		}
		if stop(p) {
			break
		}
	}
	return group
}

// spread marks the consumers of x as reached by the current group.
func (gr *grouper) spread(x *te.Tensor) {
	for _, c := range gr.g.Consumers(x) {
		gr.mark[mustPos(gr.g, c)] = gr.stamp
	}
}

// mustPos returns t's position in g, where t is known to be.
func mustPos(g *analysis.Graph, t *te.Tensor) int {
	p, _ := g.Pos(t)
	return p
}

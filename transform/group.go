package transform

import (
	"tec/analysis"
	"tec/te"
)

// grouper forms the greedy groups of independent candidates of the
// horizontal transform over one graph.
//
// Candidates come after the leader in topological order, so a candidate is
// independent of the earlier members exactly when no member reaches it. One
// sweep over the graph from the leader marks what the members reach, taking
// each compatible candidate the sweep meets unmarked, instead of a
// reachability query per member and candidate (each a search of the graph).
//
// The sweep stops as soon as every candidate after it is known to be
// reached, so that no later one could join: the group is the one a sweep to
// the last candidate would form. Only the relevant TEs matter, the compute
// TEs that are or reach a candidate; every producer of a relevant TE is
// relevant. A relevant TE after position p is reached if one of its
// producers is: by induction along the order, all of them are reached when
// none is a root (a relevant TE without compute producers) and every entry
// at p (a relevant TE after p whose producers all lie at or before p) is
// marked. The sweep keeps the number of unmarked entries as it goes, adding
// the TEs whose last producer it passes and removing the TE it passes, so
// the test costs no more than the sweep. On a program whose statements each
// feed the next, or several such chains once the first group has taken a
// product of each (the mixed family of bench/scaling, where every product
// reads the same weight and so every candidate is compatible with every
// other), a group thus costs a few steps instead of a sweep to the end of
// the program.
type grouper struct {
	g     *analysis.Graph
	order []*te.Tensor
	cand  []bool // cand[p]: order[p] is a candidate
	last  int    // the position of the last candidate

	entry    []bool  // entry[p]: order[p] is relevant and has compute producers
	arrive   [][]int // arrive[p]: the entries whose last compute producer is at p
	entries  []int   // entries[p]: the entries after p whose producers are all at or before p
	lastRoot int     // the position of the last relevant root, -1 if none

	mark  []int // mark[p] == stamp: a member of the current group reaches p
	stamp int
	swept int // positions visited by the sweeps so far
}

// newGrouper returns a grouper of the candidates cands of g.
func newGrouper(g *analysis.Graph, cands []*te.Tensor) *grouper {
	order := g.Order()
	n := len(order)
	gr := &grouper{
		g:        g,
		order:    order,
		cand:     make([]bool, n),
		entry:    make([]bool, n),
		arrive:   make([][]int, n),
		entries:  make([]int, n),
		lastRoot: -1,
		mark:     make([]int, n),
	}
	for _, t := range cands {
		p := mustPos(g, t)
		gr.cand[p] = true
		gr.last = max(gr.last, p)
	}
	relevant := make([]bool, n)
	for p := n - 1; p >= 0; p-- {
		relevant[p] = gr.cand[p]
		for _, c := range g.Consumers(order[p]) {
			relevant[p] = relevant[p] || relevant[mustPos(g, c)]
		}
	}
	delta := make([]int, n+1)
	for p, t := range order {
		if !relevant[p] {
			continue
		}
		lastProducer := -1
		for _, u := range g.Producers(t) {
			if u.Kind == te.Compute {
				lastProducer = max(lastProducer, mustPos(g, u))
			}
		}
		if lastProducer < 0 {
			gr.lastRoot = p
			continue
		}
		gr.entry[p] = true
		gr.arrive[lastProducer] = append(gr.arrive[lastProducer], p)
		delta[lastProducer]++
		delta[p]--
	}
	for p, k := 0, 0; p < n; p++ {
		k += delta[p]
		gr.entries[p] = k
	}
	return gr
}

// independentGroup returns t and the candidates after it, in order, that
// are not done, are compatible with t and are independent of every member
// taken before them: the greedy group that t leads.
func (gr *grouper) independentGroup(t *te.Tensor, done map[*te.Tensor]bool) []*te.Tensor {
	group := []*te.Tensor{t}
	first := mustPos(gr.g, t)
	gr.stamp++
	gr.swept++
	gr.spread(t)
	// Before the sweep only t has marked anything, and only TEs that
	// arrive at first.
	unmarked := gr.entries[first] - gr.marked(gr.arrive[first])
	for p := first + 1; p <= gr.last && (unmarked > 0 || p <= gr.lastRoot); p++ {
		gr.swept++
		x := gr.order[p]
		reached := gr.mark[p] == gr.stamp
		if gr.entry[p] && !reached {
			unmarked-- // x leaves the entries
		}
		switch {
		case reached:
			gr.spread(x)
		case gr.cand[p] && !done[x] && compatible(t, x):
			group = append(group, x)
			gr.spread(x)
		}
		unmarked += len(gr.arrive[p]) - gr.marked(gr.arrive[p])
	}
	return group
}

// marked returns how many of the positions ps the current group reaches.
func (gr *grouper) marked(ps []int) int {
	k := 0
	for _, p := range ps {
		if gr.mark[p] == gr.stamp {
			k++
		}
	}
	return k
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

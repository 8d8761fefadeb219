package transform

import (
	"tec/analysis"
	"tec/te"
)

// independentGroup returns t and the candidates after it, in order, that
// are not done, are compatible with t and are independent of every member
// taken before them: the greedy group that t leads.
//
// Candidates come after t in topological order, so a candidate is
// independent of the earlier members exactly when no member reaches it.
// One sweep over the graph from t to the last candidate marks what the
// members reach, taking each candidate the sweep meets unmarked, instead of
// a reachability query per member and candidate (each a search of the
// graph), which made the transform quadratic, or worse, in program length.
func independentGroup(g *analysis.Graph, t *te.Tensor, cands []*te.Tensor, done map[*te.Tensor]bool) []*te.Tensor {
	group := []*te.Tensor{t}
	open := map[*te.Tensor]bool{} // the candidates that may join
	for _, u := range cands {
		if !done[u] && compatible(t, u) {
			open[u] = true
		}
	}
	if len(open) == 0 {
		return group
	}
	first, _ := g.Pos(t)
	last := first
	for u := range open {
		last = max(last, mustPos(g, u))
	}
	order := g.Order()
	reached := make([]bool, last+1-first) // reached[p-first]: a member reaches position p
	spread := func(x *te.Tensor) {
		for _, c := range g.Consumers(x) {
			if p := mustPos(g, c); p <= last {
				reached[p-first] = true
			}
		}
	}
	spread(t)
	for p := first + 1; p <= last; p++ {
		x := order[p]
		switch {
		case reached[p-first]:
			spread(x)
		case open[x]:
			group = append(group, x)
			spread(x)
		}
	}
	return group
}

// mustPos returns t's position in g, where t is known to be.
func mustPos(g *analysis.Graph, t *te.Tensor) int {
	p, _ := g.Pos(t)
	return p
}

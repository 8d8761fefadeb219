package analysis

import (
	"slices"

	"tec/te"
)

// interval is a reachability label: hi is a node's rank in the post-order of
// one depth-first traversal, lo the least such rank among its descendants.
// If u reaches v then v's interval lies inside u's (GRAIL, Yildirim et al.,
// VLDB 2010), so an interval that does not nest proves there is no path.
type interval struct{ lo, hi int32 }

// reachLabels holds the labels of two traversals that visit children in
// opposite orders; two labellings catch most non-paths that one misses.
type reachLabels [2][]interval

func newReachLabels(g *Graph) reachLabels {
	var r reachLabels
	n := len(g.nodes)
	type frame struct {
		v    int32
		next int
	}
	for d := range r {
		post := make([]int32, n)
		seen := make([]bool, n)
		var rank int32
		var stack []frame
		for k := range n {
			root := int32(k)
			if d == 1 {
				root = int32(n - 1 - k)
			}
			if seen[root] || len(g.preds[root]) > 0 {
				continue
			}
			seen[root] = true
			stack = append(stack, frame{v: root})
			for len(stack) > 0 {
				top := &stack[len(stack)-1]
				succs := g.succs[top.v]
				if top.next < len(succs) {
					c := succs[top.next]
					if d == 1 {
						c = succs[len(succs)-1-top.next]
					}
					top.next++
					if !seen[c] {
						seen[c] = true
						stack = append(stack, frame{v: c})
					}
					continue
				}
				post[top.v] = rank
				rank++
				stack = stack[:len(stack)-1]
			}
		}
		labels := make([]interval, n)
		for v := n - 1; v >= 0; v-- {
			lo := post[v]
			for _, s := range g.succs[v] {
				lo = min(lo, labels[s].lo)
			}
			labels[v] = interval{lo: lo, hi: post[v]}
		}
		r[d] = labels
	}
	return r
}

// mayReach reports whether the labels allow a path from u to v.
func (r *reachLabels) mayReach(u, v int32) bool {
	for d := range r {
		a, b := r[d][u], r[d][v]
		if b.lo < a.lo || b.hi > a.hi {
			return false
		}
	}
	return true
}

// reaches reports whether there is a path of one or more edges from u to v.
func (g *Graph) reaches(u, v int32) bool {
	found, _ := g.search(u, v)
	return found
}

// search reports whether there is a path of one or more edges from u to v,
// and how many nodes it marked on the way. Positions, levels and interval
// labels answer most queries at once; the rest search forward from u,
// pruned by the same three tests, and stop at the first node found that is
// one of v's producers. (Stopping only at v itself made a query such as
// "does this step reach the output that stacks every step's result" follow
// the program to its last step, marking every node on the way: quadratic
// over all such queries.)
func (g *Graph) search(u, v int32) (found bool, marked int) {
	if u >= v || g.level[u] >= g.level[v] || !g.reach.mayReach(u, v) {
		return false, 0
	}
	producers := g.preds[v]
	if _, ok := slices.BinarySearch(producers, u); ok {
		return true, 0
	}
	seen := map[int32]bool{u: true}
	stack := []int32{u}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range g.succs[x] {
			if _, ok := slices.BinarySearch(producers, s); ok {
				return true, len(seen)
			}
			if s > v || g.level[s] >= g.level[v] || seen[s] || !g.reach.mayReach(s, v) {
				continue
			}
			seen[s] = true
			stack = append(stack, s)
		}
	}
	return false, len(seen)
}

// Reaches reports whether there is a path of one or more edges from a to b:
// whether b depends on a, directly or through other tensors.
func (g *Graph) Reaches(a, b *te.Tensor) bool { return g.reaches(g.mustPos(a), g.mustPos(b)) }

// Independent reports whether a and b are distinct and no path joins them in
// either direction, so that they may be computed in either order or at once.
func (g *Graph) Independent(a, b *te.Tensor) bool {
	u, v := g.mustPos(a), g.mustPos(b)
	if u == v {
		return false
	}
	if u > v {
		u, v = v, u
	}
	return !g.reaches(u, v)
}

// chainRanks computes, for the distinct nodes of set (ascending), the most set
// members on any path that ends at each member (before) and on any path that
// starts at it (after), both counting the member itself.
//
// Every path between members lies between the first and the last member in
// topological order. When that window is small next to the number of pairs
// of members, one pass over it computes the ranks; otherwise (few members
// far apart, such as a result read by the next step and by the program's
// last TE) reachability queries between pairs of members do, which keeps the
// cost of a whole program's reuse analysis near linear.
func (g *Graph) chainRanks(set []int32) (before, after []int32) {
	if len(set) == 0 {
		return nil, nil
	}
	k := int64(len(set))
	if window := int64(set[len(set)-1]-set[0]) + 1; window > 16*k*k {
		return g.chainRanksByQueries(set)
	}
	return g.chainRanksByScan(set)
}

func (g *Graph) chainRanksByQueries(set []int32) (before, after []int32) {
	n := len(set)
	before, after = make([]int32, n), make([]int32, n)
	reach := make([]bool, n*n) // reach[i*n+j]: set[i] reaches set[j], i < j
	for j := range n {
		before[j] = 1
		for i := range j {
			if g.reaches(set[i], set[j]) {
				reach[i*n+j] = true
				before[j] = max(before[j], before[i]+1)
			}
		}
	}
	for i := n - 1; i >= 0; i-- {
		after[i] = 1
		for j := i + 1; j < n; j++ {
			if reach[i*n+j] {
				after[i] = max(after[i], after[j]+1)
			}
		}
	}
	return before, after
}

func (g *Graph) chainRanksByScan(set []int32) (before, after []int32) {
	lo, hi := set[0], set[len(set)-1]
	w := int(hi-lo) + 1
	member := make([]bool, w)
	for _, v := range set {
		member[v-lo] = true
	}
	h := make([]int32, w)
	for v := lo; v <= hi; v++ {
		var m int32
		for _, p := range g.preds[v] {
			if p >= lo {
				m = max(m, h[p-lo])
			}
		}
		if member[v-lo] {
			m++
		}
		h[v-lo] = m
	}
	before = make([]int32, len(set))
	for k, v := range set {
		before[k] = h[v-lo]
	}
	clear(h)
	for v := hi; v >= lo; v-- {
		var m int32
		for _, s := range g.succs[v] {
			if s <= hi {
				m = max(m, h[s-lo])
			}
		}
		if member[v-lo] {
			m++
		}
		h[v-lo] = m
	}
	after = make([]int32, len(set))
	for k, v := range set {
		after[k] = h[v-lo]
	}
	return before, after
}

// sortedIDs returns the distinct positions of ts, ascending.
func (g *Graph) sortedIDs(ts []*te.Tensor) []int32 {
	ids := make([]int32, len(ts))
	for k, t := range ts {
		ids[k] = g.mustPos(t)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Antichains partitions the distinct tensors of set into the fewest groups of
// mutually independent tensors: group k holds the members whose longest chain
// of dependent members ending at them has k+1 of them (Mirsky's theorem makes
// the partition minimal). Groups and their members are in topological order.
// The cost is at most linear in the size of the part of the graph between
// the first and the last member.
func (g *Graph) Antichains(set []*te.Tensor) [][]*te.Tensor {
	ids := g.sortedIDs(set)
	before, _ := g.chainRanks(ids)
	var groups [][]*te.Tensor
	for k, v := range ids {
		r := int(before[k]) - 1
		for len(groups) <= r {
			groups = append(groups, nil)
		}
		groups[r] = append(groups[r], g.nodes[v])
	}
	return groups
}

package analysis

import (
	"math/bits"

	"tec/te"
)

// domTree is the dominator tree of the graph rooted at a virtual entry node
// (numbered len(nodes)) with an edge to every source. In a DAG the immediate
// dominator of a node is the nearest common ancestor, in the dominator tree,
// of its predecessors, so one pass in topological order builds the tree;
// ancestors are found by binary lifting, O(log n) per query. The graph builds
// it on the first dominance query.
type domTree struct {
	depth []int32   // depth in the tree; the root has 0
	up    [][]int32 // up[k][v] is v's 2^k-th ancestor (the root's is itself)
}

func newDomTree(g *Graph) domTree {
	n := len(g.nodes)
	root := int32(n)
	levels := bits.Len(uint(n + 1))
	d := domTree{depth: make([]int32, n+1), up: make([][]int32, levels)}
	for k := range d.up {
		d.up[k] = make([]int32, n+1)
		d.up[k][root] = root
	}
	for v := range n {
		idom := root
		for k, p := range g.preds[v] {
			if k == 0 {
				idom = p
			} else {
				idom = d.lca(idom, p)
			}
		}
		d.depth[v] = d.depth[idom] + 1
		d.up[0][v] = idom
		for k := 1; k < levels; k++ {
			d.up[k][v] = d.up[k-1][d.up[k-1][v]]
		}
	}
	return d
}

// ancestor returns v's ancestor at the given depth (at most v's own).
func (d *domTree) ancestor(v int32, depth int32) int32 {
	for k := len(d.up) - 1; k >= 0; k-- {
		if d.depth[v]-int32(1)<<k >= depth {
			v = d.up[k][v]
		}
	}
	return v
}

func (d *domTree) lca(a, b int32) int32 {
	if d.depth[a] < d.depth[b] {
		a, b = b, a
	}
	a = d.ancestor(a, d.depth[b])
	if a == b {
		return a
	}
	for k := len(d.up) - 1; k >= 0; k-- {
		if d.up[k][a] != d.up[k][b] {
			a, b = d.up[k][a], d.up[k][b]
		}
	}
	return d.up[0][a]
}

// Idom returns t's immediate dominator: the last tensor through which every
// path from the program's sources (its placeholders and any tensor that loads
// nothing) to t passes. It returns nil when no single tensor does, as for the
// sources themselves and for tensors that read two independent inputs.
func (g *Graph) Idom(t *te.Tensor) *te.Tensor {
	i := g.domTree().up[0][g.mustPos(t)]
	if int(i) == len(g.nodes) {
		return nil
	}
	return g.nodes[i]
}

// Dominates reports whether every path from the sources to b passes through
// a. Every tensor dominates itself.
func (g *Graph) Dominates(a, b *te.Tensor) bool {
	u, v := g.mustPos(a), g.mustPos(b)
	d := g.domTree()
	if d.depth[u] > d.depth[v] {
		return false
	}
	return d.ancestor(v, d.depth[u]) == u
}

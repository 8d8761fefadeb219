package analysis

import (
	"fmt"
	"slices"
	"sync"

	"tec/te"
)

// Graph is the tensor-dependency graph of a program: one node per tensor and
// an edge from every tensor to each compute tensor whose body loads it.
//
// Nodes are numbered by their position in the program's definition order,
// which is a topological order. A Graph is immutable once built and safe for
// concurrent use.
type Graph struct {
	prog   *te.Program
	nodes  []*te.Tensor
	pos    map[*te.Tensor]int32 // every node's position
	preds  [][]int32            // distinct producers of each node, ascending
	succs  [][]int32            // distinct consumers of each node, ascending
	level  []int32              // length of the longest path from a source
	output []bool               // whether the node is a program output

	reach reachLabels

	domOnce sync.Once
	dom     domTree // built on first use
}

// NewGraph builds the tensor-dependency graph of p. It reports an error if p
// is malformed: a nil or repeated tensor, a body that loads a tensor that is
// not in p or is defined after the tensor that loads it, or an output that is
// not in p.
func NewGraph(p *te.Program) (*Graph, error) {
	if p == nil {
		return nil, fmt.Errorf("analysis: nil program")
	}
	n := len(p.Tensors)
	g := &Graph{
		prog:   p,
		nodes:  p.Tensors,
		pos:    make(map[*te.Tensor]int32, n),
		preds:  make([][]int32, n),
		succs:  make([][]int32, n),
		level:  make([]int32, n),
		output: make([]bool, n),
	}
	seen := make(map[*te.Tensor]bool, n)
	for i, t := range p.Tensors {
		if t == nil {
			return nil, fmt.Errorf("analysis: program %q: tensor %d is nil", p.Name, i)
		}
		if seen[t] {
			return nil, fmt.Errorf("analysis: program %q: tensor %q appears twice", p.Name, t.Name)
		}
		seen[t] = true
		g.pos[t] = int32(i)
	}
	var nsucc []int32 // number of consumers of each node, then a fill cursor
	nsucc = make([]int32, n)
	for i, t := range p.Tensors {
		if t.Kind != te.Compute {
			continue
		}
		if t.Body == nil {
			return nil, fmt.Errorf("analysis: program %q: compute tensor %q has no body", p.Name, t.Name)
		}
		var preds []int32
		var err error
		te.Walk(t.Body, func(e te.Expr) bool {
			l, ok := e.(*te.Load)
			if !ok || err != nil {
				return err == nil
			}
			j, ok := g.lookup(l.Tensor)
			switch {
			case !ok:
				err = fmt.Errorf("analysis: program %q: %q loads %q, which is not in the program", p.Name, t.Name, l.Tensor.Name)
			case int(j) >= i:
				err = fmt.Errorf("analysis: program %q: %q loads %q, which is defined after it", p.Name, t.Name, l.Tensor.Name)
			case !slices.Contains(preds, j):
				preds = append(preds, j)
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		slices.Sort(preds)
		g.preds[i] = preds
		var lv int32
		for _, j := range preds {
			nsucc[j]++
			lv = max(lv, g.level[j]+1)
		}
		g.level[i] = lv
	}
	// Consumers, ascending: one backing array, filled in node order.
	total := 0
	for _, c := range nsucc {
		total += int(c)
	}
	backing := make([]int32, total)
	off := 0
	for i, c := range nsucc {
		g.succs[i] = backing[off : off : off+int(c)]
		off += int(c)
	}
	for i, ps := range g.preds {
		for _, j := range ps {
			g.succs[j] = append(g.succs[j], int32(i))
		}
	}
	for _, t := range p.Outputs {
		i, ok := g.lookup(t)
		if !ok {
			return nil, fmt.Errorf("analysis: program %q: output %q is not in the program", p.Name, nameOf(t))
		}
		g.output[i] = true
	}
	for _, t := range p.Tensors {
		if i, ok := g.lookup(t); ok && t.Update != nil { // written into an input: a result of its own
			g.output[i] = true
		}
	}
	g.reach = newReachLabels(g)
	return g, nil
}

// lookup returns t's position: its ID when that is where it is, as the front
// end makes it, and otherwise the position recorded in pos. A program's
// tensors may be shared with another that numbers them anew (the pipeline's
// transformed copies share placeholders: tec explain --plan built one of a
// program with params declared in a loop after analysing it), so the graph
// records every tensor's position and trusts no ID that it has not checked.
func (g *Graph) lookup(t *te.Tensor) (int32, bool) {
	if t != nil && t.ID >= 0 && t.ID < len(g.nodes) && g.nodes[t.ID] == t {
		return int32(t.ID), true
	}
	i, ok := g.pos[t]
	return i, ok
}

// domTree returns the dominator tree, building it on first use.
func (g *Graph) domTree() *domTree {
	g.domOnce.Do(func() { g.dom = newDomTree(g) })
	return &g.dom
}

func nameOf(t *te.Tensor) string {
	if t == nil {
		return "<nil>"
	}
	return t.Name
}

// Program returns the program the graph was built from.
func (g *Graph) Program() *te.Program { return g.prog }

// Len returns the number of tensors.
func (g *Graph) Len() int { return len(g.nodes) }

// Order returns every tensor in topological order (the program's definition
// order). The caller must not modify the slice.
func (g *Graph) Order() []*te.Tensor { return g.nodes }

// Pos returns t's position in the topological order, and false if t is not in
// the graph.
func (g *Graph) Pos(t *te.Tensor) (int, bool) {
	i, ok := g.lookup(t)
	return int(i), ok
}

// mustPos returns t's position and panics if t is not in the graph: asking
// about a foreign tensor is a programming error.
func (g *Graph) mustPos(t *te.Tensor) int32 {
	i, ok := g.lookup(t)
	if !ok {
		panic(fmt.Sprintf("analysis: tensor %q is not in program %q", nameOf(t), g.prog.Name))
	}
	return i
}

func (g *Graph) tensors(ids []int32) []*te.Tensor {
	if len(ids) == 0 {
		return nil
	}
	ts := make([]*te.Tensor, len(ids))
	for k, i := range ids {
		ts[k] = g.nodes[i]
	}
	return ts
}

// Producers returns the distinct tensors that t's body loads, in topological
// order (none for a placeholder).
func (g *Graph) Producers(t *te.Tensor) []*te.Tensor { return g.tensors(g.preds[g.mustPos(t)]) }

// Consumers returns the distinct compute tensors whose bodies load t, in
// topological order.
func (g *Graph) Consumers(t *te.Tensor) []*te.Tensor { return g.tensors(g.succs[g.mustPos(t)]) }

// IsOutput reports whether t is one of the program's outputs.
func (g *Graph) IsOutput(t *te.Tensor) bool { return g.output[g.mustPos(t)] }

// Level returns the length of the longest path from a source (a tensor that
// loads nothing) to t. Tensors on the same level are mutually independent.
func (g *Graph) Level(t *te.Tensor) int { return int(g.level[g.mustPos(t)]) }

// Levels returns the tensors grouped by Level, each group in topological
// order. Every group is an independent set (no path joins two of its
// members), and their number is the length of the longest path plus one, the
// fewest independent sets that cover the graph (Mirsky's theorem).
func (g *Graph) Levels() [][]*te.Tensor {
	var ls [][]*te.Tensor
	for i, t := range g.nodes {
		l := int(g.level[i])
		for len(ls) <= l {
			ls = append(ls, nil)
		}
		ls[l] = append(ls[l], t)
	}
	return ls
}

// LiveRange is the interval of the topological order during which a tensor's
// value must be kept: from the step that defines it to the last step that
// reads it. Steps are positions in Graph.Order.
type LiveRange struct {
	Def     int  // position of the tensor itself
	LastUse int  // position of its last consumer; Def when it has none
	LiveOut bool // the tensor is a program output, so it lives to the end
}

// Len returns the number of steps the range spans, counting the end of the
// program for an output.
func (r LiveRange) Len(n int) int {
	if r.LiveOut {
		return n - r.Def
	}
	return r.LastUse - r.Def + 1
}

// LiveRange returns t's live range.
func (g *Graph) LiveRange(t *te.Tensor) LiveRange {
	i := g.mustPos(t)
	r := LiveRange{Def: int(i), LastUse: int(i), LiveOut: g.output[i]}
	if s := g.succs[i]; len(s) > 0 {
		r.LastUse = int(s[len(s)-1])
	}
	return r
}

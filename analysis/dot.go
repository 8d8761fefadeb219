package analysis

import (
	"fmt"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"

	"tec/te"
)

// Collapse says how DOT groups tensors by their te.Tensor.Scope.
type Collapse struct {
	// Mode is "" or "none" (one node per tensor), "call" (one node per
	// function call: the scope up to its first element that is not a loop
	// iteration), "loop" (one node per iteration of the outermost loop: the
	// scope up to its first element "name[k]"), or "depth" (the first Depth
	// elements of the scope).
	Mode  string
	Depth int
}

// ParseCollapse parses the value of `tec graph --collapse`: "none", "call",
// "loop" or a depth N > 0.
func ParseCollapse(s string) (Collapse, error) {
	switch s {
	case "", "none", "call", "loop":
		return Collapse{Mode: s}, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return Collapse{Mode: "depth", Depth: n}, nil
	}
	return Collapse{}, fmt.Errorf("collapse must be none, call, loop or a depth > 0, not %q", s)
}

// key returns the group of a tensor with the given scope, and false when the
// tensor stays a node of its own.
func (c Collapse) key(scope []string) (string, bool) {
	n := 0
	switch c.Mode {
	case "call", "loop":
		wantLoop := c.Mode == "loop"
		for n < len(scope) && isLoopIteration(scope[n]) != wantLoop {
			n++
		}
		if n == len(scope) {
			return "", false
		}
		n++
	case "depth":
		n = min(c.Depth, len(scope))
	}
	if n == 0 {
		return "", false
	}
	return strings.Join(scope[:n], "/"), true
}

// isLoopIteration reports whether a scope element names a loop iteration,
// as "t[3]" does, rather than a function call.
func isLoopIteration(s string) bool { return strings.HasSuffix(s, "]") && strings.Contains(s, "[") }

// Colours of the DOT nodes.
const (
	colourInput   = "#cfe2f3" // inputs
	colourParam   = "#e0e0e0" // params
	colourCompute = "#f6b26b" // compute-intensive TEs
	colourMemory  = "#b6d7a8" // memory-intensive TEs
)

// DOT returns the tensor-dependency graph in Graphviz's language, written by
// gonum's encoder: one node per tensor, labelled with its name and type,
// filled by class (inputs blue, params grey, compute-intensive TEs orange,
// memory-intensive TEs green), drawn with a double border when the TE is
// one-relies-on-many, with its source location and analysis as tooltip; an
// edge from each tensor to every TE that reads it. With a Collapse, tensors
// that share a scope group become one node, labelled with the group and how
// many TEs it holds, orange if any of them is compute-intensive. A graph of
// more than a few hundred edges asks Graphviz for a quicker, plainer layout.
func (a *Analysis) DOT(c Collapse) ([]byte, error) {
	dg := &dotGraph{DirectedGraph: simple.NewDirectedGraph(), name: a.Program.Name}
	nodeOf := make([]*dotNode, a.Graph.Len())
	groups := map[string]*dotNode{}
	used := map[string]bool{}
	for _, t := range a.Graph.Order() {
		used[t.Name] = true
	}
	for i, t := range a.Graph.Order() {
		key, grouped := c.key(t.Scope)
		if !grouped {
			n := &dotNode{id: int64(dg.Nodes().Len()), name: t.Name, attrs: a.tensorAttrs(t)}
			dg.AddNode(n)
			nodeOf[i] = n
			continue
		}
		n := groups[key]
		if n == nil {
			name := key
			for used[name] {
				name += "'"
			}
			used[name] = true
			n = &dotNode{id: int64(dg.Nodes().Len()), name: name, group: &groupInfo{key: key}}
			groups[key] = n
			dg.AddNode(n)
		}
		n.group.add(a, t)
		nodeOf[i] = n
	}
	for _, n := range groups {
		n.attrs = n.group.attrs()
	}
	for i := range a.Graph.Order() {
		for _, s := range a.Graph.succs[i] {
			from, to := nodeOf[i], nodeOf[s]
			if from != to && !dg.HasEdgeFromTo(from.id, to.id) {
				dg.SetEdge(dg.NewEdge(from, to))
			}
		}
	}
	dg.large = dg.Edges().Len() > largeGraphEdges
	b, err := dot.Marshal(dg, a.Program.Name, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("analysis: writing DOT for %q: %w", a.Program.Name, err)
	}
	return append(b, '\n'), nil
}

func (a *Analysis) tensorAttrs(t *te.Tensor) []encoding.Attribute {
	label := t.Name + "\n" + t.TypeString()
	tip := []string{t.Kind.String()}
	fill, shape, peripheries := colourInput, "ellipse", "1"
	switch t.Kind {
	case te.Param:
		fill = colourParam
	case te.Compute:
		x := a.TE(t)
		shape, fill = "box", colourMemory
		if x.Intensity.Class == ComputeIntensive {
			fill = colourCompute
		}
		if x.Dependence != OneToOne {
			peripheries = "2"
		}
		tip = []string{fmt.Sprintf("%s, %s, %.3g ops per element", x.Dependence, x.Intensity.Class, x.Intensity.Ratio)}
	}
	if t.Span.IsValid() {
		tip = append([]string{t.Span.String()}, tip...)
	}
	if len(t.Scope) > 0 {
		tip = append(tip, "in "+strings.Join(t.Scope, " / "))
	}
	return []encoding.Attribute{
		{Key: "label", Value: strconv.Quote(label)},
		{Key: "tooltip", Value: strconv.Quote(strings.Join(tip, "\n"))},
		{Key: "shape", Value: shape},
		{Key: "peripheries", Value: peripheries},
		{Key: "fillcolor", Value: strconv.Quote(fill)},
	}
}

// groupInfo accumulates the tensors collapsed into one node.
type groupInfo struct {
	key          string
	tes, ci, mr  int
	placeholders int
	locations    []string
}

func (g *groupInfo) add(a *Analysis, t *te.Tensor) {
	if t.Kind != te.Compute {
		g.placeholders++
	} else {
		g.tes++
		x := a.TE(t)
		if x.Intensity.Class == ComputeIntensive {
			g.ci++
		}
		if x.Dependence != OneToOne {
			g.mr++
		}
	}
	if t.Span.IsValid() && len(g.locations) < 8 {
		loc := t.Name + " " + t.Span.String()
		g.locations = append(g.locations, loc)
	}
}

func (g *groupInfo) attrs() []encoding.Attribute {
	label := fmt.Sprintf("%s\n%d TEs (%d CI, %d MR)", g.key, g.tes, g.ci, g.mr)
	if g.placeholders > 0 {
		label += fmt.Sprintf(", %d placeholders", g.placeholders)
	}
	fill := colourMemory
	if g.ci > 0 {
		fill = colourCompute
	}
	tip := strings.Join(g.locations, "\n")
	if n := g.tes + g.placeholders; n > len(g.locations) {
		tip += fmt.Sprintf("\n… %d tensors in all", n)
	}
	return []encoding.Attribute{
		{Key: "label", Value: strconv.Quote(label)},
		{Key: "tooltip", Value: strconv.Quote(tip)},
		{Key: "shape", Value: "box3d"},
		{Key: "fillcolor", Value: strconv.Quote(fill)},
	}
}

// dotNode is a node of the DOT graph: a tensor or a group of tensors.
type dotNode struct {
	id    int64
	name  string
	attrs []encoding.Attribute
	group *groupInfo
}

func (n *dotNode) ID() int64                        { return n.id }
func (n *dotNode) DOTID() string                    { return n.name }
func (n *dotNode) Attributes() []encoding.Attribute { return n.attrs }

// largeGraphEdges is the number of edges above which DOT asks Graphviz for a
// quicker layout: few network-simplex and crossing-minimisation passes and
// straight edges. Without them dot takes minutes over a collapsed LSTM,
// whose weights feed every step.
const largeGraphEdges = 300

// dotGraph adds a name and default attributes to a simple.DirectedGraph.
type dotGraph struct {
	*simple.DirectedGraph
	name  string
	large bool
}

func (g *dotGraph) DOTID() string { return g.name }

func (g *dotGraph) DOTAttributers() (graphAttrs, nodeAttrs, edgeAttrs encoding.Attributer) {
	ga := attrs{{Key: "rankdir", Value: "TB"}}
	if g.large {
		ga = append(ga, attrs{{Key: "nslimit", Value: "1"}, {Key: "nslimit1", Value: "1"},
			{Key: "mclimit", Value: "0.1"}, {Key: "remincross", Value: "false"}, {Key: "splines", Value: "line"}}...)
	}
	return ga,
		attrs{{Key: "style", Value: "filled"}, {Key: "fontname", Value: "Helvetica"}, {Key: "fontsize", Value: "10"}},
		attrs{{Key: "color", Value: `"#666666"`}}
}

// attrs is a fixed list of attributes.
type attrs []encoding.Attribute

func (a attrs) Attributes() []encoding.Attribute { return a }

var _ graph.Node = (*dotNode)(nil)

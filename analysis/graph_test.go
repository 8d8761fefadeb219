package analysis

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"tec/te"
)

// randomDAG returns a program of n tensors: a few inputs, then compute
// tensors that each add up to fanin earlier ones, chosen near or far.
func randomDAG(rng *rand.Rand, n, fanin int) *te.Program {
	b := newBuilder("dag")
	var ts []*te.Tensor
	for k := range n {
		if k < 1+n/10 && (k == 0 || rng.IntN(2) == 0) {
			ts = append(ts, b.input(fmt.Sprintf("in%d", k), 1))
			continue
		}
		var args []*te.Tensor
		for range 1 + rng.IntN(fanin) {
			j := len(ts) - 1 - rng.IntN(min(len(ts), 4))
			if rng.IntN(3) == 0 {
				j = rng.IntN(len(ts))
			}
			args = append(args, ts[j])
		}
		ts = append(ts, b.compute(fmt.Sprintf("t%d", k), shp(1), func(ax []te.Index) te.Expr {
			e := ld(args[0], ax...)
			for _, a := range args[1:] {
				e = add(e, ld(a, ax...))
			}
			return e
		}))
	}
	return b.outputs(ts[len(ts)-1])
}

// TestSearchStopsAtProducer checks that a reachability search stops at a
// producer of its target rather than at the target: in a program whose
// steps g0, g1, ... each feed the next and a result h that the output reads
// with every other, the search from g0 to the output, which tries the
// latest consumer first, followed the steps to the last one.
func TestSearchStopsAtProducer(t *testing.T) {
	const steps = 200
	b := newBuilder("steps")
	g := b.input("x", 1)
	var hs []*te.Tensor
	var g0 *te.Tensor
	for k := range steps {
		prev := g
		g = b.compute(fmt.Sprintf("g%d", k), shp(1), func(ax []te.Index) te.Expr { return ld(prev, ax...) })
		if g0 == nil {
			g0 = g
		}
		cur := g
		hs = append(hs, b.compute(fmt.Sprintf("h%d", k), shp(1), func(ax []te.Index) te.Expr { return ld(cur, ax...) }))
	}
	out := b.compute("out", shp(1), func(ax []te.Index) te.Expr {
		e := ld(hs[0], ax...)
		for _, h := range hs[1:] {
			e = add(e, ld(h, ax...))
		}
		return e
	})
	gr, err := NewGraph(b.outputs(out))
	if err != nil {
		t.Fatal(err)
	}
	found, marked := gr.search(gr.mustPos(g0), gr.mustPos(out))
	if !found {
		t.Fatal("g0 does not reach out")
	}
	if marked > 2 {
		t.Errorf("the search marked %d nodes, want at most 2", marked)
	}
}

// closure returns reach[u][v]: a path of one or more edges from u to v, by
// brute force.
func closure(g *Graph) [][]bool {
	n := g.Len()
	reach := make([][]bool, n)
	for u := n - 1; u >= 0; u-- {
		reach[u] = make([]bool, n)
		for _, s := range g.succs[u] {
			reach[u][s] = true
			for v := range n {
				reach[u][v] = reach[u][v] || reach[s][v]
			}
		}
	}
	return reach
}

// reachableAvoiding reports whether v can be reached from a source without
// passing through x.
func reachableAvoiding(g *Graph, v, x int32) bool {
	seen := make([]bool, g.Len())
	var stack []int32
	for u := range int32(g.Len()) {
		if len(g.preds[u]) == 0 && u != x {
			seen[u] = true
			stack = append(stack, u)
		}
	}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if u == v {
			return true
		}
		for _, s := range g.succs[u] {
			if s != x && !seen[s] {
				seen[s] = true
				stack = append(stack, s)
			}
		}
	}
	return false
}

func TestGraphAgainstBruteForce(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 5))
		p := randomDAG(rng, 10+rng.IntN(60), 1+rng.IntN(3))
		g, err := NewGraph(p)
		if err != nil {
			t.Fatal(err)
		}
		reach := closure(g)
		nodes := g.Order()
		for u, a := range nodes {
			for v, b := range nodes {
				if got := g.Reaches(a, b); got != reach[u][v] {
					t.Fatalf("seed %d: Reaches(%s, %s) = %v, want %v", seed, a.Name, b.Name, got, reach[u][v])
				}
				indep := u != v && !reach[u][v] && !reach[v][u]
				if got := g.Independent(a, b); got != indep {
					t.Fatalf("seed %d: Independent(%s, %s) = %v, want %v", seed, a.Name, b.Name, got, indep)
				}
				// a dominates b iff a == b or b cannot be reached avoiding a.
				dom := u == v || !reachableAvoiding(g, int32(v), int32(u))
				if got := g.Dominates(a, b); got != dom {
					t.Fatalf("seed %d: Dominates(%s, %s) = %v, want %v", seed, a.Name, b.Name, got, dom)
				}
			}
			// The immediate dominator is the strict dominator that every
			// other strict dominator dominates.
			id := g.Idom(a)
			for _, d := range nodes {
				if d == a || !g.Dominates(d, a) {
					continue
				}
				if id == nil || !g.Dominates(d, id) {
					t.Fatalf("seed %d: Idom(%s) = %v, but %s strictly dominates %s and not it", seed, a.Name, nameOf(id), d.Name, a.Name)
				}
			}
			if id != nil && (id == a || !g.Dominates(id, a)) {
				t.Fatalf("seed %d: Idom(%s) = %s does not strictly dominate it", seed, a.Name, id.Name)
			}
		}
		// Levels and antichains are independent sets, and chains force as
		// many groups as their length.
		for _, lv := range g.Levels() {
			assertIndependent(t, g, lv)
		}
		set := slices.Clone(nodes)
		rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
		set = set[:1+rng.IntN(len(set))]
		groups := g.Antichains(set)
		total := 0
		for _, grp := range groups {
			assertIndependent(t, g, grp)
			total += len(grp)
		}
		if total != len(set) {
			t.Fatalf("seed %d: antichains hold %d tensors, want %d", seed, total, len(set))
		}
		// Mirsky: each member of group k > 0 is reached from one of group k-1.
		for k := 1; k < len(groups); k++ {
			for _, b := range groups[k] {
				if !slices.ContainsFunc(groups[k-1], func(a *te.Tensor) bool { return g.Reaches(a, b) }) {
					t.Fatalf("seed %d: %s in antichain %d has no predecessor in antichain %d", seed, b.Name, k, k-1)
				}
			}
		}
	}
}

func assertIndependent(t *testing.T, g *Graph, ts []*te.Tensor) {
	t.Helper()
	for _, a := range ts {
		for _, b := range ts {
			if a != b && !g.Independent(a, b) {
				t.Fatalf("%s and %s share a group but a path joins them", a.Name, b.Name)
			}
		}
	}
}

func TestProducersConsumersLiveRanges(t *testing.T) {
	p, ts := figure2()
	g := mustAnalyze(t, p).Graph
	tests := []struct {
		name       string
		producers  []string
		consumers  []string
		live       LiveRange
		level      int
		idom       string
		isOutput   bool
		liveLength int
	}{
		{"I0", nil, []string{"O0"}, LiveRange{Def: 0, LastUse: 3}, 0, "", false, 4},
		{"O0", []string{"I0", "W0"}, []string{"O1", "O3"}, LiveRange{Def: 3, LastUse: 6}, 1, "", false, 4},
		{"O1", []string{"O0"}, []string{"O2"}, LiveRange{Def: 4, LastUse: 5}, 2, "O0", false, 2},
		{"O2", []string{"W2", "O1"}, []string{"O3"}, LiveRange{Def: 5, LastUse: 6}, 3, "", false, 2},
		{"O3", []string{"O0", "O2"}, []string{"O4"}, LiveRange{Def: 6, LastUse: 7}, 4, "", false, 2},
		{"O4", []string{"O3"}, nil, LiveRange{Def: 7, LastUse: 7, LiveOut: true}, 5, "O3", true, 1},
	}
	for _, tt := range tests {
		x := ts[tt.name]
		if got := names(g.Producers(x)); !slices.Equal(got, tt.producers) {
			t.Errorf("Producers(%s) = %v, want %v", tt.name, got, tt.producers)
		}
		if got := names(g.Consumers(x)); !slices.Equal(got, tt.consumers) {
			t.Errorf("Consumers(%s) = %v, want %v", tt.name, got, tt.consumers)
		}
		if got := g.LiveRange(x); got != tt.live || got.Len(g.Len()) != tt.liveLength {
			t.Errorf("LiveRange(%s) = %+v (len %d), want %+v (len %d)", tt.name, got, got.Len(g.Len()), tt.live, tt.liveLength)
		}
		if got := g.Level(x); got != tt.level {
			t.Errorf("Level(%s) = %d, want %d", tt.name, got, tt.level)
		}
		if got := g.Idom(x); nameOrEmpty(got) != tt.idom {
			t.Errorf("Idom(%s) = %s, want %q", tt.name, nameOrEmpty(got), tt.idom)
		}
		if got := g.IsOutput(x); got != tt.isOutput {
			t.Errorf("IsOutput(%s) = %v", tt.name, got)
		}
	}
}

func nameOrEmpty(t *te.Tensor) string {
	if t == nil {
		return ""
	}
	return t.Name
}

func TestMalformedPrograms(t *testing.T) {
	foreign := &te.Tensor{Name: "foreign", Kind: te.Input, Shape: []int{1}}
	tests := []struct {
		name string
		prog func() *te.Program
	}{
		{"nil program", func() *te.Program { return nil }},
		{"nil tensor", func() *te.Program { return &te.Program{Tensors: []*te.Tensor{nil}} }},
		{"repeated tensor", func() *te.Program {
			b := newBuilder("rep")
			x := b.input("x", 1)
			p := b.outputs()
			p.Tensors = append(p.Tensors, x)
			return p
		}},
		{"foreign load", func() *te.Program {
			b := newBuilder("foreign")
			y := b.compute("y", shp(1), func(ax []te.Index) te.Expr { return ld(foreign, ax...) })
			return b.outputs(y)
		}},
		{"load before definition", func() *te.Program {
			b := newBuilder("order")
			later := &te.Tensor{Name: "later", Kind: te.Input, Shape: []int{1}}
			y := b.compute("y", shp(1), func(ax []te.Index) te.Expr { return ld(later, ax...) })
			b.Add(later)
			return b.outputs(y)
		}},
		{"foreign output", func() *te.Program {
			b := newBuilder("out")
			b.input("x", 1)
			return b.outputs(foreign)
		}},
		{"no body", func() *te.Program {
			b := newBuilder("body")
			b.Add(&te.Tensor{Name: "y", Kind: te.Compute, Shape: []int{1}})
			return b.outputs()
		}},
	}
	for _, tt := range tests {
		if _, err := Analyze(tt.prog(), Options{}); err == nil {
			t.Errorf("%s: no error", tt.name)
		} else {
			t.Logf("%s: %v", tt.name, err)
		}
	}
	if _, err := Analyze(randomDAG(rand.New(rand.NewPCG(1, 1)), 5, 1), Options{Threshold: -1}); err == nil {
		t.Error("negative threshold: no error")
	}
}

// TestRenumberedTensors checks that a program's graph still finds its
// tensors after another program that shares them numbers them anew, as
// the transforms' copies do with placeholders (tec explain --plan
// analysed a program with params declared in a loop, then built it:
// panic: analysis: tensor "w.1" is not in program "m").
func TestRenumberedTensors(t *testing.T) {
	b := newBuilder("m")
	x, w0, w1 := b.input("x", 4), b.param("w.0", 4), b.param("w.1", 4)
	h := b.compute("h", shp(4), func(ax []te.Index) te.Expr { return mul(ld(x, ax...), ld(w0, ax...)) })
	h1 := b.compute("h.1", shp(4), func(ax []te.Index) te.Expr { return mul(ld(h, ax...), ld(w1, ax...)) })
	y := b.compute("y", shp(4), func(ax []te.Index) te.Expr { return add(ld(h1, ax...), cf(1)) })
	p := b.outputs(y)
	a := mustAnalyze(t, p)
	want, err := json.Marshal(a.Report())
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the program keeps x and w.1 only, numbered 0 and 1 (w.1
	// was 2); w.0 is numbered in a third.
	x.ID, w1.ID, w0.ID = 0, 1, 7
	got, err := json.Marshal(a.Report())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("report after renumbering:\n%s\nwant\n%s", got, want)
	}
	if r := a.Graph.LiveRange(w1); r.Def != 2 || r.LastUse != 4 {
		t.Errorf("w.1 live %d..%d, want 2..4", r.Def, r.LastUse)
	}
}

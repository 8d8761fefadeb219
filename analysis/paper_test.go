package analysis

import (
	"slices"
	"testing"

	"tec/te"
)

// figure2 builds the TE program of the paper's Fig. 2. The figure is an
// image; its text (§4, §5.1, §5.2) fixes what matters here: TE0 is the GEMM
// O0 = I0·W0 with 64×64 shapes and reduction axis rk, TE1 is element-wise on
// O0 (R1), and O0 is read again by TE3, after TE1 and TE2.
func figure2() (*te.Program, map[string]*te.Tensor) {
	b := newBuilder("figure2")
	I0 := b.input("I0", 64, 64)
	W0 := b.param("W0", 64, 64)
	W2 := b.param("W2", 64, 64)
	gemm := func(name string, x, w *te.Tensor) *te.Tensor {
		return b.compute(name, shp(64, 64), func(ax []te.Index) te.Expr {
			return sum1("rk", 64, func(rk te.Index) te.Expr { return mul(ld(x, ax[0], rk), ld(w, rk, ax[1])) })
		})
	}
	O0 := gemm("O0", I0, W0)                                                                                     // TE0
	O1 := b.compute("O1", shp(64, 64), func(ax []te.Index) te.Expr { return un(te.Exp, ld(O0, ax...)) })         // TE1
	O2 := gemm("O2", O1, W2)                                                                                     // TE2
	O3 := b.compute("O3", shp(64, 64), func(ax []te.Index) te.Expr { return add(ld(O0, ax...), ld(O2, ax...)) }) // TE3
	O4 := b.compute("O4", shp(64), func(ax []te.Index) te.Expr {                                                 // TE4
		return sum1("rk", 64, func(rk te.Index) te.Expr { return ld(O3, ax[0], rk) })
	})
	p := b.outputs(O4)
	return p, map[string]*te.Tensor{"I0": I0, "W0": W0, "O0": O0, "O1": O1, "O2": O2, "O3": O3, "O4": O4}
}

func TestFigure2Relations(t *testing.T) {
	p, ts := figure2()
	a := mustAnalyze(t, p)
	tests := []struct {
		out, in string
		want    string
		dep     Dependence
	}{
		{"O0", "I0", "{ O0[i, j] -> I0[i, rk] : 0 <= i < 64 and 0 <= j < 64 and 0 <= rk < 64 }", OneToMany}, // R0
		{"O0", "W0", "{ O0[i, j] -> W0[rk, j] : 0 <= i < 64 and 0 <= j < 64 and 0 <= rk < 64 }", OneToMany},
		{"O1", "O0", "{ O1[i, j] -> O0[i, j] : 0 <= i < 64 and 0 <= j < 64 }", OneToOne}, // R1
		{"O3", "O0", "{ O3[i, j] -> O0[i, j] : 0 <= i < 64 and 0 <= j < 64 }", OneToOne},
		{"O4", "O3", "{ O4[i] -> O3[i, rk] : 0 <= i < 64 and 0 <= rk < 64 }", OneToMany},
	}
	for _, tt := range tests {
		accs := a.TE(ts[tt.out]).AccessesOf(ts[tt.in])
		if len(accs) != 1 {
			t.Fatalf("%s reads %s %d times, want once", tt.out, tt.in, len(accs))
		}
		if got := accs[0].String(); got != tt.want {
			t.Errorf("relation %s -> %s:\n got %s\nwant %s", tt.out, tt.in, got, tt.want)
		}
		if got := accs[0].Dependence(); got != tt.dep {
			t.Errorf("relation %s -> %s is %v, want %v", tt.out, tt.in, got, tt.dep)
		}
	}
	// R1 is the identity: M = I, c = 0 (Eq. 1).
	M, cv, ok := a.TE(ts["O1"]).Accesses[0].Affine()
	if !ok || !slices.EqualFunc(M, [][]int{{1, 0}, {0, 1}}, slices.Equal) || !slices.Equal(cv, []int{0, 0}) {
		t.Errorf("R1 = %v·v + %v (affine %v), want the identity", M, cv, ok)
	}
}

func TestFigure2Classes(t *testing.T) {
	p, ts := figure2()
	a := mustAnalyze(t, p)
	tests := []struct {
		te    string
		dep   Dependence
		class Class
		ratio float64
	}{
		{"O0", OneToMany, ComputeIntensive, 2.0 * 64 * 64 * 64 / (3 * 64 * 64)}, // TE0: GEMM
		{"O1", OneToOne, MemoryIntensive, 0.5},                                  // TE1: exp
		{"O2", OneToMany, ComputeIntensive, 2.0 * 64 * 64 * 64 / (3 * 64 * 64)},
		{"O3", OneToOne, MemoryIntensive, 1.0 / 3},
		{"O4", OneToMany, MemoryIntensive, 64.0 * 64 / (64*64 + 64)}, // one add per point
	}
	for _, tt := range tests {
		x := a.TE(ts[tt.te])
		if x.Dependence != tt.dep || x.Intensity.Class != tt.class || x.Intensity.Ratio != tt.ratio {
			t.Errorf("%s: %v %v ratio %g, want %v %v ratio %g", tt.te,
				x.Dependence, x.Intensity.Class, x.Intensity.Ratio, tt.dep, tt.class, tt.ratio)
		}
	}
}

func TestFigure2Reuse(t *testing.T) {
	p, ts := figure2()
	a := mustAnalyze(t, p)
	r := a.ReuseOf(ts["O0"])
	if r == nil {
		t.Fatal("no reuse of O0")
	}
	want := []*te.Tensor{ts["O1"], ts["O3"]} // TE1 and TE3
	if !slices.Equal(r.Readers, want) || !slices.Equal(r.Temporal, want) || r.IsSpatial() {
		t.Errorf("reuse of O0: readers %v temporal %v spatial %v; want readers and temporal %v, no spatial",
			names(r.Readers), names(r.Temporal), r.Spatial, names(want))
	}
	if len(a.Reuse) != 1 {
		t.Errorf("%d tensors reused, want only O0", len(a.Reuse))
	}
}

// figure4 builds the paper's Fig. 4: relu, strided slice, permute.
func figure4() (*te.Program, map[string]*te.Tensor) {
	b := newBuilder("figure4")
	A := b.input("A", 4, 8)
	B := b.compute("B", shp(4, 8), func(ax []te.Index) te.Expr { // relu
		return sel(bin(te.Gt, ld(A, ax...), cf(0)), ld(A, ax...), cf(0))
	})
	C := b.compute("C", shp(2, 4), func(ax []te.Index) te.Expr { return ld(B, ax[0].Scale(2), ax[1]) }) // strided slice
	D := b.compute("D", shp(4, 2), func(ax []te.Index) te.Expr { return ld(C, ax[1], ax[0]) })          // permute
	return b.outputs(D), map[string]*te.Tensor{"A": A, "B": B, "C": C, "D": D}
}

func TestFigure4Composition(t *testing.T) {
	p, ts := figure4()
	a := mustAnalyze(t, p)
	for _, n := range []string{"B", "C", "D"} {
		if d := a.TE(ts[n]).Dependence; d != OneToOne {
			t.Errorf("%s is %v, want one-relies-on-one", n, d)
		}
	}
	// relu's two loads of A[i, j] (condition and branch) are one access.
	if accs := a.TE(ts["B"]).Accesses; len(accs) != 1 || accs[0].Count != 2 || accs[0].Inexact {
		t.Errorf("relu accesses: %v", accs)
	}
	m, err := ComposeChain(a.TE(ts["D"]).Accesses[0].Map, a.TE(ts["C"]).Accesses[0].Map, a.TE(ts["B"]).Accesses[0].Map)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.String(), "{ D[i, j] -> A[2*j, i] : 0 <= i < 4 and 0 <= j < 2 }"; got != want {
		t.Errorf("composed map:\n got %s\nwant %s", got, want)
	}
	M, cv, ok := m.Affine()
	if !ok {
		t.Fatalf("composed map %s is not affine", m)
	}
	// The paper multiplies row vectors, v^T·M (Eq. 2): its matrix is our
	// M·v matrix transposed.
	paper := [][]int{{0, 1}, {2, 0}}
	if !slices.EqualFunc(transpose(M), paper, slices.Equal) || !slices.Equal(cv, []int{0, 0}) {
		t.Errorf("composed M^T = %v, c = %v; want %v, [0 0]", transpose(M), cv, paper)
	}
	checkGather(t, p, m, 0)
}

func transpose(M [][]int) [][]int {
	if len(M) == 0 {
		return nil
	}
	T := make([][]int, len(M[0]))
	for c := range T {
		T[c] = make([]int, len(M))
		for r := range M {
			T[c][r] = M[r][c]
		}
	}
	return T
}

func names(ts []*te.Tensor) []string {
	var ns []string
	for _, t := range ts {
		ns = append(ns, t.Name)
	}
	return ns
}

// checkGather checks a one-relies-on-one relation m against the reference
// evaluator: the program, with m.In filled by iotaFeeds, must give m.Out the
// value of the element m names at every point where m's guards hold, and
// outside at every other point. The path from m.In to m.Out must move values
// without changing them (gathers, copies, relu of positive values).
func checkGather(t *testing.T, p *te.Program, m *Map, outside float64) {
	t.Helper()
	if len(m.Reduce) > 0 {
		t.Fatalf("checkGather of %s, which has reductions", m)
	}
	got, err := te.Evaluate(p, iotaFeeds(p, m.In, 1), te.EvalOptions{KeepAll: true})
	if err != nil {
		t.Fatal(err)
	}
	out := got[m.Out.Name]
	inside := make([]bool, out.Len())
	errs := 0
	m.Points(func(vals, index []int) bool {
		pos, _ := rowMajor(m.Out.Shape, vals)
		inside[pos] = true
		k, ok := rowMajor(m.In.Shape, index)
		if !ok {
			t.Errorf("%s: point %v reads %v, out of bounds", m, vals, index)
			errs++
		} else if v := out.Data[pos]; v != float64(k+1) {
			t.Errorf("%s: at %v the map reads %s%v (value %d), the program gives %g", m, vals, m.In.Name, index, k+1, v)
			errs++
		}
		return errs < 10
	})
	for pos, in := range inside {
		if !in && out.Data[pos] != outside {
			t.Errorf("%s: element %d of %s is outside the guards but holds %g, want %g", m, pos, m.Out.Name, out.Data[pos], outside)
		}
	}
}

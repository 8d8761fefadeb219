package analysis

import (
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// layoutCase is a program whose last tensor gathers from its input through
// one layout TE, and the relation that TE must have.
type layoutCase struct {
	name string
	prog func() *te.Program
	want string // the relation of the output's only access
	// outside is the value of the output where the guards fail.
	outside float64
}

var layoutCases = []layoutCase{
	{
		name: "transpose",
		prog: func() *te.Program {
			b := newBuilder("transpose")
			x := b.input("x", 3, 5)
			y := b.compute("y", shp(5, 3), func(ax []te.Index) te.Expr { return ld(x, ax[1], ax[0]) })
			return b.outputs(y)
		},
		want: "{ y[i, j] -> x[j, i] : 0 <= i < 5 and 0 <= j < 3 }",
	},
	{
		// reshape [4, 6] -> [3, 8], row-major: flat = 8i + j.
		name: "reshape",
		prog: func() *te.Program {
			b := newBuilder("reshape")
			x := b.input("x", 4, 6)
			y := b.compute("y", shp(3, 8), func(ax []te.Index) te.Expr {
				flat := ax[0].Scale(8).Add(ax[1])
				return ld(x, flat.Div(6), flat.Mod(6))
			})
			return b.outputs(y)
		},
		want: "{ y[i, j] -> x[floor((8*i + j)/6), ((8*i + j) mod 6)] : 0 <= i < 3 and 0 <= j < 8 }",
	},
	{
		// flatten [2, 3, 4] -> [24].
		name: "flatten",
		prog: func() *te.Program {
			b := newBuilder("flatten")
			x := b.input("x", 2, 3, 4)
			y := b.compute("y", shp(24), func(ax []te.Index) te.Expr {
				return ld(x, ax[0].Div(12), ax[0].Div(4).Mod(3), ax[0].Mod(4))
			})
			return b.outputs(y)
		},
		want: "{ y[i] -> x[floor(i/12), (floor(i/4) mod 3), (i mod 4)] : 0 <= i < 24 }",
	},
	{
		// Swin's window partition: x[H=4, W=6, C=2] into windows of 2×2:
		// win[w, p, c] = x[(w / 3)·2 + p / 2, (w % 3)·2 + p % 2, c].
		name: "window partition",
		prog: func() *te.Program {
			b := newBuilder("window")
			x := b.input("x", 4, 6, 2)
			y := b.compute("win", shp(6, 4, 2), func(ax []te.Index) te.Expr {
				w, p := ax[0], ax[1]
				return ld(x, w.Div(3).Scale(2).Add(p.Div(2)), w.Mod(3).Scale(2).Add(p.Mod(2)), ax[2])
			})
			return b.outputs(y)
		},
		want: "{ win[i, j, l] -> x[floor(j/2) + 2*floor(i/3), (j mod 2) + 2*(i mod 3), l] : 0 <= i < 6 and 0 <= j < 4 and 0 <= l < 2 }",
	},
	{
		// Swin's window reverse, the inverse of the partition.
		name: "window reverse",
		prog: func() *te.Program {
			b := newBuilder("unwindow")
			win := b.input("win", 6, 4, 2)
			y := b.compute("y", shp(4, 6, 2), func(ax []te.Index) te.Expr {
				h, w := ax[0], ax[1]
				return ld(win, h.Div(2).Scale(3).Add(w.Div(2)), h.Mod(2).Scale(2).Add(w.Mod(2)), ax[2])
			})
			return b.outputs(y)
		},
		want: "{ y[i, j, l] -> win[3*floor(i/2) + floor(j/2), 2*(i mod 2) + (j mod 2), l] : 0 <= i < 4 and 0 <= j < 6 and 0 <= l < 2 }",
	},
	{
		// Swin's cyclic shift: roll by -3 along the first axis.
		name: "roll",
		prog: func() *te.Program {
			b := newBuilder("roll")
			x := b.input("x", 7, 2)
			y := b.compute("y", shp(7, 2), func(ax []te.Index) te.Expr { return ld(x, ax[0].AddConst(3).Mod(7), ax[1]) })
			return b.outputs(y)
		},
		want: "{ y[i, j] -> x[((i + 3) mod 7), j] : 0 <= i < 7 and 0 <= j < 2 }",
	},
	{
		// zero padding by one: the guard becomes constraints.
		name: "pad",
		prog: func() *te.Program {
			b := newBuilder("pad")
			x := b.input("x", 3, 4)
			y := b.compute("y", shp(5, 6), func(ax []te.Index) te.Expr {
				i, j := ax[0], ax[1]
				in := and(bin(te.Ge, ix(i), ci(1)), bin(te.Lt, ix(i), ci(4)), bin(te.Ge, ix(j), ci(1)), bin(te.Le, ix(j.AddConst(-1)), ci(3)))
				return sel(in, ld(x, i.AddConst(-1), j.AddConst(-1)), cf(0))
			})
			return b.outputs(y)
		},
		want: "{ y[i, j] -> x[i - 1, j - 1] : 0 <= i < 5 and 0 <= j < 6 and i >= 1 and i <= 3 and j >= 1 and j <= 4 }",
	},
	{
		// a select on a negated index comparison: the else branch is guarded too.
		name: "triangle",
		prog: func() *te.Program {
			b := newBuilder("triangle")
			x := b.input("x", 4, 4)
			y := b.compute("y", shp(4, 4), func(ax []te.Index) te.Expr {
				return sel(bin(te.Gt, ix(ax[1]), ix(ax[0])), cf(-1), ld(x, ax...))
			})
			return b.outputs(y)
		},
		want:    "{ y[i, j] -> x[i, j] : 0 <= i < 4 and 0 <= j < 4 and i - j >= 0 }",
		outside: -1,
	},
	{
		// broadcast and a strided slice with an offset.
		name: "broadcast slice",
		prog: func() *te.Program {
			b := newBuilder("bslice")
			x := b.input("x", 9)
			y := b.compute("y", shp(3, 4), func(ax []te.Index) te.Expr { return ld(x, ax[1].Scale(2).AddConst(1)) })
			return b.outputs(y)
		},
		want: "{ y[i, j] -> x[2*j + 1] : 0 <= i < 3 and 0 <= j < 4 }",
	},
}

// TestLayoutRelations checks the relation of each layout TE as text, and
// against the reference evaluator at every point of its iteration space.
func TestLayoutRelations(t *testing.T) {
	for _, tt := range layoutCases {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.prog()
			a := mustAnalyze(t, p)
			x := a.TE(p.Outputs[0])
			if len(x.Accesses) != 1 {
				t.Fatalf("%d accesses, want 1", len(x.Accesses))
			}
			m := x.Accesses[0]
			if got := m.String(); got != tt.want {
				t.Errorf("relation\n got %s\nwant %s", got, tt.want)
			}
			if x.Dependence != OneToOne || m.Inexact {
				t.Errorf("dependence %v, inexact %v; want one-relies-on-one, exact", x.Dependence, m.Inexact)
			}
			checkGather(t, p, m.Map, tt.outside)
		})
	}
}

// TestLayoutChain composes reshape, transpose, window partition and roll
// maps (div and mod all the way) and checks the result against the
// evaluator.
func TestLayoutChain(t *testing.T) {
	b := newBuilder("chain")
	x := b.input("x", 24)
	r := b.compute("r", shp(4, 6), func(ax []te.Index) te.Expr { return ld(x, ax[0].Scale(6).Add(ax[1])) })
	s := b.compute("s", shp(4, 6), func(ax []te.Index) te.Expr { return ld(r, ax[0].AddConst(1).Mod(4), ax[1].AddConst(5).Mod(6)) })
	w := b.compute("w", shp(6, 4), func(ax []te.Index) te.Expr {
		return ld(s, ax[0].Div(3).Scale(2).Add(ax[1].Div(2)), ax[0].Mod(3).Scale(2).Add(ax[1].Mod(2)))
	})
	tr := b.compute("t", shp(4, 6), func(ax []te.Index) te.Expr { return ld(w, ax[1], ax[0]) })
	p := b.outputs(tr)
	a := mustAnalyze(t, p)
	var maps []*Map
	for _, o := range []*te.Tensor{tr, w, s, r} {
		maps = append(maps, a.TE(o).Accesses[0].Map)
	}
	m, err := ComposeChain(maps...)
	if err != nil {
		t.Fatal(err)
	}
	if m.Out != tr || m.In != x || m.Dependence() != OneToOne {
		t.Errorf("composed %s is %v", m, m.Dependence())
	}
	if _, _, ok := m.Affine(); ok {
		t.Errorf("composed %s claims to be affine", m)
	}
	checkGather(t, p, m, 0)
}

func TestRelationsOfReductions(t *testing.T) {
	b := newBuilder("conv")
	x := b.input("x", 1, 2, 5, 5)
	w := b.param("w", 3, 2, 3, 3)
	// y[n, o, h, w] = sum[c, kh, kw](pad1(x)[n, c, h+kh, w+kw] * w[o, c, kh, kw])
	y := b.compute("y", shp(1, 3, 5, 5), func(ax []te.Index) te.Expr {
		return red(te.Sum, []string{"c", "kh", "kw"}, []int{2, 3, 3}, func(ks []te.Index) te.Expr {
			h, ww := ax[2].Add(ks[1]).AddConst(-1), ax[3].Add(ks[2]).AddConst(-1)
			in := and(bin(te.Ge, ix(h), ci(0)), bin(te.Lt, ix(h), ci(5)), bin(te.Ge, ix(ww), ci(0)), bin(te.Lt, ix(ww), ci(5)))
			return mul(sel(in, ld(x, ax[0], ks[0], h, ww), cf(0)), ld(w, ax[1], ks[0], ks[1], ks[2]))
		})
	})
	// m[i] = max(sum[k](x ...)) with a load that does not use the reduce var.
	z := b.compute("z", shp(3), func(ax []te.Index) te.Expr {
		return sum1("k", 4, func(k te.Index) te.Expr {
			return mul(ld(w, ax[0], c(0), c(0), k.Mod(3)), ld(w, ax[0], c(1), c(1), c(1)))
		})
	})
	p := b.outputs(y, z)
	a := mustAnalyze(t, p)
	tests := []struct {
		out, in string
		want    string
		dep     Dependence
	}{
		{"y", "x", "{ y[i, j, l, m] -> x[i, c, kh + l - 1, kw + m - 1] : 0 <= i < 1 and 0 <= j < 3 and 0 <= l < 5 and 0 <= m < 5 and " +
			"0 <= c < 2 and 0 <= kh < 3 and 0 <= kw < 3 and kh + l >= 1 and kh + l <= 5 and kw + m >= 1 and kw + m <= 5 }", OneToMany},
		{"y", "w", "{ y[i, j, l, m] -> w[j, c, kh, kw] : 0 <= i < 1 and 0 <= j < 3 and 0 <= l < 5 and 0 <= m < 5 and 0 <= c < 2 and 0 <= kh < 3 and 0 <= kw < 3 }", OneToMany},
		{"z", "w", "{ z[i] -> w[i, 0, 0, (k mod 3)] : 0 <= i < 3 and 0 <= k < 4 }", OneToMany},
		{"z", "w", "{ z[i] -> w[i, 1, 1, 1] : 0 <= i < 3 and 0 <= k < 4 }", OneToOne},
	}
	for k, tt := range tests {
		o := p.Lookup(tt.out)
		accs := a.TE(o).AccessesOf(p.Lookup(tt.in))
		idx := 0
		if k == 3 {
			idx = 1
		}
		m := accs[idx]
		if got := m.String(); got != tt.want {
			t.Errorf("%s -> %s:\n got %s\nwant %s", tt.out, tt.in, got, tt.want)
		}
		if m.Dependence() != tt.dep {
			t.Errorf("%s -> %s: %v, want %v", tt.out, tt.in, m.Dependence(), tt.dep)
		}
	}
	// The padded access reads only in-bounds elements of x, and every
	// element of x at least once.
	m := a.TE(y).AccessesOf(x)[0]
	seen := map[int]bool{}
	m.Points(func(vals, index []int) bool {
		k, ok := rowMajor(x.Shape, index)
		if !ok {
			t.Fatalf("point %v reads x%v, out of bounds", vals, index)
		}
		seen[k] = true
		return true
	})
	if len(seen) != x.NumElements() {
		t.Errorf("the padded access reads %d elements of x, want %d", len(seen), x.NumElements())
	}
	if got, want := a.TE(y).Dependence, OneToMany; got != want {
		t.Errorf("conv is %v", got)
	}
}

func TestDataDependentGuardIsInexact(t *testing.T) {
	b := newBuilder("mask")
	x := b.input("x", 4)
	mk := b.input("mask", 4)
	y := b.compute("y", shp(4), func(ax []te.Index) te.Expr {
		return sel(bin(te.Gt, ld(mk, ax[0]), cf(0)), ld(x, ax[0]), cf(0))
	})
	a := mustAnalyze(t, b.outputs(y))
	acc := a.TE(y).AccessesOf(x)
	if len(acc) != 1 || !acc[0].Inexact || len(acc[0].Guards) != 0 {
		t.Fatalf("access of x under a data-dependent select: %+v", acc)
	}
	if acc := a.TE(y).AccessesOf(mk); len(acc) != 1 || acc[0].Inexact {
		t.Fatalf("access of the mask itself: %+v", acc)
	}
}

func TestOpaqueAccess(t *testing.T) {
	b := newBuilder("opaque")
	x := b.input("x", 4)
	stray := te.NewVar("s", 4)
	y := b.compute("y", shp(4), func(ax []te.Index) te.Expr { return ld(x, te.VarIndex(stray)) })
	a := mustAnalyze(t, b.outputs(y))
	x2 := a.TE(y)
	if x2.Dependence != Opaque || x2.Accesses[0].Dependence() != Opaque {
		t.Errorf("an access by an unbound variable is %v", x2.Dependence)
	}
	if got, want := x2.Accesses[0].String(), "{ y[i] -> x[s] : 0 <= i < 4 }"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if x2.Intensity.Read != 4 {
		t.Errorf("an opaque access reads %d elements, want the whole tensor", x2.Intensity.Read)
	}
}

func TestComposeErrors(t *testing.T) {
	p, ts := figure4()
	a := mustAnalyze(t, p)
	d, b := a.TE(ts["D"]).Accesses[0].Map, a.TE(ts["B"]).Accesses[0].Map
	if _, err := Compose(d, b); err == nil {
		t.Error("Compose of D->C with B->A: no error")
	}
	if _, err := ComposeChain(); err == nil {
		t.Error("ComposeChain of nothing: no error")
	}
}

func TestVariableNamesAreDistinct(t *testing.T) {
	b := newBuilder("names")
	x := b.input("x", 3, 3)
	y := b.compute("y", shp(3), func(ax []te.Index) te.Expr {
		return sum1("i", 3, func(k te.Index) te.Expr { return ld(x, ax[0], k) })
	})
	a := mustAnalyze(t, b.outputs(y))
	if got, want := a.TE(y).Accesses[0].String(), "{ y[i] -> x[i, i_1] : 0 <= i < 3 and 0 <= i_1 < 3 }"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestGatherRelation checks that a gather relies on the whole of the
// gathered dimension of its table and exactly on the others, and on its
// index tensor one-to-one.
func TestGatherRelation(t *testing.T) {
	b := newBuilder("embed")
	ids := b.InputOf("ids", te.I32, 4)
	wte := b.param("wte", 10, 3)
	e := b.compute("e", shp(4, 3), func(ax []te.Index) te.Expr {
		return tb.Gather(wte, []te.Expr{ld(ids, ax[0]), nil}, c(1), ax[1])
	})
	a := mustAnalyze(t, b.outputs(e))
	x := a.TE(e)
	acc := x.AccessesOf(wte)
	if len(acc) != 1 {
		t.Fatalf("%d accesses of the table, want 1", len(acc))
	}
	if got, want := acc[0].String(), "{ e[i, j] -> wte[g, j] : 0 <= i < 4 and 0 <= j < 3 and 0 <= g < 10 }"; got != want {
		t.Errorf("table access:\n got %s\nwant %s", got, want)
	}
	if acc[0].Dependence() != OneToMany || len(acc[0].Gathered) != 1 {
		t.Errorf("table access is %v with gathered %v, want one-relies-on-many with one gathered variable", acc[0].Dependence(), acc[0].Gathered)
	}
	idAcc := x.AccessesOf(ids)
	if len(idAcc) != 1 || idAcc[0].Dependence() != OneToOne || idAcc[0].String() != "{ e[i, j] -> ids[i] : 0 <= i < 4 and 0 <= j < 3 }" {
		t.Errorf("index tensor access: %v", idAcc)
	}
	if x.Dependence != OneToMany {
		t.Errorf("the gather TE is %v, want one-relies-on-many", x.Dependence)
	}
	// Every element of the table's row j may be read for any i.
	seen := map[[2]int]bool{}
	acc[0].Points(func(vals, index []int) bool {
		seen[[2]int{index[0], index[1]}] = true
		return true
	})
	if len(seen) != wte.NumElements() {
		t.Errorf("the gather's relation covers %d elements of the table, want all %d", len(seen), wte.NumElements())
	}
}

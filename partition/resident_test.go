package partition

import (
	"slices"
	"strings"
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// twoSteps is two matrix-vector stages over a stack of two weight
// matrices W[l]: the first computes a batch of two products, entry q with
// W[1 - q]; the second reads W[1] again, and W2, which no other stage reads.
func twoSteps() *te.Program {
	const k, n = 32, 16
	b := tb.New("steps")
	x := b.Input("x", 2, 1, k)
	w := b.Param("W", 2, k, n)
	w2 := b.Param("W2", k, n)
	s1 := b.Compute("s1", tb.Shape(2, 1, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", k, func(r te.Index) te.Expr {
			q := ax[0]
			wq := tb.Sel(tb.Bin(te.Lt, tb.Idx(q), tb.I(1)), tb.Ld(w, te.Const(1), r, ax[2]), tb.Ld(w, q.AddConst(-1), r, ax[2]))
			return tb.Bin(te.Mul, tb.Ld(x, q, ax[1], r), wq)
		})
	})
	s2 := b.Compute("s2", tb.Shape(1, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", k, func(r te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(s1, te.Const(0), ax[0], r), tb.Ld(w, te.Const(1), r, ax[1]))
		})
	})
	s3 := b.Compute("s3", tb.Shape(1, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", k, func(r te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(s2, ax[0], r), tb.Ld(w2, r, ax[1]))
		})
	})
	return b.Program(s3)
}

// TestResident checks which stages read their weights through the weight
// cache and the keys of their slices: W[1] is one family whichever stage
// and batch entry reads it, W[0] another, and W2, read once, is not cached.
func TestResident(t *testing.T) {
	p := twoSteps()
	pl := plan(t, p, "small", Options{Reuse: true, Split: true})
	if len(pl.Kernels) != 1 || pl.Kernels[0].Cache == nil {
		t.Fatalf("want one kernel with a weight cache:\n%s", pl)
	}
	wc := pl.Kernels[0].Cache
	if wc.Keys != 2 || wc.SliceFloats != 32*16 || len(wc.Stages) != 2 {
		t.Errorf("cache %s; want 2 slices of 32×16 for 2 stages", wc)
	}
	want := map[string][]int{"s1": {0, 1}, "s2": {0}, "s3": nil}
	for _, tn := range p.Tensors {
		w, ok := want[tn.Name]
		if !ok {
			continue
		}
		r := pl.Schedules[tn].Resident
		switch {
		case w == nil && r != nil:
			t.Errorf("%s: resident %+v; want none", tn.Name, r)
		case w != nil && (r == nil || !slices.Equal(r.Keys, w) || r.TileF != 16 || r.Wide != 1):
			t.Errorf("%s: resident %+v; want keys %v, 16 columns per tile, Y stationary", tn.Name, r, w)
		}
	}
	// Without reuse (-O3) nothing is cached.
	if pl := plan(t, p, "small", Options{Split: true}); pl.Kernels[0].Cache != nil {
		t.Errorf("weight cache without Reuse:\n%s", pl)
	}
}

// gemvChain is x·u·u, two weight-resident matrix-vector stages h and g
// over one weight u (n × n, batch of one), then the stages that consumers
// adds, all outputs.
func gemvChain(n int, consumers func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor) *te.Program {
	b := tb.New("chain")
	x := b.Input("x", 1, n)
	u := b.Param("u", n, n)
	mv := func(name string, in *te.Tensor) *te.Tensor {
		return b.Compute(name, tb.Shape(1, n), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr {
				return tb.Bin(te.Mul, tb.Ld(in, ax[0], k), tb.Ld(u, k, ax[1]))
			})
		})
	}
	g := mv("g", mv("h", x))
	return b.Program(consumers(b, g, u)...)
}

// TestEpilogueRule checks which consumers of a resident stage the plan
// computes in its epilogue: element-wise ones that read it at their own
// columns, one to one, transposed or not; never one that reads it at other
// columns (a reduction over them, issue 17's F5 and F6, a reversed axis)
// or maps two of its axes onto one.
func TestEpilogueRule(t *testing.T) {
	const n = 8
	tanh := func(b *tb.Builder, name string, g *te.Tensor) *te.Tensor {
		return b.Compute(name, tb.Shape(1, n), func(ax []te.Index) te.Expr { return tb.Un(te.Tanh, tb.Ld(g, ax...)) })
	}
	for _, tt := range []struct {
		name      string
		consumers func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor
		want      []string
	}{
		{"element-wise", func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor {
			return []*te.Tensor{tanh(b, "a", g)}
		}, []string{"a"}},
		{"transposed", func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor {
			return []*te.Tensor{b.Compute("at", tb.Shape(n, 1), func(ax []te.Index) te.Expr { return tb.Un(te.Tanh, tb.Ld(g, ax[1], ax[0])) })}
		}, []string{"at"}},
		{"F6: a reduction over the stage's columns, transposed", func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor {
			return []*te.Tensor{b.Compute("y", tb.Shape(n, 1), func(ax []te.Index) te.Expr {
				return tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr {
					return tb.Bin(te.Mul, tb.Ld(u, k, ax[0]), tb.Un(te.Tanh, tb.Ld(g, ax[1], k)))
				})
			})}
		}, nil},
		{"a reduction over an epilogue stage's columns", func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor {
			a := tanh(b, "a", g)
			y := b.Compute("y", tb.Shape(n, 1), func(ax []te.Index) te.Expr {
				return tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr {
					return tb.Bin(te.Mul, tb.Ld(u, k, ax[0]), tb.Ld(a, ax[1], k))
				})
			})
			return []*te.Tensor{a, y}
		}, []string{"a"}},
		{"F5: a reduction over the stage's columns", func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor {
			return []*te.Tensor{b.Compute("y", tb.Shape(n, 1), func(ax []te.Index) te.Expr {
				return tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr {
					return tb.Bin(te.Mul, tb.Ld(u, ax[0], k), tb.Ld(g, ax[1], k))
				})
			})}
		}, nil},
		{"two axes onto one", func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor {
			return []*te.Tensor{b.Compute("d", tb.Shape(1, n, n), func(ax []te.Index) te.Expr {
				return tb.Bin(te.Mul, tb.Ld(g, ax[0], ax[1]), tb.Ld(g, ax[0], ax[2]))
			})}
		}, nil},
		{"reversed", func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor {
			return []*te.Tensor{b.Compute("r", tb.Shape(1, n), func(ax []te.Index) te.Expr {
				return tb.Ld(g, ax[0], ax[1].Scale(-1).AddConst(n-1))
			})}
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl := plan(t, gemvChain(n, tt.consumers), "a100", Options{Reuse: true, Split: true})
			var got []string
			for _, tn := range pl.Program.Tensors {
				s := pl.Schedules[tn]
				if s != nil && s.EpilogueOf != nil {
					if s.EpilogueOf.Name != "g" {
						t.Errorf("%s in the epilogue of %s; want g", tn.Name, s.EpilogueOf.Name)
					}
					got = append(got, tn.Name)
				}
			}
			if pl.Kernels[0].Cache == nil {
				t.Fatalf("no weight cache:\n%s", pl)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("in g's epilogue: %v; want %v\n%s", got, tt.want, pl)
			}
			if err := pl.Verify(); err != nil {
				t.Errorf("the plan as made: %v", err)
			}
		})
	}
}

// TestVerify checks that Plan.Verify refuses a plan whose resident stage
// or epilogue was changed after the planner made it, each change with an
// error saying what breaks.
func TestVerify(t *testing.T) {
	const n = 8
	epi := func(b *tb.Builder, g, u *te.Tensor) []*te.Tensor {
		return []*te.Tensor{b.Compute("a", tb.Shape(1, n), func(ax []te.Index) te.Expr { return tb.Un(te.Tanh, tb.Ld(g, ax...)) })}
	}
	for _, tt := range []struct {
		name   string
		change func(pl *Plan, g, a *te.Tensor)
		want   string
	}{
		{"another group", func(pl *Plan, g, a *te.Tensor) { pl.Schedules[g].Resident.EpilogueGroup[0] = 1 }, "not only those of its group"},
		{"axes swapped", func(pl *Plan, g, a *te.Tensor) {
			m := pl.Schedules[g].Resident.EpilogueAxes[0]
			m[a.Axes[0]], m[a.Axes[1]] = m[a.Axes[1]], m[a.Axes[0]]
		}, "do not correspond one to one"},
		{"not marked", func(pl *Plan, g, a *te.Tensor) { pl.Schedules[a].EpilogueOf = nil }, "does not say it is computed in the epilogue"},
		{"not listed", func(pl *Plan, g, a *te.Tensor) {
			rs := pl.Schedules[g].Resident
			rs.Epilogue, rs.EpilogueAxes, rs.EpilogueGroup = nil, nil, nil
		}, "which does not compute it"},
		{"block", func(pl *Plan, g, a *te.Tensor) { pl.Schedules[g].Resident.Split *= 2 }, "are not its block"},
		{"no cache", func(pl *Plan, g, a *te.Tensor) { pl.Kernels[0].Cache = nil }, "no weight cache"},
		{"slices", func(pl *Plan, g, a *te.Tensor) { pl.Schedules[g].Resident.Keys = nil }, "do not cover its batch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl := plan(t, gemvChain(n, epi), "a100", Options{Reuse: true, Split: true})
			g, a := pl.Program.Lookup("g"), pl.Program.Lookup("a")
			if s := pl.Schedules[a]; s.EpilogueOf != g || pl.Kernels[0].Cache == nil {
				t.Fatalf("want a in the epilogue of g:\n%s", pl)
			}
			if err := pl.Verify(); err != nil {
				t.Fatalf("the plan as made: %v", err)
			}
			tt.change(pl, g, a)
			if err := pl.Verify(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Verify: %v; want an error saying %q", err, tt.want)
			}
		})
	}
}

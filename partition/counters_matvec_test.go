package partition

import (
	"fmt"
	"math/rand/v2"
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// matVecProgram is a decode step's stages after one-row projections: xs
// (element-wise, so that a grid sync precedes the projections), h = xs·w
// with q's nh and k's nkv heads of dh columns, their rotary embeddings rq
// and rk (the partner ±dh/2 under a select on the head's index), g =
// xs·wg with gate and up halves of ff columns, act = gate·up at the same
// column, and y = act·wd, which reads every column of act.
func matVecProgram(k, nh, nkv, dh, ff int) *te.Program {
	b := tb.New("decode")
	x, w := b.Input("x", 1, k), b.Param("w", k, (nh+nkv)*dh)
	wg, wd := b.Param("wg", k, 2*ff), b.Param("wd", ff, k)
	xs := b.Compute("xs", tb.Shape(1, k), func(ax []te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax...), tb.F(2)) })
	h := b.Matmul("h", xs, w)
	row := te.Index{}
	rope := func(name string, heads, offset int) *te.Tensor {
		return b.Compute(name, tb.Shape(heads, dh), func(ax []te.Index) te.Expr {
			col := ax[0].Scale(dh).Add(ax[1]).AddConst(offset)
			partner := tb.Sel(tb.Bin(te.Lt, tb.Idx(ax[1]), tb.I(dh/2)),
				tb.Un(te.Neg, tb.Ld(h, row, col.AddConst(dh/2))), tb.Ld(h, row, col.AddConst(-dh/2)))
			return tb.Bin(te.Add, tb.Ld(h, row, col), partner)
		})
	}
	rq, rk := rope("rq", nh, 0), rope("rk", nkv, nh*dh)
	g := b.Matmul("g", xs, wg)
	act := b.Compute("act", tb.Shape(1, ff), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Ld(g, ax...), tb.Ld(g, ax[0], ax[1].AddConst(ff)))
	})
	y := b.Matmul("y", act, wd)
	return b.Program(rq, rk, y)
}

// TestMatVecDeps checks the dependences fitted on one-row matrix-vector
// producers: rq on the columns of its heads in q's slice (one fit for the
// head and its partner), rk on k's slice from column nh·dh, act on gate's
// and up's slices apart (two dependences), each grouped to one counter
// per consumer tile; y, which reads every column of act, none.
func TestMatVecDeps(t *testing.T) {
	p := matVecProgram(64, 8, 4, 32, 512)
	pl := plan(t, p, "h100", Options{Strategy: CostModel, Split: true, Counters: CountersOff})
	byName := map[string]*te.Tensor{}
	for _, k := range pl.Kernels {
		for _, s := range k.Stages {
			byName[s.Name] = s
		}
	}
	tests := []struct {
		y, u string
		want string // the dependences, or "none"
	}{
		{"rq", "h", "[{Prefix:32 Span:32 Offset:0 Most:1} ]"},
		{"rk", "h", "[{Prefix:32 Span:32 Offset:256 Most:1} ]"},
		{"act", "g", "[{Prefix:1 Span:1 Offset:0 Most:1} {Prefix:1 Span:1 Offset:512 Most:1} ]"},
		{"y", "act", "none"},
	}
	for _, tt := range tests {
		y, u := byName[tt.y], byName[tt.u]
		if y == nil || u == nil {
			t.Fatalf("no stage %s or %s in\n%s", tt.y, tt.u, pl)
		}
		ds, ok := matVecDeps(pl, y, pl.Schedules[y], u, pl.Schedules[u], 0)
		got := "none"
		if ok {
			got = "["
			for _, d := range ds {
				got += fmt.Sprintf("{Prefix:%d Span:%d Offset:%d Most:%d} ", d.Prefix, d.Span, d.Offset, d.Most())
			}
			got += "]"
		}
		if got != tt.want {
			t.Errorf("%s on %s: %s, want %s\n%s", tt.y, tt.u, got, tt.want, pl)
		}
	}
}

// TestPlaceMatVecCounters checks the grid syncs that counters replace
// after one-row projections: the one before rq (rk, after it before the
// next sync, waits too) and the one before act; not the one before y.
func TestPlaceMatVecCounters(t *testing.T) {
	pl := plan(t, matVecProgram(64, 8, 4, 32, 512), "h100", Options{Strategy: CostModel, Split: true, Counters: CountersWherever})
	got := ""
	for _, k := range pl.Kernels {
		for j, s := range k.Stages {
			if deps := k.Counters[j]; deps != nil {
				got += fmt.Sprintf("%s %v: ", s.Name, k.Sync[j] == GridSync)
				for _, d := range deps {
					got += d.String() + "; "
				}
			}
		}
	}
	want := "rq true: h (at most 1 counters of 8 tiles per tile); rk false: h (at most 1 counters of 8 tiles per tile); act true: g (at most 1 counters of 8 tiles per tile); g (at most 1 counters of 8 tiles per tile); "
	if got != want {
		t.Errorf("counters %q, want %q\n%s", got, want, pl)
	}
}

// TestTileDepRangeRows checks TileDep.Range with Row set against the
// columns found element by element: a tile within a row reads exactly
// the column tiles of its elements' prefixes within the row, a tile that
// spans rows those of every prefix of a row.
func TestTileDepRangeRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		rows, prefixes, q, span := 1+rng.IntN(4), 1+rng.IntN(8), 1+rng.IntN(6), 1+rng.IntN(6)
		row := prefixes * q
		d := TileDep{Tile: 1 + rng.IntN(2*row), N: rows * row, Prefix: q, Span: span, Width: 1 + rng.IntN(8), Offset: rng.IntN(5), Row: row}
		for r := range te.CeilDiv(d.N, d.Tile) {
			want := map[int]bool{}
			first, last := r*d.Tile, min((r+1)*d.Tile, d.N)-1
			for e := first; e <= last; e++ {
				p := e % row / q
				for x := d.Offset + p*span; x < d.Offset+(p+1)*span; x++ {
					want[x/d.Width] = true
				}
			}
			if first/row != last/row {
				for p := range prefixes {
					for x := d.Offset + p*span; x < d.Offset+(p+1)*span; x++ {
						want[x/d.Width] = true
					}
				}
			}
			lo, hi := d.Range(r)
			if hi-lo != len(want) {
				t.Fatalf("%+v: tile %d: range [%d, %d), want %d tiles", d, r, lo, hi, len(want))
			}
			for p := lo; p < hi; p++ {
				if !want[p] {
					t.Fatalf("%+v: tile %d: range [%d, %d) holds %d, which it does not read", d, r, lo, hi, p)
				}
			}
		}
	}
}

// TestSelectChain checks that a chain of threshold selects, as a
// horizontal concatenation makes, picks the branch that evaluating its
// conditions in turn does, at every point and at the edges, and that
// other shapes of selects are not taken for one.
func TestSelectChain(t *testing.T) {
	d := te.NewVar("d", 40)
	x := tb.Idx(te.VarIndex(d))
	branch := func(i int) te.Expr { return tb.F(float64(i)) }
	lt := func(k int) te.Expr { return tb.Bin(te.Lt, x, tb.I(k)) }
	le := func(k int) te.Expr { return tb.Bin(te.Le, x, tb.I(k)) }
	chain := func(conds ...te.Expr) te.Expr {
		var e te.Expr = branch(len(conds))
		for i := len(conds) - 1; i >= 0; i-- {
			e = tb.Sel(conds[i], branch(i), e)
		}
		return e
	}
	for _, tt := range []struct {
		name  string
		e     te.Expr
		chain bool
	}{
		{"less", chain(lt(4), lt(8), lt(12), lt(16), lt(30)), true},
		{"less or equal", chain(lt(4), le(7), le(11), lt(16)), true},
		{"equal limits", chain(lt(4), lt(4), lt(9), lt(9), lt(20)), true},
		{"too short", chain(lt(4), lt(8), lt(12)), false},
		{"descending", chain(lt(30), lt(20), lt(10), lt(5)), false},
		{"other comparison", chain(tb.Bin(te.Ge, x, tb.I(4)), lt(8), lt(12), lt(16)), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ch := chainOf(tt.e.(*te.Select))
			if (ch != nil) != tt.chain {
				t.Fatalf("chainOf = %v, want a chain: %v", ch, tt.chain)
			}
			if ch == nil {
				return
			}
			for v := 0; v < 40; v++ {
				val := func(*te.Var) int { return v }
				want := tt.e
				for {
					s, ok := want.(*te.Select)
					if !ok {
						break
					}
					c, known := indexCond(s.Cond, val)
					if !known {
						t.Fatalf("condition %v unknown at %d", s.Cond, v)
					}
					want = s.Else
					if c {
						want = s.Then
					}
				}
				if got := ch.pick(v); got != want {
					t.Errorf("at d = %d: picked %v, want %v", v, got, want)
				}
			}
		})
	}
}

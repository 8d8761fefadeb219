package contraction

import (
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

func TestMaskedReduce(t *testing.T) {
	x := &te.Tensor{Name: "x", Kind: te.Input, DType: te.F32, Shape: []int{4}}
	iv := te.NewVar("i", 4)
	i := te.VarIndex(iv)
	sum := tb.Reduce(te.Sum, "k", 4, func(k te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, k), tb.Ld(x, k)) })
	other := tb.Reduce(te.Sum, "k", 4, func(k te.Index) te.Expr { return tb.Ld(x, k) })
	lt := tb.Bin(te.Lt, tb.Idx(i), tb.I(2))
	data := tb.Bin(te.Gt, tb.Ld(x, i), tb.F(0))
	pos := &te.Tensor{Name: "pos", Kind: te.Input, DType: te.I32, Shape: []int{4}}
	lim := &te.Tensor{Name: "lim", Kind: te.Compute, DType: te.I32, Shape: []int{4}}
	runtime := tb.Bin(te.Le, tb.Idx(i), tb.Ld(pos, i))
	computed := tb.Bin(te.Le, tb.Idx(i), tb.Ld(lim, i))
	tests := []struct {
		name           string
		body           te.Expr
		ok, masked     bool
		guards         int
		firstWantsThen bool
	}{
		{"plain", tb.Bin(te.Add, sum, tb.F(1)), true, false, 0, false},
		{"then", tb.Sel(lt, tb.Bin(te.Mul, sum, tb.F(2)), tb.F(0)), true, true, 1, true},
		{"else", tb.Sel(lt, tb.F(0), sum), true, true, 1, false},
		{"nested", tb.Sel(lt, tb.Sel(tb.Bin(te.Ge, tb.Idx(i), tb.I(1)), sum, tb.F(1)), tb.F(0)), true, true, 2, true},
		{"data_condition", tb.Sel(data, sum, tb.F(0)), true, true, 0, false},
		{"runtime_scalar", tb.Sel(runtime, sum, tb.F(0)), true, true, 1, true},
		{"computed_scalar", tb.Sel(computed, sum, tb.F(0)), true, true, 0, false},
		{"in_condition", tb.Sel(tb.Bin(te.Gt, sum, tb.F(0)), tb.F(1), tb.F(0)), false, false, 0, false},
		{"two_reductions", tb.Sel(lt, sum, other), false, false, 0, false},
		{"shared_node", tb.Sel(lt, sum, tb.Bin(te.Add, sum, tb.F(1))), true, true, 0, false},
		{"none", tb.Sel(lt, tb.F(1), tb.F(0)), false, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, guards, masked, ok := MaskedReduce(tt.body)
			if ok != tt.ok || masked != tt.masked || len(guards) != tt.guards {
				t.Fatalf("MaskedReduce(%s) = %v, %d guards, masked %v, ok %v; want ok %v, %d guards, masked %v",
					te.FormatExpr(tt.body), r != nil, len(guards), masked, ok, tt.ok, tt.guards, tt.masked)
			}
			if len(guards) > 0 && guards[0].Want != tt.firstWantsThen {
				t.Errorf("first guard wants %v", guards[0].Want)
			}
		})
	}
}

// TestMaskOfFlatAxes checks the mask's tile test where the M axes are two
// (y[b, i, n] with w[c, n]: rows b·S + i), so that a tile's rows may cross
// from one b to the next.
func TestMaskOfFlatAxes(t *testing.T) {
	const S = 20
	b := tb.New("flat")
	x, w := b.Input("x", 3, S, 16), b.Param("w", 16, S)
	y := b.Compute("y", tb.Shape(3, S, S), func(ax []te.Index) te.Expr {
		sum := tb.Reduce(te.Sum, "c", 16, func(c te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], ax[1], c), tb.Ld(w, c, ax[2]))
		})
		return tb.Sel(tb.Bin(te.Le, tb.Idx(ax[2]), tb.Idx(ax[1])), sum, tb.F(0))
	})
	b.Program(y)
	d, ok := Of(y)
	if !ok || !d.Masked || d.M != 3*S || d.N != S || len(d.MAxes) != 2 {
		t.Fatalf("Of: %+v, %v", d, ok)
	}
	mk := MaskOf(d)
	tests := []struct {
		r    schedule.TileRange
		dead bool
	}{
		{schedule.TileRange{MLo: 0, MHi: 7, NLo: 8, NHi: 15}, true},    // b 0, i 0..7, n 8..15
		{schedule.TileRange{MLo: 16, MHi: 23, NLo: 8, NHi: 15}, false}, // crosses into b 1: i 16..19 and 0..3
		{schedule.TileRange{MLo: 20, MHi: 23, NLo: 8, NHi: 15}, true},  // b 1, i 0..3
		{schedule.TileRange{MLo: 40, MHi: 59, NLo: 0, NHi: 0}, false},
	}
	for _, tt := range tests {
		if got := mk.Dead(tt.r); got != tt.dead {
			t.Errorf("Dead(%+v) = %v, want %v", tt.r, got, tt.dead)
		}
	}
}

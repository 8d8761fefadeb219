package partition

import (
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// scores is causal self-attention's scores, sc[h, i, j] = body(sum[e](q[h,
// i, e] * k[h, j, e]), i, j) over h heads of s positions and e features.
func scores(h, s, e int, body func(sum te.Expr, i, j te.Index) te.Expr) *te.Program {
	b := tb.New("scores")
	q, k := b.Input("q", h, s, e), b.Input("k", h, s, e)
	sc := b.Compute("sc", tb.Shape(h, s, s), func(ax []te.Index) te.Expr {
		sum := tb.Reduce(te.Sum, "e", e, func(x te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(q, ax[0], ax[1], x), tb.Ld(k, ax[0], ax[2], x))
		})
		return body(sum, ax[1], ax[2])
	})
	return b.Program(sc)
}

func causal(sum te.Expr, i, j te.Index) te.Expr {
	return tb.Sel(tb.Bin(te.Le, tb.Idx(j), tb.Idx(i)), sum, tb.F(-1e30))
}

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

// TestMaskedSchedule checks that causal attention's scores are a tiled
// contraction whose plan skips the tiles above the diagonal: about half
// of the work, exactly the tiles no output of which the select keeps.
func TestMaskedSchedule(t *testing.T) {
	const h, s, e = 12, 1024, 64
	masked := plan(t, scores(h, s, e, causal), "a100", Options{})
	plain := plan(t, scores(h, s, e, func(sum te.Expr, _, _ te.Index) te.Expr { return sum }), "a100", Options{})
	ms, ps := masked.stage(masked.Program.Lookup("sc")), plain.stage(plain.Program.Lookup("sc"))
	if ms.Kind != schedule.Contraction || ms.Mask == nil || ms.TileM != ps.TileM || ms.TileN != ps.TileN {
		t.Fatalf("masked: %s\nplain: %s", ms, ps)
	}
	per := s / ms.TileM
	if want := h * per * (per - 1) / 2; ms.Skipped != want {
		t.Errorf("skipped %d tiles, want the %d above the diagonal", ms.Skipped, want)
	}
	if r := float64(ms.FLOPs) / float64(ps.FLOPs); r < 0.5 || r > 0.56 {
		t.Errorf("masked FLOPs are %.3f of the plain ones, want about half", r)
	}
	out := masked.Program.Lookup("sc").Bytes() // written by every tile
	if r := float64(ms.Bytes-out) / float64(ps.Bytes-out); r < 0.5 || r > 0.56 {
		t.Errorf("masked tiles load %d B, %.3f of the plain ones' %d B; want about half", ms.Bytes-out, r, ps.Bytes-out)
	}
	_, _, mc := masked.Stats()
	_, _, pc := plain.Stats()
	if mt, pt := mc.Total(), pc.Total(); mt >= pt {
		t.Errorf("masked stage predicted %.3g s, not less than the plain %.3g s", mt, pt)
	}
	// Unfused (-O0 to -O2), a 16×16 tile.
	ms.Unfused(masked.Program.Lookup("sc").Bytes())
	per = s / 16
	if want := h * per * (per - 1) / 2; ms.TileM != 16 || ms.Skipped != want {
		t.Errorf("unfused: %s, want %d skipped", ms, want)
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
	d, ok := ContractionDims(y)
	if !ok || !d.Masked || d.M != 3*S || d.N != S || len(d.MAxes) != 2 {
		t.Fatalf("ContractionDims: %+v, %v", d, ok)
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

// decodeScores is a decode step's attention scores over a cache of t
// positions, masked by run-time positions: s[b, t] = select(t <= pos[b],
// sum[e](q[b, e] · k[b, t, e]), -1e30).
func decodeScores(batch, t, e int) *te.Program {
	b := tb.New("decode")
	pos := b.InputOf("pos", te.I32, batch)
	q, k := b.Input("q", batch, e), b.Input("k", batch, t, e)
	sc := b.Compute("sc", tb.Shape(batch, t), func(ax []te.Index) te.Expr {
		sum := tb.Reduce(te.Sum, "e", e, func(x te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(q, ax[0], x), tb.Ld(k, ax[0], ax[1], x))
		})
		return tb.Sel(tb.Bin(te.Le, tb.Idx(ax[1]), tb.Ld(pos, ax[0])), sum, tb.F(-1e30))
	})
	return b.Program(sc)
}

// TestRuntimeMask checks the mask of a contraction on run-time positions:
// it reads one scalar, is priced as skipping nothing without a context,
// and at Options.Context c as skipping the tiles of each row wholly past
// position c-1, with their products and factor loads left out.
func TestRuntimeMask(t *testing.T) {
	const batch, T, E = 4, 4096, 64
	for _, tt := range []struct{ context int }{{0}, {1}, {1024}, {1025}, {4096}} {
		pl := plan(t, decodeScores(batch, T, E), "h100", Options{Context: tt.context})
		s := pl.stage(pl.Program.Lookup("sc"))
		if s.Kind != schedule.Contraction || s.Mask == nil || len(s.Mask.Scalars) != 1 || s.Mask.Context != tt.context {
			t.Fatalf("context %d: %s; want a contraction masked by one run-time scalar", tt.context, s)
		}
		perRow := T / s.TileN
		live := perRow
		if tt.context > 0 {
			live = (tt.context + s.TileN - 1) / s.TileN
		}
		if want := batch * (perRow - live); s.Skipped != want {
			t.Errorf("context %d: %d tiles skipped, want %d (tiles of %d)", tt.context, s.Skipped, want, s.TileN)
		}
		if s.Skipped > 0 && (s.FLOPs >= s.UnmaskedFLOPs || s.Bytes >= s.UnmaskedBytes) {
			t.Errorf("context %d: FLOPs %d and bytes %d not below the unmasked %d and %d", tt.context, s.FLOPs, s.Bytes, s.UnmaskedFLOPs, s.UnmaskedBytes)
		}
		// The inputs (the cache, mostly) move from DRAM in the share of the
		// tiles that run; the scores are written whole.
		var in int64
		for _, x := range pl.Program.Placeholders() {
			in += x.Bytes()
		}
		want := pl.Program.Lookup("sc").Bytes() + in*int64(s.Tiles-s.Skipped)/int64(s.Tiles)
		if got := pl.Kernels[0].Cost.DRAM; got < want-16 || got > want+16 {
			t.Errorf("context %d: %d B from DRAM, want about %d", tt.context, got, want)
		}
	}
}

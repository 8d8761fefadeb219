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

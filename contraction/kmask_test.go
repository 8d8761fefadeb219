package contraction

import (
	"math"
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// TestLiveKChunks checks the pricing of a flash-decoding partial's k mask,
// o[b, c, e] = sum[j](p[b, c*S + j] * v[b, c*S + j, e]) with p masked past
// pos[b]: at context 5 of 4 chunks of 16, chunk 0 has 5 live j and the
// others none, 5/4 ≈ 1 on average, not the 5 of every chunk.
func TestLiveKChunks(t *testing.T) {
	const B, C, S, E = 2, 4, 16, 8
	b := tb.New("chunks")
	sc, v := b.Input("sc", B, C*S), b.Input("v", B, C*S, E)
	pos := b.InputOf("pos", te.I32, B)
	p := b.Compute("p", tb.Shape(B, C*S), func(ax []te.Index) te.Expr {
		return tb.Un(te.Exp, tb.Sel(tb.Bin(te.Le, tb.Idx(ax[1]), tb.Ld(pos, ax[0])), tb.Ld(sc, ax[0], ax[1]), tb.F(math.Inf(-1))))
	})
	o := b.Compute("o", tb.Shape(B, C, E), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "j", S, func(k te.Index) te.Expr {
			t := ax[1].Scale(S).Add(k)
			return tb.Bin(te.Mul, tb.Ld(p, ax[0], t), tb.Ld(v, ax[0], t, ax[2]))
		})
	})
	b.Program(o)
	d, ok := Of(o)
	if !ok {
		t.Fatal("o is not a contraction")
	}
	mk := KMaskOf(d)
	if mk == nil {
		t.Fatal("no k mask")
	}
	for _, tc := range []struct{ context, want int }{{0, S}, {5, 1}, {16, 4}, {40, 10}, {64, 16}} {
		mk.Context = tc.context
		if got := mk.LiveK(); got != tc.want {
			t.Errorf("LiveK at context %d = %d, want %d", tc.context, got, tc.want)
		}
	}
}
